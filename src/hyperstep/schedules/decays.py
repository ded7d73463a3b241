"""The decay families: linear, exponential, inverse_time and polynomial schedules of the step.

``linear = start + (end - start) * clip((step - begin) / steps, 0, 1)``,
``exponential = start * rate ** ((step - begin) / every)``,
``inverse_time = start / (1 + rate * step / every)`` and
``polynomial = end + (start - end) * (1 - s / steps) ** power``, each with the compat
arguments of the table in :mod:`hyperstep.schedules.families`.
"""

from __future__ import annotations

from typing import Any

from hyperstep.errors import InvalidArgumentError, received
from hyperstep.schedules._ops import ops
from hyperstep.schedules.base import Schedule, check_number, register
from hyperstep.schedules.checks import (
    check_factor,
    check_flag,
    check_keras_steps,
    check_positive,
    check_steps,
)
from hyperstep.schedules.exact import (
    as_float32,
    clipped,
    exact_ceil,
    exact_floor,
    exact_maximum,
    exact_minimum,
    power_of,
    rounded_once,
    widened,
)


@register
class Linear(Schedule):
    """Linear ramp from ``start`` to ``end`` over ``steps`` steps, then ``end``.

    ``value(step) = start + (end - start) * t, t = clip((step - begin) / steps, 0, 1)``

    Matches optax ``linear_schedule(start, end, steps, transition_begin=begin)`` and torch
    ``LinearLR`` (``linear(base * start_factor, base * end_factor, total_iters)``).

    Args:
        start: Value at step 0 (and until ``begin``).
        end: Value from ``begin + steps`` on.
        steps: Length of the ramp, a positive number of steps.
        begin: Step at which the ramp starts (optax ``transition_begin``); default 0.

    Edge cases: ``start`` at steps ``<= begin``; ``end`` at ``begin + steps`` and forever
    after (it never overshoots).

    Example:
        >>> s = linear(0.0, 1.0, steps=100)
        >>> [round(float(v), 6) for v in s([0, 50, 300])]
        [0.0, 0.5, 1.0]
    """

    keyword = "linear"
    positional = 2

    def __init__(self, start: float, end: float, steps: float, begin: float = 0) -> None:
        self.start = check_number("linear", "start", start)
        self.end = check_number("linear", "end", end)
        self.steps = check_steps("linear", "steps", steps)
        self.begin = check_steps("linear", "begin", begin, allow_zero=True)

    @rounded_once("steps", "begin")
    def value(self, step: Any) -> Any:
        s = clipped(step - self.begin, 0.0, self.steps)
        # both weights exact for integer steps: accurate at either end of the ramp
        return self.start * ((self.steps - s) / self.steps) + self.end * (s / self.steps)

    @property
    def natural_steps(self) -> int | float | None:
        return self.begin + self.steps


@register
class Exponential(Schedule):
    """Exponential decay: ``start`` multiplied by ``rate`` every ``every`` steps.

    ``value(step) = start * rate ** p, p = (step - begin) / every`` (``floor(p)`` with
    ``staircase``), ``start`` while ``step <= begin``, then bounded by ``end``.

    Matches Keras ``ExponentialDecay(start, every, rate, staircase)`` (``begin=0``,
    ``end=None``), optax ``exponential_decay(start, every, rate, transition_begin=begin,
    staircase, end_value=end)``, torch ``ExponentialLR(gamma)`` (``every=1``) and torch
    ``StepLR(step_size, gamma)`` (``every=step_size, staircase=True``).

    Args:
        start: Value at step 0.
        rate: Factor per ``every`` steps, a number > 0 (< 1 decays, > 1 grows).
        every: Steps per factor of ``rate``, a positive number.
        staircase: Apply the factor in whole steps (``floor(p)``); default False.
        begin: Step at which the decay starts (optax ``transition_begin``); default 0.
        end: Optional bound: a floor when ``rate < 1``, a ceiling when ``rate > 1``
            (optax ``end_value``); default None (no bound).

    Edge cases: ``start`` at step 0 (and at every step ``<= begin``); with staircase,
    ``start * rate ** k`` from step ``begin + k * every`` on, so the new value applies AT
    each boundary; no end of the decay, except the ``end`` bound.

    Example:
        >>> s = exponential(0.1, 0.5, every=10, staircase=True)
        >>> [round(float(v), 6) for v in s([0, 10, 25])]
        [0.1, 0.05, 0.025]
    """

    keyword = "exponential"
    positional = 2

    def __init__(
        self,
        start: float,
        rate: float,
        every: float,
        staircase: bool = False,
        begin: float = 0,
        end: float | None = None,
    ) -> None:
        self.start = check_number("exponential", "start", start)
        self.rate = check_factor("exponential", "rate", rate)
        self.every = check_steps("exponential", "every", every)
        self.staircase = check_flag("exponential", "staircase", staircase)
        self.begin = check_steps("exponential", "begin", begin, allow_zero=True)
        self.end = None if end is None else check_number("exponential", "end", end)

    @rounded_once("every", "begin")
    def value(self, step: Any) -> Any:
        t = step - self.begin
        p = t / self.every
        if self.staircase:
            p = exact_floor(p)
        v = ops.where(
            t <= 0, widened(self.start), self.start * power_of(self.rate, exact_maximum(p, 0.0))
        )
        if self.end is not None:
            v = exact_maximum(v, self.end) if self.rate < 1 else exact_minimum(v, self.end)
        return v


