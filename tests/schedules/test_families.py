"""The schedule families against independent float64 closed forms (tests/schedules/reference.py),
their documented edge cases, config and repr, vectorization and tracing; then each family's
units through the public ``hs.schedules`` names: float64 closed forms for the argument
combinations the grid and the Keras, torch and optax parity tests leave out, the phase
placement, ``natural_steps`` and the errors."""

import importlib.util
import json
import math
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep.schedules as hs
from hyperstep import parse
from hyperstep.errors import InvalidArgumentError

_spec = importlib.util.spec_from_file_location(
    "schedule_reference", pathlib.Path(__file__).with_name("reference.py")
)
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

# (family name, kwargs, end of the interesting range, boundaries in the grid)
CASES = [
    ("linear", dict(start=1.0, end=0.1, steps=100), 100, [100]),
    ("linear", dict(start=0.0, end=2.0, steps=30, begin=20), 50, [20, 50]),
    ("exponential", dict(start=0.1, rate=0.96, every=10), 100, [10]),
    ("exponential", dict(start=0.1, rate=0.5, every=10, staircase=True), 100, [10, 20]),
    ("exponential", dict(start=1.0, rate=0.9, every=5, begin=10, end=0.3), 100, [10]),
    ("exponential", dict(start=1.0, rate=1.1, every=5, end=2.0), 100, [0]),
    ("inverse_time", dict(start=0.1, rate=0.5, every=10), 100, [10]),
    ("inverse_time", dict(start=0.1, rate=0.5, every=10, staircase=True), 100, [10, 20]),
    ("polynomial", dict(start=0.1, end=0.01, steps=100, power=2.0), 100, [100]),
    ("polynomial", dict(start=0.1, end=0.01, steps=10, cycle=True), 10, [10, 20]),
    ("polynomial", dict(start=1.0, end=0.0, steps=40, power=0.5, begin=10), 50, [10, 50]),
    ("cosine", dict(start=1.0, steps=100, end=0.1), 100, [100]),
    ("cosine", dict(start=1.0, steps=100), 100, [100]),
    ("cosine", dict(start=2.0, steps=60, end=0.5, exponent=2.0), 60, [60]),
    ("cosine", dict(start=1.0, steps=10, past_end="periodic"), 10, [10, 20]),
    ("cosine_restarts", dict(start=1.0, steps=10, m_mul=0.5), 70, [10, 30, 70]),
    ("cosine_restarts", dict(start=1.0, steps=10, t_mul=1.0, end=0.1), 30, [10, 20]),
    ("cosine_restarts", dict(start=1.0, steps=7, t_mul=3.0, m_mul=0.9, end=0.2), 91, [7, 28, 91]),
    ("piecewise", dict(boundaries=[10, 20], values=[1.0, 0.5, 0.1]), 20, [10, 20]),
    ("piecewise", dict(boundaries=[0, 5], values=[3.0, 2.0, 1.0], inclusive=True), 5, [0, 5]),
    ("cyclic", dict(low=0.1, high=1.0, steps_up=10), 40, [10, 20]),
    ("cyclic", dict(low=0.1, high=1.0, steps_up=10, steps_down=5, mode="triangular2"), 45, [15]),
    ("cyclic", dict(low=0.1, high=1.0, steps_up=4, mode="exp_range", gamma=0.99), 40, [4, 8]),
    ("one_cycle", dict(peak=1.0, steps=100), 100, [29, 99]),
    ("one_cycle", dict(peak=1.0, steps=100, compat="optax"), 100, [30, 100]),
    ("one_cycle", dict(peak=0.5, steps=50, anneal="linear", three_phase=True), 50, [14, 28, 49]),
    ("one_cycle", dict(peak=1.0, steps=33, pct_start=0.25, compat="optax"), 33, [8, 33]),
]
IDS = [f"{name}-{i}" for i, (name, *_rest) in enumerate(CASES)]


@pytest.mark.parametrize(("name", "kwargs", "end", "boundaries"), CASES, ids=IDS)
def test_family_matches_float64_closed_form_on_grid(name, kwargs, end, boundaries):
    steps = ref.grid(end, *boundaries)
    ours = getattr(hs, name)(**kwargs)(steps)
    assert ours.dtype == "float32"
    ref.assert_close(ours, getattr(ref, name)(**kwargs)(steps))


