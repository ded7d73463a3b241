"""The schedule families: linear, exponential, inverse_time, polynomial, cosine,
cosine_restarts, piecewise, cyclic and one_cycle.

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

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from keras import ops

from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.schedules.base import Schedule, _is_scalar_number, check_number, register

HALF_PI = math.pi / 2


# ---- validation helpers (shared with combinators and keras_compat) ---------------------
def _is_number(value: Any) -> bool:
    return not isinstance(value, bool) and (
        isinstance(value, (int, float)) or _is_scalar_number(value)
    )


def check_steps(owner: str, name: str, value: Any, *, allow_zero: bool = False) -> int | float:
    """Return a positive (or, with ``allow_zero``, non-negative) finite number of steps.

    Integral values come back as ``int`` so that ``repr`` writes ``steps=100``.
    """
    what = "a non-negative number of steps" if allow_zero else "a positive number of steps"
    if not _is_number(value):
        raise InvalidTypeError(f"`{owner}({name}=...)` must be {what}. {received(name, value)}")
    number = float(value)
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        raise InvalidArgumentError(f"`{owner}({name}=...)` must be {what}. {received(name, value)}")
    return int(number) if number.is_integer() else number


def check_positive(owner: str, name: str, value: Any) -> float:
    """Return ``value`` as a float > 0, or raise naming the argument and the value."""
    number = check_number(owner, name, value)
    if number <= 0:
        raise InvalidArgumentError(
            f"`{owner}({name}=...)` must be a number > 0. {received(name, value)}"
        )
    return number


def check_flag(owner: str, name: str, value: Any) -> bool:
    """Return ``value`` if it is a bool, or raise naming the argument and the value."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidTypeError(
            f"`{owner}({name}=...)` must be True or False. {received(name, value)}"
        )
    return bool(value)


def check_choice(owner: str, name: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``, or raise listing them."""
    if not isinstance(value, str) or value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise InvalidArgumentError(
            f"`{owner}({name}=...)` must be one of {options}. {received(name, value)}"
        )
    return value


def check_numbers(owner: str, name: str, value: Any) -> list[float]:
    """Return a list of finite floats from a list or tuple, naming the first bad element."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise InvalidTypeError(
            f"`{owner}({name}=...)` must be a list of numbers. {received(name, value)}"
        )
    for item in value:
        if not _is_number(item) or not math.isfinite(float(item)):
            raise InvalidArgumentError(
                f"`{owner}({name}=...)` must be a list of finite numbers; found {item!r}. "
                f"{received(name, value)}"
            )
    return [float(v) for v in value]


def check_boundaries(owner: str, name: str, value: Any) -> list[int | float]:
    """Return non-negative, strictly increasing step boundaries (integral ones as ints)."""
    numbers = check_numbers(owner, name, value)
    for b in numbers:
        if b < 0:
            raise InvalidArgumentError(
                f"`{owner}({name}=...)` must be non-negative steps; found {b:g}. "
                f"{received(name, value)}"
            )
    for a, b in itertools.pairwise(numbers):
        if b <= a:
            raise InvalidArgumentError(
                f"`{owner}({name}=...)` must be sorted and unique; found {a:g} before {b:g}. "
                f"{received(name, value)} Write them in increasing order, each once."
            )
    return [int(b) if b.is_integer() else b for b in numbers]


def _f32(value: float) -> Any:
    return ops.convert_to_tensor(value, dtype="float32")


def _power(base: float, exponent: Any) -> Any:
    """``base ** exponent`` for a Python ``base > 0``, corrected for its float32 rounding.

    ``float32(base) ** p`` is off by ``p * (relative rounding of base)``, up to 6e-8 * p;
    the factor ``exp(p * log(base / float32(base)))`` removes that error. Bases exactly
    representable in float32 (0.5, 2.0, ...) skip the correction and stay exact.
    """
    base32 = float(np.float32(base))
    result = ops.power(_f32(base32), exponent)
    correction = math.log(base / base32)
    if correction != 0.0:
        result = result * ops.exp(exponent * correction)
    return result


