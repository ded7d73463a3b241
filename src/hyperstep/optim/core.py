"""What ``hs.scheduled`` and ``hs.StepOptimizer`` share: one definition of each step of an
update's life around the optimizer's own arithmetic.

* :func:`schedule_of`: a value given for a hyperparameter, as a schedule (a Keras
  ``LearningRateSchedule`` keeps its own code);
* :func:`assign_attribute`: ``opt.<name> = value`` as Keras's callbacks do it (a schedule
  replaces the hyperparameter's schedule, a number rescales it);
* :func:`advance_after_update`: the clock's advance after an applied update, counting
  applied updates under gradient accumulation.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from hyperstep.control.hyperparameter import Hyperparameter
from hyperstep.errors import InvalidTypeError, received
from hyperstep.schedules.base import Schedule, as_schedule
from hyperstep.schedules.keras_compat import KerasSchedule


def keras_callable(value: Any) -> bool:
    """Whether Keras would call ``value`` for a learning rate (a callable, not a schedule).

    Example:
        >>> keras_callable(lambda: 0.1), keras_callable(0.1)
        (True, False)
    """
    return (
        callable(value)
        and not isinstance(value, keras.optimizers.schedules.LearningRateSchedule)
        and not isinstance(value, keras.Variable)
    )


def schedule_of(value: Any, name: str) -> Schedule:
    """``value`` as a schedule; a Keras ``LearningRateSchedule`` keeps its own code
    (:class:`~hyperstep.schedules.keras_compat.KerasSchedule`): convert it with
    ``hs.schedules.from_keras`` for hyperstep's equivalent.

    Example:
        >>> schedule_of(keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5), "lr")
        keras_schedule(...ExponentialDecay(...))
    """
    if isinstance(value, keras.optimizers.schedules.LearningRateSchedule) and not isinstance(
        value, Schedule
    ):
        return KerasSchedule(value)
    return as_schedule(value, name=name)


def assign_attribute(hyperparameter: Hyperparameter, name: str, value: Any) -> None:
    """``opt.<name> = value``, as Keras's ``ReduceLROnPlateau`` and ``LearningRateScheduler``
    write it: a schedule (hyperstep's, Keras's or an expression string) replaces the
    hyperparameter's schedule and clears its override; a number (or tensor) rescales it,
    ``scale *= value / current`` (:meth:`Hyperparameter.assign`: the schedule keeps running).

    Raises:
        TypeError: For a callable (accepted only by the wrapped optimizer's constructor); the
            message names ``Hyperparameter.set``.
    """
    if isinstance(value, (str, keras.optimizers.schedules.LearningRateSchedule)):
        hyperparameter.schedule = schedule_of(value, name)
        hyperparameter.clear()
    elif keras_callable(value):
        raise InvalidTypeError(
            f"`{name}` of a hyperstep optimizer takes a number or a schedule; a callable is "
            "read only when given to the wrapped optimizer before wrapping "
            "(`hs.scheduled(keras.optimizers.SGD(learning_rate=fn))`). For a value fixed "
            f"from now on, use `opt.hyperparameters[{name!r}].set(x)` "
            f"(`Hyperparameter.set`). {received(name, value)}"
        )
    else:
        hyperparameter.assign(value)


def advance_after_update(optimizer: Any, clock: Any) -> None:
    """Advance ``clock`` once for an update ``optimizer`` just applied: with gradient
    accumulation only when the accumulated update was applied (the clock counts updates,
    not micro-steps)."""
    steps = optimizer.gradient_accumulation_steps
    if steps:
        applied = ops.equal(ops.mod(optimizer._iterations.value, steps), 0)
        clock.step.assign_add(ops.cast(applied, clock.step.dtype))
    else:
        clock.advance()
