"""Cyclical schedules: ``cyclic`` (torch ``CyclicLR``) and ``one_cycle`` (torch
``OneCycleLR``, optax ``cosine_onecycle_schedule``).
"""

from __future__ import annotations

import math
from typing import Any

from hyperstep.errors import InvalidArgumentError, received
from hyperstep.schedules._ops import ops
from hyperstep.schedules.base import Schedule, check_number, register
from hyperstep.schedules.checks import check_choice, check_factor, check_flag, check_steps
from hyperstep.schedules.exact import cosine_weight, exact_floor, power_of, rounded_once, widened
from hyperstep.schedules.expressions import Function


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

    @rounded_once
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

    @rounded_once
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


cyclic = Cyclic
one_cycle = OneCycle
