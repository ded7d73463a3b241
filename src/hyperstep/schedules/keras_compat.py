"""Keras schedules as hyperstep schedules: :func:`from_keras` and :class:`KerasSchedule`.

Each of Keras's six built-in schedules converts exactly (same value at every step, up to
float32 rounding) into the hyperstep vocabulary:

==============================================  ==========================================
Keras                                           hyperstep
==============================================  ==========================================
``ExponentialDecay(lr0, ds, rate, staircase)``  ``exponential(lr0, rate, every=ds,
                                                staircase)``
``PiecewiseConstantDecay(boundaries, values)``  ``piecewise(boundaries, values,
                                                inclusive=True)``
``PolynomialDecay(lr0, ds, end, power, cycle)``  ``polynomial(lr0, end, ds, power, cycle)``
``InverseTimeDecay(lr0, ds, rate, staircase)``  ``inverse_time(lr0, rate, every=ds,
                                                staircase)``
``CosineDecay(lr0, ds, alpha)``                 ``cosine(lr0, ds, end=alpha * lr0)``
``CosineDecay(lr0, ds, alpha, warmup_target=p,  ``warmup(cosine(p, ds, end=alpha * p),
warmup_steps=W)``                               steps=W, start=lr0)``
``CosineDecayRestarts(lr0, F, t_mul, m_mul,     ``cosine_restarts(lr0, F, t_mul, m_mul,
alpha)``                                        end=alpha * lr0)``
==============================================  ==========================================

Any other Keras ``LearningRateSchedule`` (including subclasses of the built-ins, which
may override ``__call__``) is wrapped in a :class:`KerasSchedule`.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from hyperstep.errors import InvalidTypeError, received
from hyperstep.schedules.base import Schedule, register
from hyperstep.schedules.combinators import Warmup
from hyperstep.schedules.families import (
    Cosine,
    CosineRestarts,
    Exponential,
    InverseTime,
    Piecewise,
    Polynomial,
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

    def arguments(self) -> dict[str, Any]:
        return {"schedule": self.schedule}

    def __repr__(self) -> str:
        cls = type(self.schedule)
        try:
            config = self.schedule.get_config()
            inner = ", ".join(f"{k}={v!r}" for k, v in config.items())
        except NotImplementedError:
            inner = "..."
        return f"keras_schedule({cls.__module__}.{cls.__qualname__}({inner}))"


def _number(value: Any) -> float:
    return float(ops.convert_to_numpy(value)) if not isinstance(value, (int, float)) else value


def from_keras(schedule: Any) -> Schedule:
    """Return a hyperstep schedule equal to a Keras ``LearningRateSchedule``.

    The six Keras built-ins convert exactly into the vocabulary (see the module table);
    a hyperstep schedule is returned unchanged; any other Keras schedule is wrapped in
    :class:`KerasSchedule`.

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
    c = schedule.get_config() if kind in _CONVERTERS else None
    if c is None:
        return KerasSchedule(schedule)
    return _CONVERTERS[kind](c)


def _cosine(c: dict[str, Any]) -> Schedule:
    lr0 = _number(c["initial_learning_rate"])
    alpha = _number(c["alpha"])
    if c.get("warmup_target") is None:
        return Cosine(lr0, c["decay_steps"], end=lr0 * alpha)
    target = _number(c["warmup_target"])
    decay = Cosine(target, c["decay_steps"], end=target * alpha)
    if not c.get("warmup_steps"):
        return decay
    return Warmup(decay, c["warmup_steps"], start=lr0)


_CONVERTERS: dict[type, Any] = {
    _K.ExponentialDecay: lambda c: Exponential(
        _number(c["initial_learning_rate"]),
        _number(c["decay_rate"]),
        c["decay_steps"],
        staircase=c["staircase"],
    ),
    _K.PiecewiseConstantDecay: lambda c: Piecewise(
        [_number(b) for b in c["boundaries"]],
        [_number(v) for v in c["values"]],
        inclusive=True,
    ),
    _K.PolynomialDecay: lambda c: Polynomial(
        _number(c["initial_learning_rate"]),
        _number(c["end_learning_rate"]),
        c["decay_steps"],
        power=_number(c["power"]),
        cycle=c["cycle"],
    ),
    _K.InverseTimeDecay: lambda c: InverseTime(
        _number(c["initial_learning_rate"]),
        _number(c["decay_rate"]),
        c["decay_steps"],
        staircase=c["staircase"],
    ),
    _K.CosineDecay: _cosine,
    _K.CosineDecayRestarts: lambda c: CosineRestarts(
        _number(c["initial_learning_rate"]),
        c["first_decay_steps"],
        t_mul=_number(c["t_mul"]),
        m_mul=_number(c["m_mul"]),
        end=_number(c["initial_learning_rate"]) * _number(c["alpha"]),
    ),
}
