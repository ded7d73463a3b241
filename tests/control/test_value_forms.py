"""Units of hyperstep.control.value_forms: ``exact_value``, ``ClockEpoch`` and the host and
float64 forms of a hyperparameter's value (``host_float``, ``exact_at``)."""

from __future__ import annotations

import numpy as np
import pytest

import hyperstep as hs
from hyperstep.clock import Clock
from hyperstep.control.value_forms import ClockEpoch, constant_pieces, exact_value, host_values
from hyperstep.schedules.language import parse


def _f64(x) -> float:
    value = np.asarray(x)
    assert value.dtype == np.float64
    return float(value)


def test_exact_value_keeps_constants_exact() -> None:
    assert _f64(exact_value(parse("0.9"), 3.0)) == 0.9  # not float32(0.9) widened
    where = parse("where(step < 5, 0.9, 0.8)")
    assert [_f64(exact_value(where, s)) for s in (0.0, 4.0, 5.0)] == [0.9, 0.9, 0.8]


def test_exact_value_multiplies_by_a_right_constant_in_float64() -> None:
    schedule = parse("where(step < 1, 0.9, 0.8) * 0.1")
    assert _f64(exact_value(schedule, 0.0)) == 0.9 * 0.1
    assert _f64(exact_value(schedule, 2.0)) == 0.8 * 0.1


def test_exact_value_elsewhere_is_the_float32_value_widened() -> None:
    schedule = parse("1 - step / 3")
    expected = float(np.float32(1) - np.float32(1) / np.float32(3))
    assert _f64(exact_value(schedule, 1.0)) == expected
    left = parse("0.1 * where(step < 1, 0.9, 0.8)")  # a constant on the left: float32
    assert _f64(exact_value(left, 0.0)) == float(np.float32(np.float32(0.1) * np.float32(0.9)))


def test_clock_epoch_reads_the_clock() -> None:
    clock = Clock(steps_per_epoch=4)
    epoch = ClockEpoch(clock)
    assert repr(epoch) == "epoch" and epoch.arguments() == {}
    steps = np.arange(10, dtype="float32")
    np.testing.assert_array_equal(np.asarray(epoch(steps)), np.floor(steps / 4))


def test_an_unbound_epoch_in_a_hyperparameter_follows_its_clock() -> None:
    hp = hs.Hyperparameter("0.5 ** epoch", name="x", clock=Clock(steps_per_epoch=3))
    np.testing.assert_allclose(np.asarray(hp.at([0, 2, 3, 7])), [1, 1, 0.5, 0.25], rtol=1e-6)


def test_host_float_matches_at_and_reads_state() -> None:
    hp = hs.Hyperparameter("0.1 * (1 - step / 3000)", name="lr")
    for step in (0, 1, 1023, 1024, 2000, 5):  # table refills and a jump back
        assert np.float32(hp.host_float(step)) == np.float32(hp.at(step)), step
    hp.scale.assign(0.5)
    assert np.float32(hp.host_float(10)) == np.float32(hp.at(10))
    hp.override.assign(0.03)
    assert hp.host_float(10) == float(np.float32(0.03))


def test_host_float_of_a_constant_is_its_python_number() -> None:
    assert hs.Hyperparameter(0.1, name="lr").host_float(99) == 0.1


def test_host_float_is_none_where_the_general_path_is_needed() -> None:
    hp = hs.Hyperparameter("0.1", name="lr")
    hp.cooldown_start.assign(0)  # a started cooldown
    assert hp.host_float(3) is None


def test_exact_at_is_float64_with_scale_and_override() -> None:
    hp = hs.Hyperparameter(0.9, name="beta")
    assert _f64(hp.exact_at(0.0)) == 0.9
    hp.scale.assign(0.5)
    assert _f64(hp.exact_at(0.0)) == 0.9 * float(np.float32(0.5))
    hp.override.assign(0.25)
    assert _f64(hp.exact_at(0.0)) == 0.25


@pytest.mark.parametrize("text", ["0.9", "where(step < 2, 0.9, 0.99)"])
def test_exact_at_rounds_to_at(text: str) -> None:
    hp = hs.Hyperparameter(text, name="beta")
    for step in (0.0, 3.0):
        assert np.float32(hp.exact_at(step)) == np.float32(hp.at(step))


def test_constant_pieces_are_a_constant_and_the_constant_branches_of_wheres() -> None:
    assert constant_pieces(parse("0.9")) == (0.9,)
    text = "where(step < 5, 0.9, where(step < 9, 0.8 * step, 0.7))"
    assert constant_pieces(parse(text)) == (0.9, 0.7)
    assert constant_pieces(parse("0.9 * (1 - step / 100)")) == ()
    # a folded `where` is its float32 value, as in exact_value: no piece
    assert constant_pieces(parse("where(1 < 2, 0.9, 0.8)")) == ()


def test_host_values_give_a_constant_piece_its_python_number() -> None:
    steps = np.arange(0, 12, dtype="float32")
    got = host_values(parse("where(step < 5, 0.9, where(step < 9, 0.5 + step / 10, 0.7))"), steps)
    assert got.dtype == np.float64
    assert got[:5].tolist() == [0.9] * 5  # exact, not float32(0.9)
    assert got[9:].tolist() == [0.7] * 3
    ramp = np.asarray(parse("0.5 + step / 10")(steps[5:9]))
    assert got[5:9].tolist() == ramp.astype(np.float64).tolist()  # the float32 values


def test_host_float_gives_a_where_piece_the_constant_python_number() -> None:
    clock = Clock()
    hp = hs.Hyperparameter(parse("where(step < 3, 0.9, 0.5 * (1 - step / 100))"), clock=clock)
    assert hp.host_float(0) == 0.9
    assert hp.host_float(2) == 0.9
    assert hp.host_float(3) == float(np.float32(0.5 * (1 - np.float32(3) / 100)))
