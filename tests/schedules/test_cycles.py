"""The units of hyperstep.schedules.cycles (``cyclic`` and ``one_cycle``), through the public
``hs.schedules`` names: float64 closed forms for the cases the torch and optax parity tests
leave out, the phase placement, ``natural_steps`` and the errors."""

import math

import numpy as np
import pytest

import hyperstep.schedules as hs
from hyperstep.errors import InvalidArgumentError


def values(schedule, steps) -> np.ndarray:
    return np.asarray(schedule(np.asarray(steps)), dtype=np.float64)


def close(ours, expected, scale=1.0) -> None:
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-7 * scale)


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
