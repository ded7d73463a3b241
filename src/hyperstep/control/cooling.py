"""The cooldown every :class:`~hyperstep.Hyperparameter` carries, dormant until started.

``base(step) = schedule(step)`` while ``start < 0`` (dormant) or ``step < start``, else
``end + (schedule(start) - end) * f(min(step - start, steps) / steps)`` with ``f`` the shape's
decay factor (:func:`hyperstep.schedules.wsd.decay_factor`), computed in float64 and rounded
to float32 once: from ``start`` on, bitwise the schedule word
``cooldown(schedule(start), start, steps, shape, end)``
(:class:`hyperstep.schedules.wsd.Cooldown`) on every read path. The state is two variables made
with the hyperparameter, before any step is traced: ``cooldown_start`` (an integer, -1 while
dormant) and ``cooldown_form`` (float32 ``[steps, end, shape]``, the shape as its index in
:data:`~hyperstep.schedules.wsd.DECAY_TYPES`). A :class:`hyperstep.Cooldown` created at any
time only assigns them, so a step traced before it follows it, and a loaded hyperparameter
honors a saved cooldown with no ``Cooldown`` object built again.

A dormant cooldown costs one comparison and one ``cond`` in a traced TensorFlow or JAX step
(on TensorFlow kept one functional ``If`` op, so the arithmetic in the branch not taken is
never scheduled: :func:`hyperstep.backends.fast_paths.functional_cond`) and one host read on
eager torch.
"""

from __future__ import annotations

from typing import Any

from keras import ops

from hyperstep.backends import concrete, host_int, wide_float_dtype
from hyperstep.backends.fast_paths import lazy_where
from hyperstep.schedules.base import Schedule
from hyperstep.schedules.checks import check_choice
from hyperstep.schedules.exact import exact_maximum, exact_minimum
from hyperstep.schedules.wsd import DECAY_TYPES, cooled_value

__all__ = ["FORM", "START", "cooled", "dormant", "form_of"]

#: the names of the two state variables (each hyperparameter's ``state_<name>`` in
#: ``tf.train.Checkpoint``; ``cooldown_start`` is the name ``hs.Cooldown`` always used)
START, FORM = "cooldown_start", "cooldown_form"


def form_of(steps: float, end: float, shape: str) -> list[float]:
    """The ``cooldown_form`` value of a cooldown: ``[steps, end, index of shape]``."""
    shape = check_choice("Cooldown", "shape", shape, DECAY_TYPES)
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


def cooled(start: Any, form: Any, schedule: Schedule, base: Any, step: Any) -> Any:
    """``base`` (``schedule``'s values at ``step``) with the cooldown applied from its start
    (see the module docstring); ``base`` itself while dormant."""
    known = dormant(start)
    if known:
        return base
    base = ops.convert_to_tensor(base)
    start_value = start.value

    def on() -> Any:
        return _cooled(start_value, form, schedule, base, step)

    if known is not None:  # started, read eagerly
        return on()
    return lazy_where(ops.greater_equal(start_value, 0), on, lambda: base)


def _cooled(start: Any, form: Any, schedule: Schedule, base: Any, step: Any) -> Any:
    # computed wide (float64; float32 on JAX without x64) and rounded to float32 once, as
    # the `cooldown` word is (hyperstep.schedules.wsd.Cooldown): the same bits eagerly and
    # in a graph whose constant folding turns the word's `x / steps` into a multiply
    wide = wide_float_dtype()
    values = ops.cast(ops.convert_to_tensor(form.value), wide)
    steps, end, shape = values[0], values[1], values[2]
    step = ops.cast(ops.convert_to_tensor(step), "float32")
    s0 = ops.maximum(ops.cast(start, "float32"), 0.0)
    v0 = ops.cast(ops.cast(schedule(s0), "float32"), wide)
    done = exact_minimum(exact_maximum(ops.cast(step, wide) - ops.cast(s0, wide), 0.0), steps)
    value = ops.zeros_like(done)
    for index, name in enumerate(DECAY_TYPES):  # the shape is a variable: select its value
        found = cooled_value(v0, end, done, steps, name)
        value = ops.where(ops.equal(shape, float(index)), found, value)
    value = ops.cast(ops.cast(value, "float32"), ops.dtype(base))
    started = ops.logical_and(ops.greater_equal(start, 0), ops.greater_equal(step, s0))
    return ops.where(started, value, base)
