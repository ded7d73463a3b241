"""The schedule families (linear, exponential, inverse_time, polynomial, cosine,
cosine_restarts, piecewise, cyclic, one_cycle), and the rule every family follows.

Each is a pure function of the step written with ``keras.ops`` in float32. Where Keras,
optax and torch disagree on an edge case, the family has ONE documented default and a
compat argument that reproduces each peer exactly:

=================  ===================================  ===================================
edge case          default                              compat argument
=================  ===================================  ===================================
piecewise value    new value applies AT the boundary    ``inclusive=True``: Keras (one step
at a boundary      (optax, torch ``MultiStepLR``)       late)
cosine past end    holds ``end`` (Keras, optax)         ``past_end="periodic"``: torch
                                                        ``CosineAnnealingLR``
exponential start  decays from step 0, no floor         ``begin=``, ``end=``: optax
                                                        ``transition_begin``/``end_value``
one_cycle peak     at ``pct_start * steps - 1`` (torch) ``compat="optax"``: one step later
polynomial cycle   off (clamped at ``end``)             ``cycle=True``: Keras's rule
=================  ===================================  ===================================

Fractions such as ``1 - step / steps`` are computed as ``(steps - step) / steps``, exact
for integer steps, and ``(1 + cos(pi * t)) / 2`` as ``sin(pi / 2 * (1 - t)) ** 2``, so
values stay accurate to float32 rounding right up to the end of a decay.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from hyperstep.errors import InvalidArgumentError, received
from hyperstep.schedules._ops import ops
from hyperstep.schedules.base import Schedule, check_number, register
from hyperstep.schedules.checks import (
    check_boundaries,
    check_choice,
    check_factor,
    check_flag,
    check_keras_steps,
    check_numbers,
    check_positive,
    check_steps,
    float32,
)
from hyperstep.schedules.exact import (
    as_float32,
    clipped,
    cosine_weight,
    exact_ceil,
    exact_floor,
    exact_maximum,
    exact_minimum,
    power_of,
    rounded_once,
    widened,
)
from hyperstep.schedules.expressions import Epoch, Function


@register
class Cosine(Schedule):
    """Cosine decay from ``start`` to ``end`` over ``steps`` steps.

    ``value(step) = end + (start - end) * ((1 + cos(pi * t)) / 2) ** exponent,
    t = min(step / steps, 1)`` (``t = step / steps`` with ``past_end="periodic"``)

    Matches Keras ``CosineDecay(start, steps, alpha)`` (``end = alpha * start``), optax
    ``cosine_decay_schedule(start, steps, alpha, exponent)`` and, with
    ``past_end="periodic"``, torch ``CosineAnnealingLR(T_max=steps, eta_min=end)``.

    Args:
        start: Value at step 0.
        steps: Length of the decay, a positive number of steps.
        end: Value at ``steps``; default 0.0 (Keras's ``alpha`` is ``end / start``).
        exponent: Power of the cosine factor (optax); default 1.0.
        past_end: ``"hold"`` keeps ``end`` after ``steps`` (Keras, optax; the default);
            ``"periodic"`` continues the cosine (torch): back to ``start`` at ``2 * steps``.

    Edge cases: ``start`` at step 0, ``(start + end) / 2`` at ``steps / 2`` (exponent 1),
    ``end`` at ``steps``; after it ``end`` (``"hold"``) or the mirrored curve.

    Example:
        >>> s = cosine(1.0, steps=100, end=0.1)
        >>> [round(float(v), 6) for v in s([0, 50, 300])]
        [1.0, 0.55, 0.1]
    """

    keyword = "cosine"
    positional = 1

    def __init__(
        self,
        start: float,
        steps: float,
        end: float = 0.0,
        exponent: float = 1.0,
        past_end: str = "hold",
    ) -> None:
        self.start = check_number("cosine", "start", start)
        self.steps = check_steps("cosine", "steps", steps)
        self.end = check_number("cosine", "end", end)
        self.exponent = check_positive("cosine", "exponent", exponent)
        self.past_end = check_choice("cosine", "past_end", past_end, ("hold", "periodic"))

    @rounded_once("steps", hidden=False)
    def value(self, step: Any) -> Any:
        s = step if self.past_end == "periodic" else exact_minimum(step, self.steps)
        c = cosine_weight((self.steps - s) / self.steps)
        if self.exponent != 1.0:
            c = ops.power(c, self.exponent)
        return self.end + (self.start - self.end) * c

    @property
    def natural_steps(self) -> int | float | None:
        return self.steps if self.past_end == "hold" else None


@register
class CosineRestarts(Schedule):
    """Cosine decay with warm restarts (SGDR); period ``i`` lasts ``steps * t_mul ** i``.

    ``value(step) = end + (start - end) * m_mul ** i * (1 + cos(pi * t)) / 2``, where
    period ``i`` starts at ``steps * (t_mul ** i - 1) / (t_mul - 1)`` (``steps * i`` when
    ``t_mul == 1``) and ``t`` is the fraction of period ``i`` done.

    Matches Keras ``CosineDecayRestarts(start, steps, t_mul, m_mul, alpha)``
    (``end = alpha * start``; ``end`` is not scaled by ``m_mul ** i``) and torch
    ``CosineAnnealingWarmRestarts(T_0=steps, T_mult, eta_min=end)`` (``m_mul=1``). The
    period index is found from a float32 log and then corrected by comparing the step
    with the period starts (snapped to a whole step when within float32 rounding of one), so
    every restart lands on its exact step; Keras's own float32 log misplaces some late
    restarts (e.g. step 327670 for ``steps=10, t_mul=2``) by one step.

    Args:
        start: Value at step 0.
        steps: Length of the first period, a positive number of steps.
        t_mul: Growth of each period, a number >= 1; default 2.0.
        m_mul: Factor on ``start - end`` per restart, a number >= 0; default 1.0.
        end: Value at the end of every period; default 0.0.

    Edge cases: ``start`` at step 0; each restart step has ``end + (start - end) *
    m_mul ** i`` and the step before it is close to ``end``; there is no last period.

    Example:
        >>> s = cosine_restarts(1.0, steps=10, m_mul=0.5)
        >>> [round(float(v), 6) for v in s([0, 10, 30])]
        [1.0, 0.5, 0.25]
    """

    keyword = "cosine_restarts"
    positional = 1

    def __init__(
        self,
        start: float,
        steps: float,
        t_mul: float = 2.0,
        m_mul: float = 1.0,
        end: float = 0.0,
    ) -> None:
        self.start = check_number("cosine_restarts", "start", start)
        self.steps = check_steps("cosine_restarts", "steps", steps)
        self.t_mul = check_number("cosine_restarts", "t_mul", t_mul)
        if self.t_mul < 1:
            raise InvalidArgumentError(
                f"`cosine_restarts(t_mul=...)` must be a number >= 1 (periods that shrink "
                f"end after finitely many steps). {received('t_mul', t_mul)}"
            )
        # the period starts steps * (t_mul ** i - 1) / (t_mul - 1) stay finite in float32
        # for every step up to 2**53 (two periods ahead are computed)
        if 2 * math.log(self.t_mul) + 53 * math.log(2.0) >= math.log(3.4e38):
            raise InvalidArgumentError(
                "`cosine_restarts(t_mul=...)` is so large that the period starts overflow "
                "float32 before step 2**53 (NaN from then on); use t_mul <= 1e11. "
                f"{received('t_mul', t_mul)}"
            )
        self.m_mul = check_number("cosine_restarts", "m_mul", m_mul)
        if self.m_mul < 0:
            raise InvalidArgumentError(
                f"`cosine_restarts(m_mul=...)` must be a number >= 0. {received('m_mul', m_mul)}"
            )
        self.end = check_number("cosine_restarts", "end", end)

    def _unit(self) -> bool:
        """Whether every period is ``steps`` long: ``t_mul`` is 1 in float32 (a ``t_mul`` of
        ``1 + 2e-16`` would divide 0 by 0 below)."""
        return float32(self.t_mul) == 1.0

    def _period_start(self, i: Any) -> Any:
        if self._unit():
            return self.steps * i
        start = self.steps * (ops.power(widened(self.t_mul), i) - 1.0) / (self.t_mul - 1.0)
        # float32 pow is off by an ulp at times (3.0 ** 4 = 81.00001): a start within float32
        # rounding of a whole step is that step
        whole = ops.round(start)
        return ops.where(ops.abs(start - whole) <= 1e-6 * whole, whole, start)

    @rounded_once("steps", hidden=False)
    def value(self, step: Any) -> Any:
        step = exact_maximum(step, 0.0)
        fraction = step / self.steps
        if self._unit():
            i = exact_floor(fraction)
        else:
            i = exact_floor(ops.log1p(fraction * (self.t_mul - 1.0)) / math.log(self.t_mul))
        # the log may land one period off near a restart: compare with exact period starts
        i = ops.where(step >= self._period_start(i + 1.0), i + 1.0, i)
        i = ops.where(step < self._period_start(i), i - 1.0, i)
        upper = self._period_start(i + 1.0)
        length = upper - self._period_start(i)
        c = cosine_weight((upper - step) / length)
        return self.end + (self.start - self.end) * ops.power(widened(self.m_mul), i) * c


@register
class Piecewise(Schedule):
    """Piecewise constant: ``values[k]`` once ``k`` boundaries have been reached.

    ``value(step) = values[k], k = #{b in boundaries : b <= step}``
    (``b < step`` with ``inclusive=True``)

    By default the new value applies AT its boundary, as in optax
    ``piecewise_constant_schedule`` and torch ``MultiStepLR``; ``inclusive=True`` keeps
    the old value at the boundary itself (one step late), as Keras
    ``PiecewiseConstantDecay`` does.

    With ``unit="epoch"`` the boundaries count epochs (``k = #{b : b <= epoch}``), bound
    like every ``epoch`` to the clock's ``steps_per_epoch``: an epoch table such as
    ``piecewise([5, 10], [0.1, 0.01, 0.001], unit="epoch")``. ``unit`` may also be any
    schedule, whose value the boundaries are compared with.

    Args:
        boundaries: Increasing, non-negative steps, one fewer than ``values``.
        values: Finite numbers.
        inclusive: Whether each interval includes its upper boundary (Keras); default
            False.
        unit: What the boundaries count: ``"step"`` (default), ``"epoch"``, or a schedule.

    Edge cases: ``values[0]`` at step 0 (unless a boundary is 0); at boundary ``b_k``
    ``values[k + 1]`` (``values[k]`` with ``inclusive``); ``values[-1]`` after the last.

    Example:
        >>> s = piecewise([10, 20], [1.0, 0.5, 0.1])
        >>> [round(float(v), 6) for v in s([9, 10, 20])]
        [1.0, 0.5, 0.1]
        >>> from hyperstep.schedules import bind_epochs
        >>> e = bind_epochs(piecewise([2], [1.0, 0.5], unit="epoch"), 100)
        >>> [round(float(v), 6) for v in e([199, 200])]
        [1.0, 0.5]
    """

    keyword = "piecewise"
    positional = 2

    def __init__(
        self,
        boundaries: Sequence[float],
        values: Sequence[float],
        inclusive: bool = False,
        unit: str | Schedule = "step",
    ) -> None:
        self.boundaries = check_boundaries("piecewise", "boundaries", boundaries)
        self.values = check_numbers("piecewise", "values", values)
        if len(self.values) != len(self.boundaries) + 1:
            raise InvalidArgumentError(
                f"`piecewise(boundaries=..., values=...)` needs one value more than "
                f"boundaries. Received: {len(self.boundaries)} boundaries={list(boundaries)} "
                f"and {len(self.values)} values={list(values)}. "
                f"Add a value or drop a boundary."
            )
        self.inclusive = check_flag("piecewise", "inclusive", inclusive)
        if isinstance(unit, Schedule):
            self.unit: str | Schedule = unit
        else:
            check_choice("piecewise", "unit", unit, ("step", "epoch"))
            self.unit = Epoch() if unit == "epoch" else "step"

    def value(self, step: Any) -> Any:
        x = step if isinstance(self.unit, str) else self.unit.value(step)
        result = ops.full_like(x, self.values[0])
        for boundary, v in zip(self.boundaries, self.values[1:], strict=True):
            b = boundary.value(x) if isinstance(boundary, Schedule) else boundary  # a length
            reached = (ops.greater if self.inclusive else ops.greater_equal)(x, b)
            result = ops.where(reached, v, result)
        return result


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


@register
class Cyclic(Schedule):
    """Cyclical (triangular) schedule between ``low`` and ``high`` (torch ``CyclicLR``).

    ``value(step) = low + (high - low) * x * f``: ``x`` rises linearly from 0 to 1 over
    ``steps_up`` steps and falls back over ``steps_down``; ``f = 1`` (``"triangular"``),
    ``0.5 ** k`` in cycle ``k = floor(step / (steps_up + steps_down))``
    (``"triangular2"``), or ``gamma ** step`` (``"exp_range"``).

    Matches torch ``CyclicLR(base_lr=low, max_lr=high, step_size_up, step_size_down,
    mode, gamma)``.

    Args:
        low: Value at the start of each cycle.
        high: Value at the top of the first cycle.
        steps_up: Steps from ``low`` to the top, a positive number.
        steps_down: Steps back down; default None (same as ``steps_up``).
        mode: ``"triangular"`` (default), ``"triangular2"`` or ``"exp_range"``.
        gamma: Per-step amplitude factor for ``"exp_range"``, a number > 0; default 1.0.

    Edge cases: ``low`` at step 0 and at every cycle start; the top at ``steps_up`` (plus
    whole cycles); never ends.

    Example:
        >>> s = cyclic(0.1, 1.0, steps_up=10)
        >>> [round(float(v), 6) for v in s([0, 5, 10])]
        [0.1, 0.55, 1.0]
    """

    keyword = "cyclic"
    positional = 2

    def __init__(
        self,
        low: float,
        high: float,
        steps_up: float,
        steps_down: float | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
    ) -> None:
        self.low = check_number("cyclic", "low", low)
        self.high = check_number("cyclic", "high", high)
        self.steps_up = check_steps("cyclic", "steps_up", steps_up)
        self.steps_down = (
            None if steps_down is None else check_steps("cyclic", "steps_down", steps_down)
        )
        # the cycle's length, added as Python adds numbers (lengths too, exactly)
        self._cycle = self.steps_up + (self.steps_up if steps_down is None else self.steps_down)
        self.mode = check_choice("cyclic", "mode", mode, ("triangular", "triangular2", "exp_range"))
        self.gamma = check_factor("cyclic", "gamma", gamma)
        if self.mode == "exp_range" and self.gamma > 1.0:
            raise InvalidArgumentError(
                "`cyclic(gamma=...)` must be at most 1 with mode='exp_range': gamma ** step "
                "then grows without bound and overflows float32 (NaN at a cycle start) after "
                f"{math.log(3.4e38) / math.log(self.gamma):.0f} steps. {received('gamma', gamma)}"
            )

    @rounded_once("steps_up", "steps_down", "_cycle")
    def value(self, step: Any) -> Any:
        up = self.steps_up
        down = up if self.steps_down is None else self.steps_down
        total = self._cycle
        k = exact_floor(step / total)
        s = step - total * k  # position within the cycle, exact for integer steps
        x = ops.where(s <= up, s / up, (total - s) / down)
        if self.mode == "triangular2":
            x = x * ops.power(widened(0.5), k)
        elif self.mode == "exp_range":
            x = x * power_of(self.gamma, step)
        return self.low + (self.high - self.low) * x


@register
class OneCycle(Schedule):
    """One-cycle: from ``start`` up to ``peak``, then down to ``end``.

    ``value(step) = anneal(a, b, (step - s) / (e - s))`` in each phase ``[s, e]``, with
    ``anneal = b + (a - b) * (1 + cos(pi * t)) / 2`` (``"cos"``) or ``a + (b - a) * t``;
    phases ``start -> peak -> end``, where ``start = peak / div_factor`` and
    ``end = start / final_div_factor`` unless given. A ``peak`` below ``start`` and ``end``
    cycles down and back up: ``one_cycle(0.85, steps, start=0.95, end=0.95)`` is torch's
    cycled momentum (``OneCycleLR(cycle_momentum=True)``, ``base_momentum=0.85``,
    ``max_momentum=0.95``).

    ``compat="torch"`` (default) places the peak at step ``pct_start * steps - 1`` and the
    minimum at ``steps - 1``, the last of ``steps`` updates, like torch ``OneCycleLR``.
    ``compat="optax"`` is one step later: peak at ``int(pct_start * steps)``, minimum at
    ``steps``, like optax ``cosine_onecycle_schedule``. ``three_phase`` (torch) adds a
    symmetric way back to ``start`` before the final anneal.

    Args:
        peak: The value at the end of the first phase (the highest, for a learning rate).
        steps: Total length, a positive number of steps.
        pct_start: Fraction of ``steps`` spent rising, in (0, 1); default 0.3.
        div_factor: ``peak / start``, a number > 0; default 25.0. Unused when ``start``
            is given.
        final_div_factor: ``start / end``, a number > 0; default 1e4. Unused when
            ``end`` is given.
        anneal: ``"cos"`` (default) or ``"linear"``.
        three_phase: torch's three-phase variant; default False.
        compat: ``"torch"`` (default) or ``"optax"``: where the phases end (see above).
        start: The value at step 0; default None (``peak / div_factor``).
        end: The value at the last phase end and after; default None
            (``start / final_div_factor``).

    Edge cases: ``start`` at step 0; ``peak`` at the first phase end; ``end`` at the last
    phase end and after it (torch extrapolates at ``steps`` and refuses later steps;
    hyperstep holds ``end``).

    Example:
        >>> s = one_cycle(1.0, steps=100)
        >>> [round(float(v), 6) for v in s([0, 29, 99])]
        [0.04, 1.0, 4e-06]
        >>> momentum = one_cycle(0.85, steps=100, start=0.95, end=0.95)
        >>> [round(float(v), 6) for v in momentum([0, 29, 99])]
        [0.95, 0.85, 0.95]
    """

    keyword = "one_cycle"
    positional = 1

    def __init__(
        self,
        peak: float,
        steps: float,
        pct_start: float = 0.3,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        anneal: str = "cos",
        three_phase: bool = False,
        compat: str = "torch",
        start: float | None = None,
        end: float | None = None,
    ) -> None:
        self.peak = check_number("one_cycle", "peak", peak)
        self.steps = check_steps("one_cycle", "steps", steps)
        self.pct_start = check_number("one_cycle", "pct_start", pct_start)
        if not 0 < self.pct_start < 1:
            raise InvalidArgumentError(
                f"`one_cycle(pct_start=...)` must be a number in (0, 1). "
                f"{received('pct_start', pct_start)}"
            )
        self.div_factor = check_factor("one_cycle", "div_factor", div_factor)
        self.final_div_factor = check_factor("one_cycle", "final_div_factor", final_div_factor)
        self.anneal = check_choice("one_cycle", "anneal", anneal, ("cos", "linear"))
        self.three_phase = check_flag("one_cycle", "three_phase", three_phase)
        self.compat = check_choice("one_cycle", "compat", compat, ("torch", "optax"))
        self.start = None if start is None else check_number("one_cycle", "start", start)
        self.end = None if end is None else check_number("one_cycle", "end", end)
        # of a length (steps=total): lengths, checked where it is bound
        self._phases = self._make_phases(self.steps)

    def _make_phases(self, steps: Any) -> list[tuple[Any, Any, float, float]]:
        """Return ``(start_step, end_step, start_value, end_value)`` for each phase (of
        ``steps`` steps: a number, checked, or a length, whose ends are lengths)."""
        rise = self.pct_start * steps
        number = isinstance(steps, (int, float))
        if self.compat == "torch":
            ends = [rise - 1, 2 * rise - 2, steps - 1]
        elif number:
            ends = [float(int(rise)), float(2 * int(rise)), float(steps)]
        else:  # int(rise) of a positive length
            ends = [Function("floor", [rise]), 2 * Function("floor", [rise]), steps]
        first = self.peak / self.div_factor if self.start is None else self.start
        last = first / self.final_div_factor if self.end is None else self.end
        if self.three_phase:
            points = [
                (ends[0], first, self.peak),
                (ends[1], self.peak, first),
                (ends[2], first, last),
            ]
        else:
            points = [(ends[0], first, self.peak), (ends[2], self.peak, last)]
        phases, begin = [], 0.0
        for end_step, a, b in points:
            if number and end_step <= begin:
                raise InvalidArgumentError(
                    f"`one_cycle(...)` has an empty phase: with steps={self.steps!r}, "
                    f"pct_start={self.pct_start!r}, three_phase={self.three_phase}, "
                    f"compat={self.compat!r} a phase would end at step {end_step:g}, not "
                    f"after step {begin:g}. Use more steps or another pct_start. "
                    f"{received('pct_start', self.pct_start)}"
                )
            phases.append((begin, end_step, a, b))
            begin = end_step
        return phases

    @rounded_once()
    def value(self, step: Any) -> Any:
        # pick each step's phase first (cheap selects of constants), then anneal once
        phases = self._phases
        begin, end, a, b = (widened(x) for x in phases[-1])
        for phase in reversed(phases[:-1]):
            inside = step <= widened(phase[1])
            begin, end, a, b = (
                ops.where(inside, widened(x), y)
                for x, y in zip(phase, (begin, end, a, b), strict=True)
            )
        left = ops.clip((end - step) / (end - begin), 0.0, 1.0)  # 1 - t; 0 past the end
        weight = cosine_weight(left) if self.anneal == "cos" else left
        return b + (a - b) * weight

    @property
    def natural_steps(self) -> int | float | None:
        return self.steps


cosine = Cosine
cosine_restarts = CosineRestarts
piecewise = Piecewise
linear = Linear
exponential = Exponential
inverse_time = InverseTime
polynomial = Polynomial
cyclic = Cyclic
one_cycle = OneCycle
