"""Hypothesis properties: decays are monotone and stay within their bounds, join is
continuous where its parts agree, and a vector of steps gives the per-step values."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hyperstep.schedules as hs

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

starts = st.floats(1e-6, 10.0)
fractions = st.floats(0.0, 1.0)
lengths = st.integers(1, 5000)


@st.composite
def decays(draw):
    """A decaying schedule with its start and its lower bound."""
    start = draw(starts)
    end = start * draw(fractions)
    steps = draw(lengths)
    kind = draw(st.sampled_from(["linear", "polynomial", "cosine", "exponential", "inverse",
                                 "piecewise", "restarts", "warmup_tail"]))  # fmt: skip
    if kind == "linear":
        return hs.linear(start, end, steps=steps), start, end
    if kind == "polynomial":
        power = draw(st.floats(0.1, 5.0))
        return hs.polynomial(start, end, steps=steps, power=power), start, end
    if kind == "cosine":
        exponent = draw(st.floats(0.5, 3.0))
        return hs.cosine(start, steps=steps, end=end, exponent=exponent), start, end
    if kind == "exponential":
        rate = draw(st.floats(0.01, 0.999))
        staircase = draw(st.booleans())
        s = hs.exponential(start, rate, every=steps, staircase=staircase, end=end)
        return s, start, end
    if kind == "inverse":
        return hs.inverse_time(start, draw(st.floats(0.0, 10.0)), every=steps), start, 0.0
    if kind == "piecewise":
        count = draw(st.integers(0, 5))
        bounds = sorted(draw(st.sets(st.integers(0, 10_000), min_size=count, max_size=count)))
        values = sorted((draw(st.floats(end, start)) for _ in range(count)), reverse=True)
        return hs.piecewise(bounds, [start, *values]), start, end
    if kind == "restarts":
        m_mul = draw(fractions)
        s = hs.cosine_restarts(start, steps, t_mul=draw(st.floats(1.0, 3.0)), m_mul=m_mul)
        return s, start, 0.0  # restarts rise at each restart: bounds only, checked below
    inner = hs.cosine(start, steps=steps, end=end)
    return hs.join([start, inner], [draw(st.integers(0, 100))]), start, end


steps_vectors = st.lists(st.integers(0, 200_000), min_size=1, max_size=50)


@SETTINGS
@given(decays(), steps_vectors)
def test_decays_are_monotone_and_within_their_bounds(case, steps):
    schedule, start, low = case
    grid = np.unique(np.concatenate([np.arange(0, 200_001, 997), steps]))
    values = np.asarray(schedule(grid), np.float64)
    ulp = 2.4e-7 * start  # two float32 ulps of the largest value
    assert np.all(values <= start + ulp)
    assert np.all(values >= low - ulp)
    if not isinstance(schedule, hs.families.CosineRestarts):
        assert np.all(np.diff(values) <= ulp), schedule


@SETTINGS
@given(starts, fractions, lengths, st.integers(1, 10), st.floats(1.0, 2.0))
def test_cyclic_and_one_cycle_stay_between_low_and_high(low, ratio, steps, up, gamma_inv):
    high = low / max(ratio, 1e-3)
    for mode in ("triangular", "triangular2", "exp_range"):
        s = hs.cyclic(low, high, steps_up=up, mode=mode, gamma=1 / gamma_inv)
        v = np.asarray(s(np.arange(0, 10 * up + 1)), np.float64)
        assert np.all(v >= low * (1 - 1e-6)) and np.all(v <= high * (1 + 1e-6)), s
    if steps >= 10:
        one = hs.one_cycle(high, steps=steps)
        v = np.asarray(one(np.arange(0, 2 * steps, max(1, steps // 100))), np.float64)
        assert np.all(v <= high * (1 + 1e-6)) and np.all(v > 0)


@SETTINGS
@given(starts, fractions, fractions, lengths, lengths)
def test_join_is_continuous_where_its_parts_agree(start, mid_ratio, end_ratio, first, second):
    mid = start * mid_ratio
    head = hs.linear(start, mid, steps=first)
    tail = hs.cosine(mid, steps=second, end=mid * end_ratio)  # tail(0) == head(first)
    s = hs.join([head, tail], [first])
    around = np.array([first - 1, first, first + 1])
    values = np.asarray(s(around), np.float64)
    np.testing.assert_allclose(values[1], mid, rtol=1e-6, atol=1e-7 * start)
    # the jump across the boundary is no larger than one step of either part
    jump = abs(values[1] - values[0])
    slope = max(abs(start - mid) / first, abs(mid - mid * end_ratio) * np.pi / 2 / second)
    assert jump <= slope * (1 + 1e-5) + 2.4e-7 * start


@SETTINGS
@given(decays(), steps_vectors)
def test_a_vector_of_steps_equals_the_steps_one_by_one(case, steps):
    schedule = case[0]
    vector = np.asarray(schedule(np.array(steps)), np.float64)
    for i in range(0, len(steps), max(1, len(steps) // 5)):
        one = float(schedule(steps[i]))
        np.testing.assert_allclose(vector[i], one, rtol=1e-6, atol=1e-7 * case[1])