@pytest.mark.parametrize(("name", "kwargs", "end", "boundaries"), CASES, ids=IDS)
def test_family_config_json_round_trip_is_equal_by_value(name, kwargs, end, boundaries):
    s = getattr(hs, name)(**kwargs)
    text = json.dumps(keras.saving.serialize_keras_object(s))
    back = keras.saving.deserialize_keras_object(json.loads(text))
    assert type(back) is type(s)
    assert back.get_config() == s.get_config()
    steps = ref.grid(end, *boundaries)
    np.testing.assert_array_equal(back(steps), s(steps))


@pytest.mark.parametrize(("name", "kwargs", "end", "boundaries"), CASES, ids=IDS)
def test_family_repr_rebuilds_an_equal_schedule(name, kwargs, end, boundaries):
    s = getattr(hs, name)(**kwargs)
    text = repr(s)
    assert text.startswith(f"{name}(")
    rebuilt = eval(text, {name: getattr(hs, name)})  # the vocabulary call, not hs.parse
    assert rebuilt.get_config() == s.get_config()


def test_repr_writes_values_positionally_and_steps_by_keyword():
    assert repr(hs.cosine(1e-3, steps=10000, end=1e-5)) == "cosine(0.001, steps=10000, end=1e-05)"
    assert repr(hs.linear(0, 1, 500)) == "linear(0.0, 1.0, steps=500)"
    assert repr(hs.piecewise([10], [1, 0.5])) == "piecewise([10], [1.0, 0.5])"
    assert (
        repr(hs.one_cycle(1.0, 100, compat="optax")) == "one_cycle(1.0, steps=100, compat='optax')"
    )


def test_integral_float_steps_are_stored_as_ints():
    assert hs.cosine(1.0, steps=100.0).steps == 100
    assert isinstance(hs.cosine(1.0, steps=100.0).steps, int)
    assert hs.cosine(1.0, steps=2.5).steps == 2.5


def test_piecewise_new_value_applies_at_boundary_by_default_and_one_step_late_inclusive():
    default = hs.piecewise([10], [1.0, 0.5])
    keras_like = hs.piecewise([10], [1.0, 0.5], inclusive=True)
    assert [float(v) for v in default([9, 10, 11])] == [1.0, 0.5, 0.5]
    assert [float(v) for v in keras_like([9, 10, 11])] == [1.0, 1.0, 0.5]


def test_cosine_holds_end_past_steps_and_periodic_returns_to_start():
    hold = hs.cosine(1.0, steps=10, end=0.2)
    periodic = hs.cosine(1.0, steps=10, end=0.2, past_end="periodic")
    ref.assert_close(hold([0, 10, 15, 30]), [1.0, 0.2, 0.2, 0.2])
    ref.assert_close(periodic([0, 10, 15, 20]), [1.0, 0.2, 0.6, 1.0])


def test_cosine_restarts_restart_exactly_at_each_period_start_in_float32():
    # t_mul=2: periods start at 10 * (2**k - 1); t_mul=3 at 7 * (3**k - 1) / 2
    for steps, t_mul, count in [(10, 2.0, 20), (7, 3.0, 13), (1, 2.0, 23), (8, 1.5, 6)]:
        starts = [steps * (t_mul**k - 1) / (t_mul - 1) for k in range(count)]
        starts = np.array([s for s in starts if s.is_integer() and s < 2**24])
        s = hs.cosine_restarts(1.0, steps, t_mul=t_mul, m_mul=0.5, end=0.0)
        at = s(starts)
        np.testing.assert_allclose(at, 0.5 ** np.arange(len(starts)), rtol=1e-6)
        before = s(starts[1:] - 1)  # the last step of each period is close to the end
        expected = ref.cosine_restarts(1.0, steps, t_mul, 0.5)(starts[1:] - 1)
        np.testing.assert_allclose(before, expected, rtol=1e-5, atol=1e-7)


