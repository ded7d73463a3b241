"""A :class:`~hyperstep.Hyperparameter`'s effective value: one formula over one state
(:class:`ValueState`), in each form a backend needs, side by side::

    value(step)       = override_at(step) if not nan else cooled(step) * scale
    override_at(step) = override if set (not nan)
                        else table[step - table_start] if armed and 0 <= step - table_start < N
                        else nan
    cooled(step)      = schedule(step) while dormant (cooldown_start < 0) or step < start,
                        else end + (schedule(start) - end) * f(min(step - start, steps) / steps)

- :func:`at`: ``keras.ops``, float32 (eager, in a traced step, on a vector of steps);
- :func:`exact_at`: float64 with constants exact (:func:`exact_value`), for Keras code that
  does arithmetic with Python numbers;
- :func:`host_value`: a Python float from numbers read on the host (eager torch);
- :func:`override_at`: the armed table, through which :class:`hyperstep.Remote` drives a
  replaced schedule into a step that runs several steps per call.

The cooldown is the one :class:`hyperstep.Cooldown` writes: ``f`` is its shape (one of
:data:`~hyperstep.schedules.wsd.DECAY_TYPES`, written once in
:func:`~hyperstep.schedules.wsd.cooled_value`), computed in float64 and rounded to float32
once, so that from its start it is bitwise the schedule word
``cooldown(schedule(start), start, steps, shape, end)`` on every read path. Its state is
made with the hyperparameter, before any step is traced: ``cooldown_start`` (-1 while
dormant) and ``cooldown_form`` (float32 ``[steps, end, shape index]``). In a traced
TensorFlow or JAX step an update's cooldown starts, scales and overrides cost one read each,
three reductions and one ``cond`` while none is steered (:func:`checked_once`); on eager
torch one host read each.
"""

from __future__ import annotations

import contextvars
import functools
import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
from keras import ops

from hyperstep.backends import concrete, float64_scope, host_int, read_once
from hyperstep.backends.fast_paths import branches_skip, lazy_where
from hyperstep.backends.keras_forms import scalar_tensor, with_tensor
from hyperstep.clock import Clock
from hyperstep.schedules.base import Schedule
from hyperstep.schedules.exact import exact_maximum, exact_minimum
from hyperstep.schedules.expressions import BinaryOp, Constant, Epoch, Function, Total
from hyperstep.schedules.keras_compat import KerasSchedule
from hyperstep.schedules.wsd import DECAY_TYPES, cooled_value

__all__ = [
    "ClockEpoch",
    "ValueState",
    "at",
    "checked_once",
    "constant_pieces",
    "cooled",
    "dormant",
    "exact_at",
    "exact_value",
    "form_of",
    "host_value",
    "host_values",
    "override_at",
]

#: the saved names of the cooldown's state (``state_<name>`` in ``tf.train.Checkpoint``)
#: and of the armed table (not saved: the Remote writes it from its journal)
START, FORM, TABLE, TABLE_START = "cooldown_start", "cooldown_form", "driven_table", "driven_start"


class ValueState(NamedTuple):
    """What a hyperparameter's value reads besides the step: the formula's state.

    :attr:`hyperstep.Hyperparameter.value_state` holds its variables (the schedule as
    given); every change at run time is an ``assign`` into them.

    Example:
        >>> import hyperstep as hs
        >>> state = hs.Hyperparameter(0.5, name="lr").value_state
        >>> float(at(state, 3)), state.table is None
        (0.5, True)
    """

    #: the schedule (an unbound ``epoch`` reads the hyperparameter's clock when evaluated)
    schedule: Schedule
    #: float32, multiplies the cooled schedule
    scale: Any
    #: float32, nan while no override is set
    override: Any
    #: an integer, -1 while the cooldown is dormant
    cooldown_start: Any
    #: float32 ``[steps, end, shape index]`` (:func:`form_of`)
    cooldown_form: Any
    #: armed (:meth:`hyperstep.Hyperparameter.arm`): float32 overrides from ``table_start``
    table: Any = None
    #: armed: an integer, the step of ``table[0]`` (-1: none)
    table_start: Any = None


# ---- the forms -------------------------------------------------------------------------------
def at(state: ValueState, step: Any) -> Any:
    """``override_at(step) if not nan else cooled(step) * scale`` with ``keras.ops``."""
    base = cooled(state, state.schedule(step), step)
    if _steering_deferred(state, base, "float32"):
        return base  # `base * 1`, unless checked_once's check finds it steered
    override = override_at(state, step)  # used twice: read once
    scaled = ops.multiply(base, state.scale.value)
    return ops.where(ops.isnan(override), scaled, override)