@register
class InverseTime(Schedule):
    """Inverse-time decay: ``start / (1 + rate * step / every)``.

    ``value(step) = start / (1 + rate * p), p = step / every`` (``floor(p)`` with
    ``staircase``)

    Matches Keras ``InverseTimeDecay(start, every, rate, staircase)``.

    Args:
        start: Value at step 0.
        rate: Decay rate, a number >= 0.
        every: Steps per unit of ``p``, a positive number.
        staircase: Use ``floor(step / every)``; default False.

    Edge cases: ``start`` at step 0; with staircase ``start / (1 + rate * k)`` from step
    ``k * every`` on (the new value applies AT the boundary); decays toward 0 forever.

    Example:
        >>> s = inverse_time(0.1, 0.5, every=10)
        >>> [round(float(v), 6) for v in s([0, 10, 20])]
        [0.1, 0.066667, 0.05]
    """

    keyword = "inverse_time"
    positional = 2

    def __init__(self, start: float, rate: float, every: float, staircase: bool = False) -> None:
        self.start = check_number("inverse_time", "start", start)
        self.rate = check_number("inverse_time", "rate", rate)
        if self.rate < 0:
            raise InvalidArgumentError(
                f"`inverse_time(rate=...)` must be a number >= 0. {received('rate', rate)}"
            )
        self.every = check_keras_steps("inverse_time", "every", every)
        self.staircase = check_flag("inverse_time", "staircase", staircase)

    def value(self, step: Any) -> Any:
        # Keras's float32 operations, on float32 constants (torch's `number / tensor` is a
        # reciprocal times the number, two roundings)
        p = step / as_float32(self.every)
        if self.staircase:
            p = ops.floor(p)
        return ops.divide(
            as_float32(self.start), ops.add(as_float32(1.0), ops.multiply(as_float32(self.rate), p))
        )


@register
class Polynomial(Schedule):
    """Polynomial decay from ``start`` to ``end`` over ``steps`` steps.

    ``value(step) = end + (start - end) * (1 - s / steps) ** power,
    s = clip(step - begin, 0, steps)``; with ``cycle``, ``s = step`` and ``steps`` becomes
    ``steps * max(ceil(step / steps), 1)`` (Keras's rule).

    Matches Keras ``PolynomialDecay(start, steps, end, power, cycle)``, optax
    ``polynomial_schedule(start, end, power, steps, transition_begin=begin)`` and torch
    ``PolynomialLR(total_iters, power)`` (``end=0``).

    Args:
        start: Value at step 0.
        end: Value from ``begin + steps`` on.
        steps: Length of the decay, a positive number of steps.
        power: Exponent, a number > 0; default 1.0 (linear).
        cycle: Keras's cycle rule instead of holding ``end``; default False.
        begin: Step at which the decay starts (optax ``transition_begin``); default 0.

    Edge cases: ``start`` at step 0; ``end`` at ``steps`` and after. With ``cycle`` the
    value at ``k * steps`` is ``end`` and one step later jumps back up, but not to
    ``start``: to ``end + (start - end) * (1 - (k * steps + 1) / ((k + 1) * steps)) ** power``.

    Example:
        >>> s = polynomial(0.1, 0.0, steps=100, power=2.0)
        >>> [round(float(v), 6) for v in s([0, 50, 300])]
        [0.1, 0.025, 0.0]
    """

    keyword = "polynomial"
    positional = 2

    def __init__(
        self,
        start: float,
        end: float,
        steps: float,
        power: float = 1.0,
        cycle: bool = False,
        begin: float = 0,
    ) -> None:
        self.start = check_number("polynomial", "start", start)
        self.end = check_number("polynomial", "end", end)
        self.steps = check_steps("polynomial", "steps", steps)
        self.power = check_positive("polynomial", "power", power)
        self.cycle = check_flag("polynomial", "cycle", cycle)
        self.begin = check_steps("polynomial", "begin", begin, allow_zero=True)

    @rounded_once("steps", "begin")
    def value(self, step: Any) -> Any:
        if self.cycle:
            s = exact_maximum(step - self.begin, 0.0)
            cycles = exact_ceil(s / self.steps)
            # a graph compiler may divide as s * (1 / steps), a hair above k at s = k * steps:
            # the exact product decides (float32 integers), so every context agrees
            cycles = ops.where(s <= (cycles - 1.0) * self.steps, cycles - 1.0, cycles)
            horizon = self.steps * exact_maximum(cycles, 1.0)
        else:
            s = clipped(step - self.begin, 0.0, self.steps)
            horizon = self.steps
        left = (horizon - s) / horizon
        if self.power != 1.0:
            left = ops.power(left, self.power)
        return self.end + (self.start - self.end) * left

    @property
    def natural_steps(self) -> int | float | None:
        return None if self.cycle else self.begin + self.steps


linear = Linear


exponential = Exponential


inverse_time = InverseTime


polynomial = Polynomial