def test_one_cycle_torch_peaks_one_step_before_optax():
    torch_like = hs.one_cycle(1.0, steps=100)
    optax_like = hs.one_cycle(1.0, steps=100, compat="optax")
    assert float(torch_like(29)) == pytest.approx(1.0)
    assert float(optax_like(30)) == pytest.approx(1.0)
    ref.assert_close(torch_like([99, 100, 300]), [4e-6] * 3)
    ref.assert_close(optax_like([99, 100, 300]), [optax_like(99), 4e-6, 4e-6])
    assert float(optax_like(99)) > 4e-6


def test_exponential_end_is_a_floor_when_decaying_and_a_ceiling_when_growing():
    assert float(hs.exponential(1.0, 0.5, every=1, end=0.2)(10)) == pytest.approx(0.2)
    assert float(hs.exponential(1.0, 2.0, every=1, end=5.0)(10)) == pytest.approx(5.0)


def test_exponential_power_is_corrected_for_float32_rounding_of_rate():
    # float32(0.9) ** 300 is off by 300 * 2.6e-8 = 8e-6 relative; the corrected power is not
    steps = np.arange(0, 3001, 100)
    ours = hs.exponential(1.0, 0.9, every=10)(steps)
    np.testing.assert_allclose(ours, 0.9 ** (steps / 10), rtol=1e-6)


def test_values_keep_the_shape_of_the_steps():
    steps = np.arange(12).reshape(3, 4)
    for name, kwargs, *_ in CASES:
        out = getattr(hs, name)(**kwargs)(steps)
        assert tuple(out.shape) == (3, 4), name
    assert tuple(hs.cosine(1.0, 10)(5).shape) == ()


@pytest.mark.parametrize(("name", "kwargs", "end", "boundaries"), CASES[::3], ids=IDS[::3])
def test_vectorized_10k_steps_equal_per_step_scalar_calls(name, kwargs, end, boundaries):
    s = getattr(hs, name)(**kwargs)
    steps = np.arange(10_000)
    vector = np.asarray(s(steps))
    probe = np.concatenate([np.arange(0, 10_000, 331), [9_999]])
    scalars = np.array([float(s(int(t))) for t in probe])
    # equal up to float32 rounding: TF's vectorized sin/log kernels may differ by one ulp
    # from its scalar ones
    ref.assert_close(vector[probe], scalars)


def test_tf_function_over_a_schedule_traces_once_across_1000_steps():
    s = hs.one_cycle(1.0, steps=1000) * 0.5 + hs.piecewise([100], [0.0, 0.1])
    traces = []

    @tf.function
    def at(step):
        traces.append(1)
        return s(step)

    values = [float(at(tf.constant(t, tf.int64))) for t in range(1000)]
    assert len(traces) == 1
    ref.assert_close(values, s(np.arange(1000)))


def test_integer_and_float_step_dtypes_give_the_same_values():
    s = hs.cosine_restarts(1.0, steps=10)
    a = s(np.arange(100, dtype=np.int64))
    b = s(tf.range(100, dtype=tf.int32))
    c = s(np.arange(100, dtype=np.float64))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)


@pytest.mark.parametrize(("name", "kwargs", "end", "boundaries"), CASES, ids=IDS)
def test_family_repr_parses_back_to_an_equal_schedule(name, kwargs, end, boundaries):
    s = getattr(hs, name)(**kwargs)
    back = parse(repr(s))
    assert repr(back) == repr(s)
    steps = ref.grid(end, *boundaries)
    np.testing.assert_array_equal(back(steps), s(steps))


def test_polynomial_cycle_is_the_same_inside_tf_function_at_every_cycle_end():
    # TensorFlow's graph rewrites s / steps as s * (1 / steps): at s = k * steps that can be
    # a hair above k, and ceil() then jumped a whole cycle (23 million ulp at step 1000)
    import tensorflow as tf

    s = hs.polynomial(0.1, 0.001, 500, power=2.0, cycle=True)
    traced = tf.function(s.__call__, autograph=False)
    for step in range(0, 3001, 250):
        eager = np.float32(s(tf.constant(step, tf.int64)))
        assert np.float32(traced(tf.constant(step, tf.int64))) == eager, step
        if step % 500 == 0 and step > 0:
            assert eager == np.float32(0.001)  # each cycle ends at `end`


def values(schedule, steps) -> np.ndarray:
    return np.asarray(schedule(np.asarray(steps)), dtype=np.float64)


