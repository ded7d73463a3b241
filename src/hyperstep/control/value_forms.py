"""A :class:`~hyperstep.Hyperparameter`'s value in the forms the backends need, beside
:meth:`~hyperstep.Hyperparameter.at`: ``host_float(step)`` (a Python float on the host, from a
table of the schedule's float32 values) for eager torch, ``exact_at(step)`` (float64, constants
exact) for Keras code that does arithmetic with Python numbers, the schedule with ``epoch`` read
from the clock (``ClockEpoch``), and the check that a jitted JAX read sees its variables.

``effective value = override if set (not nan) else schedule(step) * scale`` in every form.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from keras import ops

from hyperstep.backends import raw, unmapped_in_jit
from hyperstep.clock import Clock
from hyperstep.control.relative import references
from hyperstep.errors import FrozenValueError
from hyperstep.schedules.base import Schedule
from hyperstep.schedules.expressions import BinaryOp, Constant, Epoch, Function, Total

__all__ = ["ClockEpoch", "ValueForms", "constant_pieces", "exact_value", "host_values"]

#: steps per table of schedule values kept by :meth:`ValueForms.host_float`
_TABLE_STEPS = 1024


class ValueForms:
    """Mixin of :class:`~hyperstep.Hyperparameter`: its value's host, exact and clocked
    forms (see the module docstring). Reads the hyperparameter's ``scale``, ``override``,
    ``clock``, ``_cooldown`` and schedule state."""

    _uses_epoch: bool
    _uses_total: bool
    _raw_schedule: Schedule
    _clocked_schedule: Any
    _relative: tuple[Any, bool]
    _table: Any
    _cooldown: Any
    clock: Clock
    scale: Any
    override: Any
    name: str

    cooldown_start: Any

    def _clock_variables(self) -> list[Any]:
        raise NotImplementedError

    def _step_state(self) -> list[Any]:
        raise NotImplementedError

    def _armed_variables(self) -> list[Any]:
        raise NotImplementedError

    def override_at(self, step: Any) -> Any:
        raise NotImplementedError

    def _cooled(self, schedule: Schedule, base: Any, step: Any) -> Any:
        raise NotImplementedError

    @property
    def _clocked(self) -> Schedule:
        """The schedule this hyperparameter evaluates: each unbound ``epoch`` read from the
        clock (:meth:`hyperstep.Clock.epoch_at`: fit's epoch inside ``fit``)."""
        if not self._uses_epoch and not self._uses_total:
            return self._raw_schedule
        found = self._clocked_schedule
        if found is None or found[0] is not self._raw_schedule or found[1] is not self.clock:
            clock = self.clock

            def read_clock(node: Schedule) -> Schedule | None:
                if isinstance(node, Total):  # the run's length: clock.total
                    return Total(clock)
                return (
                    ClockEpoch(clock)
                    if isinstance(node, Epoch) and node.steps_per_epoch is None
                    else None
                )

            found = (self._raw_schedule, clock, self._raw_schedule.replace(read_clock))
            self._clocked_schedule = found
        return found[2]

    def _check_mapped(self) -> None:
        unmapped = unmapped_in_jit(
            [*self._clock_variables(), *self._step_state(), *self._armed_variables()]
        )
        if not unmapped:
            return
        names = ", ".join(v.path for v in unmapped)
        raise FrozenValueError(
            f"Hyperparameter {self.name!r} is read inside `jax.jit`, but its variables "
            f"({names}) are not in the stateless state being traced: the compiled step "
            "would keep the values they had when it was traced. Read it where Keras maps "
            "them: in a layer's `call` under `model.stateless_call(trainable, non_trainable, "
            "...)` (assign the hyperparameter to the layer in `__init__`; its variables are "
            "then in `model.non_trainable_variables`), inside an `hs.scheduled` optimizer's "
            "`stateless_apply`, or within `keras.StatelessScope(state_mapping=list(zip("
            "variables, values)))` where `variables` includes `hp.variables`. Or read "
            "`float(hp.value)` outside the jitted function and pass it in as an argument."
        )

    def host_float(self, step: int) -> float | None:
        """The effective value at integer ``step`` as a Python float, computed on the host.

        ``override if is_set else schedule(step) * scale`` with the state read as Python
        numbers and the schedule looked up in a table of its float32 values for
        ``_TABLE_STEPS`` steps from ``step`` (one vectorized evaluation, refilled when the step
        leaves it); a constant schedule gives its Python number exactly, and so does a
        constant piece of a ``where`` where the schedule is that piece (:func:`host_values`),
        as :meth:`exact_at` does: so a replayed constant, ``where(step < 100, 0.9, ...)``,
        gives Keras the Python number ``0.9`` the controlled run gave. A ``scale`` other
        than 1 multiplies in float32 (``float32(float32(base) * scale)``), so the number is
        :meth:`at`'s (to the last bit for elementwise schedule arithmetic; a vectorized
        ``pow`` may round one bit differently from a scalar one), which a replayed
        ``schedule * scale`` (:func:`hyperstep.Remote.replay`) gives again. ``None`` for a
        schedule whose vectorized value is not a float32 vector (a wrapped Keras schedule) or
        that names another hyperparameter (``"10 * learning_rate"``). Used by
        ``hs.scheduled`` on eager torch (where each tensor op costs Python time; see
        docs/backends.md). Reads the variables' own tensors (``backends.raw``), so only
        eagerly and outside ``keras.StatelessScope``: not for graphs, ``torch.compile`` or
        stateless calls.
        """
        override = float(raw(self.override))
        if override == override:  # not nan: an override is set
            return override
        if int(raw(self.cooldown_start)) >= 0:
            return None  # a started cooldown: the general path reads its variable
        schedule = self._clocked
        if self._relative[0] is not schedule:
            self._relative = (schedule, bool(references(schedule)))
        if self._relative[1]:  # "10 * learning_rate": reads another's state
            return None
        if isinstance(schedule, Constant):
            base = float(schedule.value_)
        else:
            table = self._table
            epochs = self._epoch_key()  # the table holds one placement of fit's epochs
            if (
                table is None
                or table[0] is not schedule
                or table[3] != epochs
                or not 0 <= step - table[1] < _TABLE_STEPS
            ):
                steps = np.arange(step, step + _TABLE_STEPS, dtype="float32")
                values = host_values(schedule, steps)  # a constant piece's exact number
                if values is None:
                    return None
                table = self._table = (schedule, step, values.tolist(), epochs)
            base = table[2][step - table[1]]
        scale = float(raw(self.scale))
        # scaled: float32(base * scale), the float32 product `at` computes (and a replayed
        # `schedule * scale` gives); unscaled, a constant's Python number stays exact
        return base if scale == 1.0 else float(np.float32(np.float32(base) * np.float32(scale)))

    def exact_at(self, step: Any) -> Any:
        """Like :meth:`at` for a scalar step, in float64, with constants kept exact.

        ``Constant(0.9)`` gives float64 ``0.9`` (not float32 ``0.9`` widened), so a Keras
        optimizer that computes ``1 - beta_1`` from it matches Python-float arithmetic bit
        for bit; so does each branch of a ``where`` and a product by a constant (as ``scale``
        multiplies): :func:`exact_value`. Used by ``hs.scheduled`` on the TensorFlow backend.
        """
        schedule = self._clocked
        base = self._cooled(schedule, exact_value(schedule, step), step)
        override = self.override_at(step)  # used twice: read once
        scaled = ops.multiply(base, ops.cast(self.scale.value, "float64"))
        return ops.where(ops.isnan(override), scaled, ops.cast(override, "float64"))

    def _epoch_key(self) -> tuple[Any, ...] | None:
        """Where fit's current epoch sits on the clock, as Python numbers (host tables)."""
        if not self._uses_epoch and not self._uses_total:
            return None
        clock = self.clock
        return (
            clock.steps_per_epoch,
            clock.follows_fit,
            *(int(raw(v)) for v in [*clock.epoch_variables, clock.total_steps]),  # eager torch
        )


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
    host table gives their Python numbers (:meth:`ValueForms.host_float`).

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