def _cosine_weight(left: Any) -> Any:
    """``(1 + cos(pi * (1 - left))) / 2``, written as ``sin(pi / 2 * left) ** 2``."""
    return ops.square(ops.sin(HALF_PI * left))


# ---- families ------------------------------------------------------------------------
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

    def value(self, step: Any) -> Any:
        s = ops.clip(step - self.begin, 0.0, self.steps)
        # both weights exact for integer steps: accurate at either end of the ramp
        return self.start * ((self.steps - s) / self.steps) + self.end * (s / self.steps)

    def arguments(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "steps": self.steps, "begin": self.begin}


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
        self.rate = check_positive("exponential", "rate", rate)
        self.every = check_steps("exponential", "every", every)
        self.staircase = check_flag("exponential", "staircase", staircase)
        self.begin = check_steps("exponential", "begin", begin, allow_zero=True)
        self.end = None if end is None else check_number("exponential", "end", end)

    def value(self, step: Any) -> Any:
        t = step - self.begin
        p = t / self.every
        if self.staircase:
            p = ops.floor(p)
        v = ops.where(t <= 0, self.start, self.start * _power(self.rate, ops.maximum(p, 0.0)))
        if self.end is not None:
            v = ops.maximum(v, self.end) if self.rate < 1 else ops.minimum(v, self.end)
        return v

    def arguments(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "rate": self.rate,
            "every": self.every,
            "staircase": self.staircase,
            "begin": self.begin,
            "end": self.end,
        }


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
        self.every = check_steps("inverse_time", "every", every)
        self.staircase = check_flag("inverse_time", "staircase", staircase)

    def value(self, step: Any) -> Any:
        p = step / self.every
        if self.staircase:
            p = ops.floor(p)
        return self.start / (1.0 + self.rate * p)

    def arguments(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "rate": self.rate,
            "every": self.every,
            "staircase": self.staircase,
        }


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

    def value(self, step: Any) -> Any:
        if self.cycle:
            s = ops.maximum(step - self.begin, 0.0)
            horizon = self.steps * ops.maximum(ops.ceil(s / self.steps), 1.0)
        else:
            s = ops.clip(step - self.begin, 0.0, self.steps)
            horizon = self.steps
        left = (horizon - s) / horizon
        if self.power != 1.0:
            left = ops.power(left, self.power)
        return self.end + (self.start - self.end) * left

    def arguments(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "end": self.end,
            "steps": self.steps,
            "power": self.power,
            "cycle": self.cycle,
            "begin": self.begin,
        }


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

    def value(self, step: Any) -> Any:
        s = step if self.past_end == "periodic" else ops.minimum(step, self.steps)
        c = _cosine_weight((self.steps - s) / self.steps)
        if self.exponent != 1.0:
            c = ops.power(c, self.exponent)
        return self.end + (self.start - self.end) * c

    def arguments(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "steps": self.steps,
            "end": self.end,
            "exponent": self.exponent,
            "past_end": self.past_end,
        }


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
        self.m_mul = check_number("cosine_restarts", "m_mul", m_mul)
        if self.m_mul < 0:
            raise InvalidArgumentError(
                f"`cosine_restarts(m_mul=...)` must be a number >= 0. {received('m_mul', m_mul)}"
            )
        self.end = check_number("cosine_restarts", "end", end)

    def _period_start(self, i: Any) -> Any:
        if self.t_mul == 1.0:
            return self.steps * i
        start = self.steps * (ops.power(_f32(self.t_mul), i) - 1.0) / (self.t_mul - 1.0)
        # float32 pow is off by an ulp at times (3.0 ** 4 = 81.00001): a start within float32
        # rounding of a whole step is that step
        whole = ops.round(start)
        return ops.where(ops.abs(start - whole) <= 1e-6 * whole, whole, start)

    def value(self, step: Any) -> Any:
        step = ops.maximum(step, 0.0)
        fraction = step / self.steps
        if self.t_mul == 1.0:
            i = ops.floor(fraction)
        else:
            i = ops.floor(ops.log1p(fraction * (self.t_mul - 1.0)) / math.log(self.t_mul))
        # the log may land one period off near a restart: compare with exact period starts
        i = ops.where(step >= self._period_start(i + 1.0), i + 1.0, i)
        i = ops.where(step < self._period_start(i), i - 1.0, i)
        upper = self._period_start(i + 1.0)
        length = upper - self._period_start(i)
        c = _cosine_weight((upper - step) / length)
        return self.end + (self.start - self.end) * ops.power(_f32(self.m_mul), i) * c

    def arguments(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "steps": self.steps,
            "t_mul": self.t_mul,
            "m_mul": self.m_mul,
            "end": self.end,
        }