def close(ours, expected, scale=1.0) -> None:
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-7 * scale)


def test_linear_with_a_fractional_begin_and_length() -> None:
    steps = np.arange(0, 40)
    t = np.clip((steps - 2.5) / 12.5, 0, 1)
    close(values(hs.linear(3.0, -1.0, 12.5, begin=2.5), steps), 3.0 + (-1.0 - 3.0) * t, 3.0)


def test_exponential_staircase_after_begin_with_a_floor() -> None:
    steps = np.arange(0, 120)
    p = np.floor(np.maximum(steps - 10, 0) / 7)
    expected = np.maximum(np.where(steps <= 10, 0.5, 0.5 * 0.8**p), 0.1)
    schedule = hs.exponential(0.5, 0.8, 7, staircase=True, begin=10, end=0.1)
    close(values(schedule, steps), expected)


def test_exponential_matches_keras_exponential_decay_without_begin() -> None:
    keras_schedule = keras.optimizers.schedules.ExponentialDecay(0.3, 9, 0.7)
    steps = np.arange(0, 60)
    expected = [float(keras_schedule(int(s))) for s in steps]
    close(values(hs.exponential(0.3, 0.7, 9), steps), expected)


def test_inverse_time_matches_keras_inverse_time_decay() -> None:
    for staircase in (False, True):
        keras_schedule = keras.optimizers.schedules.InverseTimeDecay(0.2, 5, 0.3, staircase)
        steps = np.arange(0, 40)
        expected = np.array([float(keras_schedule(int(s))) for s in steps])
        ours = values(hs.inverse_time(0.2, 0.3, 5, staircase=staircase), steps)
        np.testing.assert_array_equal(ours, expected)  # the same float32 operations


def test_polynomial_cycle_after_begin() -> None:
    start, end, steps_, power, begin = 1.0, 0.1, 10, 2.0, 5
    grid = np.arange(0, 60)
    s = np.maximum(grid - begin, 0)
    horizon = steps_ * np.maximum(np.ceil(s / steps_), 1)
    expected = end + (start - end) * ((horizon - s) / horizon) ** power
    schedule = hs.polynomial(start, end, steps_, power=power, cycle=True, begin=begin)
    close(values(schedule, grid), expected)


@pytest.mark.parametrize(
    ("schedule", "natural"),
    [
        (hs.linear(0.0, 1.0, 30, begin=5), 35),
        (hs.polynomial(1.0, 0.0, 40, begin=10), 50),
        (hs.polynomial(1.0, 0.0, 40, cycle=True), None),
        (hs.exponential(1.0, 0.5, 10), None),
        (hs.inverse_time(1.0, 0.5, 10), None),
    ],
)
def test_natural_steps_is_where_the_decay_ends(schedule, natural) -> None:
    assert schedule.natural_steps == natural


def test_inverse_time_refuses_a_rate_beyond_float32() -> None:
    with pytest.raises(InvalidArgumentError, match=r"float32.s range.*Received: rate=3\.5e\+38"):
        hs.inverse_time(1.0, 3.5e38, 10)
    assert math.isfinite(float(hs.inverse_time(1.0, 1e-46, 10)(5)))  # a rate rounding to 0


def triangle(step, up, down):
    """torch CyclicLR's position in the cycle, 0 -> 1 -> 0, in float64."""
    total = up + down
    s = step - total * np.floor(step / total)
    return np.where(s <= up, s / up, (total - s) / down)


def test_triangular2_halves_the_amplitude_every_cycle() -> None:
    low, high, up, down = 0.2, 1.2, 6, 3
    steps = np.arange(0, 9 * 5)
    k = np.floor(steps / (up + down))
    expected = low + (high - low) * triangle(steps, up, down) * 0.5**k
    close(values(hs.cyclic(low, high, up, down, mode="triangular2"), steps), expected)
    tops = values(hs.cyclic(low, high, up, down, mode="triangular2"), [6, 15, 24, 33])
    close(tops - low, (high - low) * 0.5 ** np.arange(4))


