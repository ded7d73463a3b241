"""sample(): a schedule on a grid of steps, in one vectorized call."""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.schedules import Schedule, sample


class Counting(Schedule):
    """``value(step) = 2 * step``, counting how many times it is evaluated."""

    keyword = ""

    def __init__(self) -> None:
        self.calls = 0

    def value(self, step: Any) -> Any:
        self.calls += 1
        return step * 2.0

    def arguments(self) -> dict[str, Any]:
        return {}


def test_every_step_is_sampled_in_one_call() -> None:
    schedule = Counting()
    steps, values = sample(schedule, 1000)
    assert schedule.calls == 1
    np.testing.assert_array_equal(steps, np.arange(1000))
    np.testing.assert_array_equal(values, 2.0 * np.arange(1000, dtype=np.float32))
    assert steps.dtype == np.int64 and values.dtype == np.float32


def test_num_gives_evenly_spaced_integer_steps_from_zero_to_the_end() -> None:
    schedule = Counting()
    steps, values = sample(schedule, 10_001, num=7)
    assert schedule.calls == 1
    assert steps.tolist() == [0, 1667, 3333, 5000, 6667, 8333, 10_000]
    np.testing.assert_array_equal(values, 2.0 * steps.astype(np.float32))


@pytest.mark.parametrize(("steps", "num"), [(10, 3), (1000, 999), (97, 10), (5, 5), (5, 50)])
def test_num_never_repeats_a_step_and_covers_both_ends(steps: int, num: int) -> None:
    grid, _ = sample("step", steps, num=num)
    assert grid[0] == 0 and grid[-1] == steps - 1
    assert len(grid) == min(num, steps)
    gaps = np.diff(grid)
    assert gaps.min() >= 1 and gaps.max() - gaps.min() <= 1


def test_values_equal_scalar_calls_of_a_real_schedule() -> None:
    schedule = hs.schedules.warmup(hs.schedules.cosine(1e-3, steps=500), steps=100)
    steps, values = sample(schedule, 700, num=50)
    expected = [float(schedule(int(s))) for s in steps]
    np.testing.assert_allclose(values, expected, rtol=1e-6)


def test_accepts_numbers_expressions_and_keras_schedules() -> None:
    _, constant = sample(0.5, 4)
    np.testing.assert_array_equal(constant, np.full(4, 0.5, np.float32))
    _, formula = sample("step / 10", 4)
    np.testing.assert_allclose(formula, np.arange(4) / 10, rtol=1e-6)
    peer = keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    steps, values = sample(peer, 40, num=9)
    expected = [float(peer(int(s))) for s in steps]
    np.testing.assert_allclose(values, expected, rtol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"steps": 0}, r"sample\(steps=\.\.\.\)` must be a positive integer. Received: steps=0"),
        ({"steps": -3}, r"Received: steps=-3"),
        ({"steps": 2.5}, r"Received: steps=2.5"),
        (
            {"steps": 10, "num": 0},
            r"sample\(num=\.\.\.\)` must be a positive integer. Received: num=0",
        ),
        ({"steps": 2**40}, r"at most 100,000,000; pass e.g. `num=10_000`.*steps=1099511627776"),
    ],
)
def test_bad_arguments_name_the_argument_and_the_value(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        sample("step", **kwargs)


def test_num_samples_any_number_of_steps() -> None:
    steps, values = sample("step", 2**40, num=3)
    assert steps.tolist() == [0, 2**39, 2**40 - 1]
    np.testing.assert_allclose(values, steps.astype(np.float32), rtol=1e-6)


def test_bad_schedule_is_refused_with_its_name() -> None:
    with pytest.raises(TypeError, match=r"Received: schedule=\[1, 2\]"):
        sample([1, 2], 10)
    with pytest.raises(ValueError, match=r"unknown name 'stpe'"):
        sample("stpe", 10)