@register
class Piecewise(Schedule):
    """Piecewise constant: ``values[k]`` once ``k`` boundaries have been reached.

    ``value(step) = values[k], k = #{b in boundaries : b <= step}``
    (``b < step`` with ``inclusive=True``)

    By default the new value applies AT its boundary, as in optax
    ``piecewise_constant_schedule`` and torch ``MultiStepLR``; ``inclusive=True`` keeps
    the old value at the boundary itself (one step late), as Keras
    ``PiecewiseConstantDecay`` does.

    Args:
        boundaries: Increasing, non-negative steps, one fewer than ``values``.
        values: Finite numbers.
        inclusive: Whether each interval includes its upper boundary (Keras); default
            False.

    Edge cases: ``values[0]`` at step 0 (unless a boundary is 0); at boundary ``b_k``
    ``values[k + 1]`` (``values[k]`` with ``inclusive``); ``values[-1]`` after the last.

    Example:
        >>> s = piecewise([10, 20], [1.0, 0.5, 0.1])
        >>> [round(float(v), 6) for v in s([9, 10, 20])]
        [1.0, 0.5, 0.1]
    """

    keyword = "piecewise"
    positional = 2

    def __init__(
        self, boundaries: Sequence[float], values: Sequence[float], inclusive: bool = False
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

    def value(self, step: Any) -> Any:
        result = ops.full_like(step, self.values[0])
        for boundary, v in zip(self.boundaries, self.values[1:], strict=True):
            reached = (ops.greater if self.inclusive else ops.greater_equal)(step, boundary)
            result = ops.where(reached, v, result)
        return result

    def arguments(self) -> dict[str, Any]:
        return {
            "boundaries": list(self.boundaries),
            "values": list(self.values),
            "inclusive": self.inclusive,
        }


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
        self.mode = check_choice("cyclic", "mode", mode, ("triangular", "triangular2", "exp_range"))
        self.gamma = check_positive("cyclic", "gamma", gamma)

    def value(self, step: Any) -> Any:
        up = self.steps_up
        down = up if self.steps_down is None else self.steps_down
        total = up + down
        k = ops.floor(step / total)
        s = step - total * k  # position within the cycle, exact for integer steps
        x = ops.where(s <= up, s / up, (total - s) / down)
        if self.mode == "triangular2":
            x = x * ops.power(_f32(0.5), k)
        elif self.mode == "exp_range":
            x = x * _power(self.gamma, step)
        return self.low + (self.high - self.low) * x

    def arguments(self) -> dict[str, Any]:
        return {
            "low": self.low,
            "high": self.high,
            "steps_up": self.steps_up,
            "steps_down": self.steps_down,
            "mode": self.mode,
            "gamma": self.gamma,
        }


@register
class OneCycle(Schedule):
    """One-cycle: up from ``peak / div_factor`` to ``peak``, then down to the minimum.

    ``value(step) = anneal(a, b, (step - s) / (e - s))`` in each phase ``[s, e]``, with
    ``anneal = b + (a - b) * (1 + cos(pi * t)) / 2`` (``"cos"``) or ``a + (b - a) * t``;
    phases ``peak / div_factor -> peak -> peak / div_factor / final_div_factor``.

    ``compat="torch"`` (default) places the peak at step ``pct_start * steps - 1`` and the
    minimum at ``steps - 1``, the last of ``steps`` updates, like torch ``OneCycleLR``.
    ``compat="optax"`` is one step later: peak at ``int(pct_start * steps)``, minimum at
    ``steps``, like optax ``cosine_onecycle_schedule``. ``three_phase`` (torch) adds a
    symmetric way down to ``peak / div_factor`` before the final anneal.

    Args:
        peak: The highest value.
        steps: Total length, a positive number of steps.
        pct_start: Fraction of ``steps`` spent rising, in (0, 1); default 0.3.
        div_factor: ``peak / start``, a number > 0; default 25.0.
        final_div_factor: ``start / minimum``, a number > 0; default 1e4.
        anneal: ``"cos"`` (default) or ``"linear"``.
        three_phase: torch's three-phase variant; default False.
        compat: ``"torch"`` (default) or ``"optax"``: where the phases end (see above).

    Edge cases: ``peak / div_factor`` at step 0; ``peak`` at the first phase end; the
    minimum at the last phase end and after it (torch extrapolates at ``steps`` and
    refuses later steps; hyperstep holds the minimum).

    Example:
        >>> s = one_cycle(1.0, steps=100)
        >>> [round(float(v), 6) for v in s([0, 29, 99])]
        [0.04, 1.0, 4e-06]
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
    ) -> None:
        self.peak = check_number("one_cycle", "peak", peak)
        self.steps = check_steps("one_cycle", "steps", steps)
        self.pct_start = check_number("one_cycle", "pct_start", pct_start)
        if not 0 < self.pct_start < 1:
            raise InvalidArgumentError(
                f"`one_cycle(pct_start=...)` must be a number in (0, 1). "
                f"{received('pct_start', pct_start)}"
            )
        self.div_factor = check_positive("one_cycle", "div_factor", div_factor)
        self.final_div_factor = check_positive("one_cycle", "final_div_factor", final_div_factor)
        self.anneal = check_choice("one_cycle", "anneal", anneal, ("cos", "linear"))
        self.three_phase = check_flag("one_cycle", "three_phase", three_phase)
        self.compat = check_choice("one_cycle", "compat", compat, ("torch", "optax"))
        self._phases = self._make_phases()

    def _make_phases(self) -> list[tuple[float, float, float, float]]:
        """Return ``(start_step, end_step, start_value, end_value)`` for each phase."""
        rise = self.pct_start * self.steps
        if self.compat == "torch":
            ends = [rise - 1, 2 * rise - 2, self.steps - 1]
        else:
            ends = [float(int(rise)), float(2 * int(rise)), float(self.steps)]
        low = self.peak / self.div_factor
        lowest = low / self.final_div_factor
        if self.three_phase:
            points = [(ends[0], low, self.peak), (ends[1], self.peak, low), (ends[2], low, lowest)]
        else:
            points = [(ends[0], low, self.peak), (ends[2], self.peak, lowest)]
        phases, begin = [], 0.0
        for end_step, a, b in points:
            if end_step <= begin:
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

    def value(self, step: Any) -> Any:
        result = ops.full_like(step, self._phases[-1][3])
        for begin, end, a, b in reversed(self._phases):
            left = ops.clip((end - step) / (end - begin), 0.0, 1.0)  # 1 - t
            if self.anneal == "cos":
                v = b + (a - b) * _cosine_weight(left)
            else:
                v = b + (a - b) * left
            result = ops.where(step <= end, v, result)
        return result

    def arguments(self) -> dict[str, Any]:
        return {
            "peak": self.peak,
            "steps": self.steps,
            "pct_start": self.pct_start,
            "div_factor": self.div_factor,
            "final_div_factor": self.final_div_factor,
            "anneal": self.anneal,
            "three_phase": self.three_phase,
            "compat": self.compat,
        }


linear = Linear
exponential = Exponential
inverse_time = InverseTime
polynomial = Polynomial
cosine = Cosine
cosine_restarts = CosineRestarts
piecewise = Piecewise
cyclic = Cyclic
one_cycle = OneCycle
