"""Keras schedules as hyperstep schedules: :func:`from_keras` converts Keras's six built-ins
bitwise (:data:`_CONVERTERS`, one row each) and wraps any other in :class:`KerasSchedule`.
"""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
from keras import ops

from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.schedules.base import READERS, Schedule, register
from hyperstep.schedules.families import InverseTime, Piecewise
from hyperstep.schedules.keras_formulas import (
    CosineDecay,
    CosineDecayRestarts,
    ExponentialDecay,
    PolynomialDecay,
)

_K = keras.optimizers.schedules


@register
class KerasSchedule(Schedule):
    """Any Keras ``LearningRateSchedule``, usable wherever a hyperstep schedule is.

    ``value(step) = float32(schedule(step))``

    The wrapped schedule is called with a float32 step tensor; whether it accepts a
    vector of steps is up to it. Its config nests Keras serialization, so it round-trips
    if the wrapped class is registered with Keras. Its ``repr`` names the wrapped class
    and its config honestly, but ``hs.parse`` cannot read it back: the expression
    language has no Keras objects. Save it with ``get_config`` or ``keras.saving``.

    Args:
        schedule: A Keras ``LearningRateSchedule`` that is not a hyperstep schedule.

    Edge cases: whatever the wrapped schedule does.

    Example:
        >>> import keras
        >>> class Halving(keras.optimizers.schedules.LearningRateSchedule):
        ...     def __call__(self, step):
        ...         return 0.5 ** (step // 10)
        >>> s = KerasSchedule(Halving())
        >>> [float(v) for v in s([0, 10, 25])]
        [1.0, 0.5, 0.25]
    """

    keyword = "keras_schedule"
    positional = 1

    def __init__(self, schedule: Any) -> None:
        if isinstance(schedule, Schedule) or not isinstance(schedule, _K.LearningRateSchedule):
            raise InvalidTypeError(
                "`KerasSchedule(schedule=...)` must be a Keras LearningRateSchedule that is "
                "not already a hyperstep schedule (use `hs.schedules.from_keras`, which "
                f"passes hyperstep schedules through). {received('schedule', schedule)}"
            )
        self.schedule = schedule

    def value(self, step: Any) -> Any:
        return ops.cast(self.schedule(step), "float32")

    def __repr__(self) -> str:
        cls = type(self.schedule)
        try:
            config = self.schedule.get_config()
            inner = ", ".join(f"{k}={v!r}" for k, v in config.items())
        except NotImplementedError:
            inner = "..."
        return f"keras_schedule({cls.__module__}.{cls.__qualname__}({inner}))"


def from_keras(schedule: Any) -> Schedule:
    """Return a hyperstep schedule equal to a Keras ``LearningRateSchedule``.

    The six Keras built-ins convert into hyperstep schedules bitwise equal to Keras's
    own float32 values (see the module); a hyperstep schedule is returned unchanged;
    any other Keras schedule is wrapped in :class:`KerasSchedule`.

    Args:
        schedule: A Keras ``LearningRateSchedule`` or a hyperstep schedule.

    Returns:
        A :class:`~hyperstep.schedules.Schedule`.

    Raises:
        TypeError: If ``schedule`` is not a Keras or hyperstep schedule.

    Example:
        >>> import keras
        >>> k = keras.optimizers.schedules.PiecewiseConstantDecay([10], [1.0, 0.5])
        >>> s = from_keras(k)
        >>> s
        piecewise([10], [1.0, 0.5], inclusive=True)
        >>> [float(v) for v in s([9, 10, 11])]
        [1.0, 1.0, 0.5]
    """
    if isinstance(schedule, Schedule):
        return schedule
    if not isinstance(schedule, _K.LearningRateSchedule):
        raise InvalidTypeError(
            "`from_keras(schedule=...)` must be a Keras LearningRateSchedule or a hyperstep "
            f"schedule. {received('schedule', schedule)}"
        )
    kind = type(schedule)
    if kind not in _CONVERTERS:
        return KerasSchedule(schedule)
    c = {key: value for key, value in schedule.get_config().items() if key != "name"}
    rate = c.get("initial_learning_rate", c.get("values", [0.0])[0])
    # Keras keeps the dtype of the initial rate: float32 from a Python float (or a
    # np.float32); another (a Python int: int32) is computed by Keras's own code
    if not (type(rate) is float or isinstance(rate, np.float32)):
        return KerasSchedule(schedule)
    try:
        return _CONVERTERS[kind](**c)
    except (InvalidArgumentError, InvalidTypeError):
        # arguments hyperstep refuses (beyond float32, zero decay steps): Keras's own code
        return KerasSchedule(schedule)


def _piecewise(boundaries: list[Any], values: list[Any]) -> Schedule:
    # Keras sums indicator * value from 0.0: a value of -0.0 comes out as +0.0
    values = [float(v) + 0.0 for v in values]
    return Piecewise([float(b) for b in boundaries], values, inclusive=True)


#: Keras's class -> the hyperstep schedule of its config (the same argument names)
_CONVERTERS: dict[type, Any] = {
    _K.ExponentialDecay: ExponentialDecay,
    _K.PiecewiseConstantDecay: _piecewise,
    _K.PolynomialDecay: PolynomialDecay,
    _K.InverseTimeDecay: lambda initial_learning_rate, decay_steps, decay_rate, staircase: (
        InverseTime(initial_learning_rate, decay_rate, decay_steps, staircase)
    ),
    _K.CosineDecay: CosineDecay,
    _K.CosineDecayRestarts: CosineDecayRestarts,
}


#: ``as_schedule(keras_schedule)`` converts it
READERS.append((_K.LearningRateSchedule, from_keras))