def exact_at(state: ValueState, step: Any) -> Any:
    """:func:`at` for a scalar step in float64, constants exact (:func:`exact_value`), so
    that Keras's ``1 - beta_1`` from it matches Python-float arithmetic bit for bit."""
    base = cooled(state, exact_value(state.schedule, step), step)
    if _steering_deferred(state, base, "float64"):
        return base  # `base * 1`, unless checked_once's check finds it steered
    override = override_at(state, step)  # used twice: read once
    scaled = ops.multiply(base, ops.cast(state.scale.value, "float64"))
    return ops.where(ops.isnan(override), scaled, ops.cast(override, "float64"))


def host_value(base: float, scale: float) -> float:
    """:func:`at` from Python numbers (no override, not armed, cooldown dormant): ``base``
    the schedule's value (a constant piece's Python number exact), ``scale`` multiplying in
    float32 (``float32(float32(base) * scale)``, the product :func:`at` computes) unless 1."""
    return base if scale == 1.0 else float(np.float32(np.float32(base) * np.float32(scale)))


def override_at(state: ValueState, step: Any) -> Any:
    """The override the value takes at ``step`` (a scalar or an array of steps), read once;
    nan: none (see the module docstring)."""
    override = read_once(state.override)
    if state.table is None:
        return override
    values = read_once(state.table)
    size = int(state.table.shape[0])
    index = ops.subtract(ops.cast(step, "int32"), ops.cast(state.table_start.value, "int32"))
    inside = ops.logical_and(ops.greater_equal(index, 0), ops.less(index, size))
    entry = ops.where(inside, ops.take(values, ops.clip(index, 0, size - 1)), math.nan)
    return ops.where(ops.isnan(override), entry, override)


def cooled(state: ValueState, base: Any, step: Any) -> Any:
    """``base`` (the schedule at ``step``, in its dtype) with the cooldown applied from its
    start; ``base`` itself while dormant."""
    start = state.cooldown_start
    known = dormant(start)
    if known:
        return base
    base = ops.convert_to_tensor(base)
    start_value = start.value

    def on() -> Any:
        return _cooling(start_value, state.cooldown_form, state.schedule, base, step)

    if known is not None:  # started, read eagerly
        return on()
    deferred = _DEFERRED.get() if branches_skip() else None  # (torch.compile: no ContextVar)
    if deferred is not None and "start" not in deferred:  # one started (checked_once)
        return on()
    if deferred is not None:  # checked with the update's others (checked_once)
        deferred["start"].append(start_value)
        return base
    return lazy_where(ops.greater_equal(start_value, 0), on, lambda: base)


#: while :func:`checked_once` computes an update's values: what it checks once, the traced
#: cooldowns' starts and (outside its steered branch) the scales and overrides
_DEFERRED: contextvars.ContextVar[dict[str, list[Any]] | None]
_DEFERRED = contextvars.ContextVar("deferred", default=None)


def _steering_deferred(state: ValueState, base: Any, dtype: str) -> bool:
    """Whether :func:`checked_once` checks ``state``'s scale and override (a traced step, not
    armed, ``base`` of the value's ``dtype``): then the value is ``base``, as if they were 1
    and nan."""
    deferred = _DEFERRED.get() if branches_skip() else None  # (torch.compile: no ContextVar)
    if deferred is None or "scale" not in deferred or state.table is not None:
        return False
    if concrete(state.scale.value) or ops.dtype(base) != dtype:
        return False
    deferred["scale"].append(read_once(state.scale))
    deferred["override"].append(read_once(state.override))
    return True