def test_exp_range_scales_by_gamma_to_the_step() -> None:
    steps = np.arange(200)
    expected = 0.1 + 0.9 * triangle(steps, 7, 7) * 0.97**steps
    close(values(hs.cyclic(0.1, 1.0, 7, mode="exp_range", gamma=0.97), steps), expected)


def test_exp_range_refuses_a_growing_gamma_naming_when_it_overflows() -> None:
    overflow = math.log(3.4e38) / math.log(1.01)
    with pytest.raises(InvalidArgumentError, match=rf"at most 1.*after {overflow:.0f} steps.*"
                       r"Received: gamma=1\.01"):  # fmt: skip
        hs.cyclic(0.1, 1.0, 10, mode="exp_range", gamma=1.01)
    hs.cyclic(0.1, 1.0, 10, mode="triangular", gamma=1.01)  # ignored outside exp_range


def _anneal_cos(a, b, t):
    return b + (a - b) * (1 + np.cos(np.pi * t)) / 2


def test_one_cycle_three_phase_with_optax_ends() -> None:
    peak, steps, pct = 2.0, 40, 0.25
    low, lowest = peak / 25.0, peak / 25.0 / 1e4
    ends = [int(pct * steps), 2 * int(pct * steps), steps]  # optax: 10, 20, 40
    grid = np.arange(0, 60)
    expected = np.select(
        [grid <= ends[0], grid <= ends[1]],
        [
            _anneal_cos(low, peak, grid / ends[0]),
            _anneal_cos(peak, low, (grid - ends[0]) / (ends[1] - ends[0])),
        ],
        _anneal_cos(low, lowest, np.clip((grid - ends[1]) / (ends[2] - ends[1]), 0, 1)),
    )
    schedule = hs.one_cycle(peak, steps, pct_start=pct, three_phase=True, compat="optax")
    close(values(schedule, grid), expected, scale=peak)
    assert values(schedule, [10, 20, 40]).tolist() == pytest.approx([peak, low, lowest])


def test_one_cycle_linear_anneal_is_a_straight_line_in_each_phase() -> None:
    schedule = hs.one_cycle(1.0, 100, anneal="linear", div_factor=10.0, final_div_factor=100.0)
    grid = np.arange(0, 130)
    expected = np.where(
        grid <= 29, 0.1 + 0.9 * grid / 29, 1.0 + (1e-3 - 1.0) * np.clip((grid - 29) / 70, 0, 1)
    )
    close(values(schedule, grid), expected)


def test_one_cycle_start_and_end_replace_the_division_factors() -> None:
    grid = np.arange(0, 130)
    given = hs.one_cycle(1.0, 100, div_factor=7.0, final_div_factor=3.0, start=0.3, end=0.2)
    expected = np.where(
        grid <= 29,
        _anneal_cos(0.3, 1.0, grid / 29),
        _anneal_cos(1.0, 0.2, np.clip((grid - 29) / 70, 0, 1)),
    )
    close(values(given, grid), expected)
    # only `end` given: the start still comes from div_factor, and the reverse
    close(values(hs.one_cycle(1.0, 100, end=0.2), [0, 99]), [1.0 / 25.0, 0.2])
    close(values(hs.one_cycle(1.0, 100, start=0.5), [0, 99]), [0.5, 0.5 / 1e4], scale=0.5)


def test_one_cycle_start_and_end_survive_config_and_repr() -> None:
    schedule = hs.one_cycle(0.85, 50, start=0.95, end=0.9, three_phase=True)
    assert repr(schedule) == "one_cycle(0.85, steps=50, three_phase=True, start=0.95, end=0.9)"
    rebuilt = type(schedule).from_config(schedule.get_config())
    grid = np.arange(0, 80)
    np.testing.assert_array_equal(values(rebuilt, grid), values(schedule, grid))


def test_natural_steps_one_cycle_ends_cyclic_never_does() -> None:
    assert hs.one_cycle(1.0, 250).natural_steps == 250
    assert hs.cyclic(0.1, 1.0, 10).natural_steps is None


def test_an_empty_optax_phase_is_refused_naming_its_end() -> None:
    with pytest.raises(InvalidArgumentError, match=r"empty phase.*steps=3.*compat='optax'.*"
                       r"end at step 0, not after step 0"):  # fmt: skip
        hs.one_cycle(1.0, 3, compat="optax")
