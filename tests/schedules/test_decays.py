"""The units of hyperstep.schedules.decays (``linear``, ``exponential``, ``inverse_time``,
``polynomial``), through the public ``hs.schedules`` names: float64 closed forms for the
argument combinations tests/schedules/test_families.py leaves out, ``natural_steps`` and the
errors."""

import math

import keras
import numpy as np
import pytest

import hyperstep.schedules as hs
from hyperstep.errors import InvalidArgumentError


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