def checked_once(compute: Callable[[], Mapping[str, Any]], steered: bool = False) -> dict[str, Any]:
    """``compute()``, an update's values in the forms Keras gets, in a traced step computed as
    if nothing were steered (scale 1, no override, cooldown dormant) and checked by one
    ``cond`` for all of them rather than per value: where any is steered, computed again in
    that branch (``steered=True``), there the cooldowns checked once the same way: where one
    started, computed again with each cooldown's arithmetic inline, not
    behind a ``cond`` per value."""
    if not branches_skip():  # torch computes both branches: nothing to check once
        return dict(compute())
    checks: dict[str, list[Any]] = {"start": []}
    if not steered:
        checks.update(scale=[], override=[])
    values = _deferring(checks, compute)
    plain: list[Any] = []  # fewer ops than a check per value
    if checks["start"]:
        plain.append(ops.less(ops.max(ops.stack(checks["start"])), 0))
    if checks.get("scale"):
        plain.append(ops.all(ops.equal(ops.stack(checks["scale"]), 1.0)))
        plain.append(ops.all(ops.isnan(ops.stack(checks["override"]))))
    if not plain:  # eager, or nothing to check
        return values
    keys = list(values)
    # where a cooldown started: every value computed with its cooldown inline (`where(started,
    # cooled, base)`, the value cooled's cond gives), not behind a cond per value
    again = (lambda: _deferring({}, compute)) if steered else (lambda: checked_once(compute, True))
    flat = lazy_where(
        functools.reduce(ops.logical_and, plain),
        lambda: [scalar_tensor(values[key]) for key in keys],
        lambda: [scalar_tensor(value) for value in again().values()],
    )
    return {key: with_tensor(values[key], tensor) for key, tensor in zip(keys, flat, strict=True)}


def _deferring(checks: dict[str, list[Any]], compute: Callable[[], Mapping[str, Any]]) -> Any:
    """``dict(compute())`` with :data:`_DEFERRED` set to ``checks`` (``{}``: no check, each
    traced cooldown inline)."""
    token = _DEFERRED.set(checks)
    try:
        return dict(compute())
    finally:
        _DEFERRED.reset(token)


def _cooling(start: Any, form: Any, schedule: Schedule, base: Any, step: Any) -> Any:
    # computed in float64 (JAX without x64 too) and rounded to float32 once, as the
    # `cooldown` word is: the same bits eagerly and in a graph whose constant folding turns
    # the word's `x / steps` into a multiply
    step = ops.cast(ops.convert_to_tensor(step), "float32")
    s0 = ops.maximum(ops.cast(start, "float32"), 0.0)
    v0 = ops.cast(schedule(s0), "float32")
    with float64_scope():
        values = ops.cast(ops.convert_to_tensor(form.value), "float64")
        steps, end, shape = values[0], values[1], values[2]
        done = ops.cast(step, "float64") - ops.cast(s0, "float64")
        done = exact_minimum(exact_maximum(done, 0.0), steps)
        value = ops.zeros_like(done)
        for index, name in enumerate(DECAY_TYPES):  # the shape is a variable: select its value
            found = cooled_value(ops.cast(v0, "float64"), end, done, steps, name)
            value = ops.where(ops.equal(shape, float(index)), found, value)
        value = ops.cast(value, "float32")
    value = ops.cast(value, ops.dtype(base))
    started = ops.logical_and(ops.greater_equal(start, 0), ops.greater_equal(step, s0))
    return ops.where(started, value, base)


# ---- the state -------------------------------------------------------------------------------
def form_of(steps: float, end: float, shape: str) -> list[float]:
    """The ``cooldown_form`` of a cooldown (checked): ``[steps, end, index of shape]``."""
    return [float(steps), float(end), float(DECAY_TYPES.index(shape))]


def dormant(start: Any) -> bool | None:
    """Whether the cooldown whose start variable is ``start`` is not started, where that
    can be read on the host now (eagerly; ``None`` in a traced step)."""
    value = host_int(start)  # eager torch: cheap
    if value is not None:
        return value < 0
    if not concrete(start.value):
        return None
    # not through NumPy (its copy= warning on TF tensors); under tf.distribute the value is
    # a MirroredVariable, which int() takes only once read
    value = start.value
    read = getattr(value, "read_value", None)
    return int(read() if callable(read) else value) < 0


