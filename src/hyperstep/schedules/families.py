"""The cosine and piecewise families (cosine, cosine_restarts, piecewise), and the rule
every family follows.

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
    check_flag,
    check_numbers,
    check_positive,
    check_steps,
    float32,
)
from hyperstep.schedules.exact import (
    cosine_weight,
    exact_floor,
    exact_maximum,
    exact_minimum,
    rounded_once,
    widened,
)
from hyperstep.schedules.expressions import Epoch


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

    @rounded_once
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

    @rounded_once
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


cosine = Cosine
cosine_restarts = CosineRestarts
piecewise = Piecewise

__all__ = ["Cosine", "CosineRestarts", "Piecewise", "cosine", "cosine_restarts", "piecewise"]
