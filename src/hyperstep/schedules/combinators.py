"""Combinators: ``warmup`` (a linear ramp in front of a schedule) and ``join`` (schedules
one after another, each seeing the step counted from its own boundary).

Children may be anything :func:`~hyperstep.schedules.as_schedule` accepts: a number, a
hyperstep schedule, a Keras ``LearningRateSchedule`` or an expression string.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.schedules._ops import WIDE, ops
from hyperstep.schedules.base import Schedule, ScheduleLike, check_number, register
from hyperstep.schedules.checks import check_boundaries, check_steps
from hyperstep.schedules.exact import rounded_once
from hyperstep.schedules.expressions import Constant, as_schedule


@register
class Warmup(Schedule):
    """A linear warmup from ``start`` to ``schedule(0)``, then ``schedule`` delayed by it.

    ``value(step) = start + (schedule(0) - start) * step / steps`` for ``step < steps``,
    else ``schedule(step - steps)``

    ``warmup(cosine(peak, steps=D, end=alpha * peak), steps=W, start=s0)`` is exactly
    Keras ``CosineDecay(s0, D, alpha, warmup_target=peak, warmup_steps=W)`` and optax
    ``warmup_cosine_decay_schedule(s0, peak, W, W + D, alpha * peak)``: the total length
    is ``W + D``.

    Args:
        schedule: The schedule that follows the warmup (any schedule-like value).
        steps: Length of the warmup, a positive number of steps.
        start: Value at step 0; default 0.0.

    Edge cases: ``start`` at step 0 (so the first update of a default warmup uses 0);
    ``schedule(0)`` exactly at ``steps``; ``schedule(k)`` at ``steps + k``.

    Example:
        >>> s = warmup(0.5, steps=10)
        >>> [round(float(v), 6) for v in s([0, 5, 10])]
        [0.0, 0.25, 0.5]
    """

    keyword = "warmup"
    positional = 1

    def __init__(self, schedule: ScheduleLike, steps: float, start: float = 0.0) -> None:
        self.schedule = as_schedule(schedule, name="schedule")
        self.steps = check_steps("warmup", "steps", steps)
        self.start = check_number("warmup", "start", start)

    @rounded_once
    def value(self, step: Any) -> Any:
        # One evaluation of the wrapped schedule (nested warmups stay linear): at step 0
        # (the peak) during the ramp, at ``step - steps`` after it -- never a negative step.
        # The wrapped schedule sees a float32 step, as if called itself.
        ramping = step < self.steps
        shifted = ops.cast(ops.where(ramping, 0.0, step - self.steps), "float32")
        inner = ops.cast(self.schedule.value(shifted), WIDE)
        ramp = self.start + (inner - self.start) * (step / self.steps)
        return ops.where(ramping, ramp, inner)

    @property
    def natural_steps(self) -> int | float | None:
        inner = 0 if isinstance(self.schedule, Constant) else self.schedule.natural_steps
        return None if inner is None else self.steps + inner


@register
class Join(Schedule):
    """Schedules one after another; each later one sees the step counted from its boundary.

    ``value(step) = schedules[k](step - boundaries[k - 1])`` where ``k`` is the number of
    boundaries ``<= step`` (``schedules[0](step)`` before the first boundary)

    The semantics of optax ``join_schedules``; torch ``SequentialLR`` does the same with
    closed-form schedulers.

    Args:
        schedules: Two or more schedule-like values.
        boundaries: Increasing, unique, non-negative steps, one fewer than ``schedules``.

    Edge cases: ``schedules[0](0)`` at step 0; ``schedules[k](0)`` exactly at boundary
    ``k - 1`` (the new schedule applies AT its boundary); the last schedule runs forever.

    Example:
        >>> from hyperstep.schedules import linear
        >>> s = join([linear(0.0, 1.0, steps=10), 1.0], [10])
        >>> [round(float(v), 6) for v in s([0, 5, 10])]
        [0.0, 0.5, 1.0]
    """

    keyword = "join"
    positional = 2

    def __init__(self, schedules: Sequence[ScheduleLike], boundaries: Sequence[float]) -> None:
        if isinstance(schedules, (str, bytes)) or not isinstance(schedules, (list, tuple)):
            raise InvalidTypeError(
                f"`join(schedules=...)` must be a list of schedules. "
                f"{received('schedules', schedules)}"
            )
        self.schedules = [
            as_schedule(s, name=f"schedules[{index}]") for index, s in enumerate(schedules)
        ]
        self.boundaries = check_boundaries("join", "boundaries", boundaries)
        if len(self.boundaries) != len(self.schedules) - 1:
            fix = (
                "Drop the last boundary or add a schedule."
                if len(self.boundaries) >= len(self.schedules)
                else "Add a boundary or drop a schedule."
            )
            raise InvalidArgumentError(
                f"`join(boundaries=...)` needs one boundary fewer than schedules. "
                f"Received: {len(self.schedules)} schedules and "
                f"boundaries={list(boundaries)}. {fix}"
            )

    def value(self, step: Any) -> Any:
        result = self.schedules[0].value(step)
        for boundary, schedule in zip(self.boundaries, self.schedules[1:], strict=True):
            boundary = boundary.value(step) if isinstance(boundary, Schedule) else boundary
            local = schedule.value(ops.maximum(step - boundary, 0.0))
            result = ops.where(step < boundary, result, local)
        return result

    @property
    def natural_steps(self) -> int | float | None:
        last = self.schedules[-1]
        inner = 0 if isinstance(last, Constant) else last.natural_steps
        if not self.boundaries:
            return inner
        return None if inner is None else self.boundaries[-1] + inner


warmup = Warmup
join = Join