# ---- the schedule's exact and host values ----------------------------------------------------
def exact_value(schedule: Schedule, step: Any) -> Any:
    """``schedule(step)`` in float64, its constants exact where they reach the value whole.

    ``exact(c) = float64(c)``; ``exact(where(cond, a, b)) = where(cond != 0, exact(a),
    exact(b))``; ``exact(a * c) = exact(a) * float64(c)`` for a constant ``c`` on the right
    (the form of ``scale``); else ``float64(schedule(step))`` (its float32 value). So the
    pieces :func:`hyperstep.Remote.replay` joins with ``where`` (a constant, a schedule
    times its scale) give the float64 numbers the controlled run handed Keras. A constant on
    the left (``c * a``) is a float32 product, rounded once.

    Example:
        >>> from hyperstep.schedules.language import parse
        >>> [float(exact_value(parse("where(step < 5, 0.9, 0.8)"), s)) for s in (0.0, 5.0)]
        [0.9, 0.8]
    """
    if isinstance(schedule, Constant):
        return ops.convert_to_tensor(schedule.value_, dtype="float64")
    if isinstance(schedule, Function) and schedule.name == "where" and schedule._fold is None:
        condition, when, otherwise = schedule.args
        return ops.where(
            ops.not_equal(condition(step), 0),
            exact_value(when, step),
            exact_value(otherwise, step),
        )
    if (
        isinstance(schedule, BinaryOp)
        and schedule.op == "*"
        and schedule._fold is None
        and isinstance(schedule.right, Constant)
    ):
        factor = ops.convert_to_tensor(schedule.right.value_, dtype="float64")
        return ops.multiply(exact_value(schedule.left, step), factor)
    return ops.cast(schedule(step), "float64")


def constant_pieces(schedule: Schedule) -> tuple[float, ...]:
    """The constants ``schedule`` takes whole, in the order its ``where``s are written:
    itself if a constant, each constant branch of a ``where`` (:func:`exact_value`'s rule).

    On JAX their arithmetic with Python numbers rounds as their Python floats' does while the
    value is one of them (:class:`hyperstep.backends.static.StaticScalar`); on eager torch the
    host table gives their Python numbers (:func:`host_values`).

    Example:
        >>> from hyperstep.schedules.language import parse
        >>> constant_pieces(parse("where(step < 5, 0.9, where(step < 9, 0.8 * step, 0.7))"))
        (0.9, 0.7)
    """
    if isinstance(schedule, Constant):
        return (float(schedule.value_),)
    if isinstance(schedule, Function) and schedule.name == "where" and schedule._fold is None:
        _, when, otherwise = schedule.args
        return constant_pieces(when) + constant_pieces(otherwise)
    return ()


def host_values(schedule: Schedule, steps: Any) -> Any:
    """``schedule`` at the float32 vector ``steps`` as a float64 NumPy array: its float32
    values, and the Python number of each constant piece (:func:`constant_pieces`) where
    the value is that piece; ``None`` where the values are not a float32 vector of the
    steps' shape (a wrapped Keras schedule)."""
    if isinstance(schedule, Constant):
        return np.full(steps.shape, float(schedule.value_))
    if wraps_keras(schedule):  # a Keras schedule may refuse a vector of steps
        return None
    if isinstance(schedule, Function) and schedule.name == "where" and schedule._fold is None:
        condition, when, otherwise = schedule.args
        chosen = np.asarray(ops.convert_to_numpy(condition(steps)))
        first, second = host_values(when, steps), host_values(otherwise, steps)
        if first is None or second is None or chosen.shape != steps.shape:
            return None
        return np.where(chosen != 0, first, second)
    values = ops.convert_to_numpy(schedule(steps))
    if values.dtype != np.float32 or values.shape != steps.shape:
        return None
    return values.astype("float64")


def wraps_keras(schedule: Schedule) -> bool:
    """Whether ``schedule`` holds a wrapped Keras schedule (:class:`KerasSchedule`)."""
    return isinstance(schedule, KerasSchedule) or any(map(wraps_keras, schedule.children()))


class ClockEpoch(Schedule):
    """``epoch`` read from a clock: ``value(step) = clock.epoch_at(step)`` (fit's epoch
    inside ``fit``). Built by :class:`Hyperparameter` for evaluation only; it shows and
    saves as the unbound ``epoch`` it replaces."""

    keyword = "epoch"

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def value(self, step: Any) -> Any:
        return self.clock.epoch_at(step)

    def arguments(self) -> dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        return "epoch"


def read_clock(schedule: Schedule, clock: Clock) -> Schedule:
    """``schedule`` with each unbound ``epoch`` read from ``clock`` (:class:`ClockEpoch`) and
    each ``total`` from ``clock.total``."""

    def replace(node: Schedule) -> Schedule | None:
        if isinstance(node, Total):  # the run's length: clock.total
            return Total(clock)
        if isinstance(node, Epoch) and node.steps_per_epoch is None:
            return ClockEpoch(clock)
        return None

    return schedule.replace(replace)
