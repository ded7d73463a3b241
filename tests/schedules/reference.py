"""Independent closed forms of the schedule families in plain Python float64, and the
comparison used by every schedule test.

Written from the formulas in the peers' sources and documentation (Keras's
``learning_rate_schedule.py``, optax's ``schedules``, torch's ``lr_scheduler.py``), one
step at a time with ``if``s, deliberately unlike the vectorized float32 implementation.
Load it from a test with ``load_reference()`` (tests have no package ``__init__``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np


def assert_close(ours: object, theirs: object, scale: float | None = None) -> None:
    """Assert agreement to float32 rounding.

    ``rtol=1e-6`` is about 8 float32 ulps. The absolute term ``1e-7 * scale`` (about one
    float32 ulp of the schedule's largest value) is needed where a value is analytically
    close to 0: both sides form it from order-1 quantities such as ``1 - step / steps`` or
    ``cos(pi * t)``, whose float32 rounding (up to 6e-8) leaves an absolute error of about
    ``6e-8 * scale`` that no relative tolerance can absorb.
    """
    a = np.asarray(ours, dtype=np.float64)
    b = np.asarray(theirs, dtype=np.float64)
    if scale is None:
        scale = float(np.max(np.abs(b))) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7 * scale)


def grid(end: int, *boundaries: float) -> np.ndarray:
    """Every integer step from 0 to 3x past ``end``; checks it holds each boundary +-1."""
    steps = np.arange(3 * int(end) + 1)
    for b in boundaries:
        for s in (b - 1, b, b + 1):
            assert s < 0 or s in steps, (s, end)
    return steps


def vectorize(fn: Callable[[float], float]) -> Callable[[Sequence[float]], np.ndarray]:
    return lambda steps: np.array([fn(float(s)) for s in np.asarray(steps).ravel()])


def linear(start: float, end: float, steps: float, begin: float = 0) -> Callable:
    def f(t: float) -> float:
        if t <= begin:
            return start
        if t >= begin + steps:
            return end
        return start + (end - start) * (t - begin) / steps

    return vectorize(f)


def exponential(start, rate, every, staircase=False, begin=0, end=None) -> Callable:
    def f(t: float) -> float:
        if t <= begin:
            v = start
        else:
            p = (t - begin) / every
            v = start * rate ** (math.floor(p) if staircase else p)
        if end is not None:
            v = max(v, end) if rate < 1 else min(v, end)
        return v

    return vectorize(f)


def inverse_time(start, rate, every, staircase=False) -> Callable:
    def f(t: float) -> float:
        p = math.floor(t / every) if staircase else t / every
        return start / (1 + rate * p)

    return vectorize(f)


def polynomial(start, end, steps, power=1.0, cycle=False, begin=0) -> Callable:
    def f(t: float) -> float:
        t = max(t - begin, 0.0)
        if cycle:
            horizon = steps * max(math.ceil(t / steps), 1)
        else:
            horizon, t = steps, min(t, steps)
        return (start - end) * (1 - t / horizon) ** power + end

    return vectorize(f)


def cosine(start, steps, end=0.0, exponent=1.0, past_end="hold") -> Callable:
    def f(t: float) -> float:
        if past_end == "hold":
            t = min(t, steps)
        return end + (start - end) * (0.5 * (1 + math.cos(math.pi * t / steps))) ** exponent

    return vectorize(f)


def cosine_restarts(start, steps, t_mul=2.0, m_mul=1.0, end=0.0) -> Callable:
    def f(t: float) -> float:
        i, begin, length = 0, 0.0, float(steps)
        while t >= begin + length:  # walk the periods one by one
            begin += length
            length *= t_mul
            i += 1
        return end + (start - end) * m_mul**i * 0.5 * (1 + math.cos(math.pi * (t - begin) / length))

    return vectorize(f)


def piecewise(boundaries, values, inclusive=False) -> Callable:
    def f(t: float) -> float:
        k = sum(1 for b in boundaries if (b < t if inclusive else b <= t))
        return values[k]

    return vectorize(f)


def cyclic(low, high, steps_up, steps_down=None, mode="triangular", gamma=1.0) -> Callable:
    down = steps_up if steps_down is None else steps_down

    def f(t: float) -> float:
        total = steps_up + down
        k, s = divmod(t, total)
        x = s / steps_up if s <= steps_up else 1 - (s - steps_up) / down
        factor = {"triangular": 1.0, "triangular2": 0.5**k, "exp_range": gamma**t}[mode]
        return low + (high - low) * x * factor

    return vectorize(f)


def one_cycle(
    peak,
    steps,
    pct_start=0.3,
    div_factor=25.0,
    final_div_factor=1e4,
    anneal="cos",
    three_phase=False,
    compat="torch",
) -> Callable:
    low = peak / div_factor
    lowest = low / final_div_factor
    rise = pct_start * steps
    if compat == "torch":
        e1, e2, e3 = rise - 1, 2 * rise - 2, steps - 1
    else:
        e1, e2, e3 = int(rise), 2 * int(rise), steps
    phases = [(e1, low, peak), (e2, peak, low), (e3, low, lowest)]
    if not three_phase:
        phases = [(e1, low, peak), (e3, peak, lowest)]

    def f(t: float) -> float:
        begin = 0.0
        for end_step, a, b in phases:
            if t <= end_step:
                pct = (t - begin) / (end_step - begin)
                if anneal == "cos":
                    return b + (a - b) / 2 * (math.cos(math.pi * pct) + 1)
                return a + (b - a) * pct
            begin = end_step
        return lowest

    return vectorize(f)
