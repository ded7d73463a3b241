"""The units of hyperstep.schedules.wsd: ``decay_factor`` against its float64 closed forms,
``wsd`` and ``inverse_sqrt`` with empty phases and their defaults (the Hugging Face parity
is in tests/schedules/test_hf.py)."""

import numpy as np
import pytest
from keras import ops

import hyperstep.schedules as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError
from hyperstep.schedules.wsd import DECAY_TYPES, decay_factor


def close(ours, expected, scale=1.0) -> None:
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-7 * scale)


REFERENCE = {
    "linear": lambda p, cycles: 1 - p,
    "cosine": lambda p, cycles: (1 + np.cos(2 * np.pi * cycles * p)) / 2,
    "1-sqrt": lambda p, cycles: 1 - np.sqrt(p),
    "minus_sqrt": lambda p, cycles: 1 - np.sqrt(p),
    "exponential": lambda p, cycles: 2 * 0.5**p - 1,
}


@pytest.mark.parametrize("shape", DECAY_TYPES)
@pytest.mark.parametrize("cycles", [0.5, 1.5])
def test_decay_factor_is_its_closed_form(shape, cycles) -> None:
    done = np.arange(0, 81, dtype=np.float64)
    got = ops.convert_to_numpy(decay_factor(shape, ops.convert_to_tensor(done), 80, cycles))
    close(got, REFERENCE[shape](done / 80, cycles))
    assert float(got[0]) == 1.0


def test_wsd_without_warmup_starts_at_peak_and_without_decay_drops_at_the_end() -> None:
    schedule = hs.wsd(2.0, 0, 10, 0, min_ratio=0.25)
    got = np.asarray(schedule(np.arange(15)), dtype=np.float64)
    assert got.tolist() == [2.0] * 10 + [0.5] * 5
    assert schedule.natural_steps == 10


def test_wsd_cosine_warmup_and_1_sqrt_decay_with_a_min_ratio() -> None:
    peak, w, s, d, m = 1.5, 8, 4, 12, 0.1
    steps = np.arange(0, 40)
    f = np.select(
        [steps < w, steps < w + s, steps < w + s + d],
        [
            (1 - np.cos(np.pi * steps / w)) / 2,
            np.ones_like(steps, dtype=float),
            1 - np.sqrt(np.clip(steps - w - s, 0, d) / d),
        ],
        0.0,
    )
    schedule = hs.wsd(peak, w, s, d, warmup_type="cosine", decay_type="1-sqrt", min_ratio=m)
    close(np.asarray(schedule(steps), dtype=np.float64), peak * (m + (1 - m) * f), peak)


def test_inverse_sqrt_without_warmup_uses_a_10000_step_timescale() -> None:
    steps = np.array([0, 1, 10_000, 30_000])
    got = np.asarray(hs.inverse_sqrt(2.0, 0)(steps), dtype=np.float64)
    close(got, 2.0 / np.sqrt((steps + 10_000) / 10_000), 2.0)
    assert hs.inverse_sqrt(2.0, 0).natural_steps is None


def test_bad_shapes_and_ratios_name_the_argument_and_value() -> None:
    with pytest.raises(InvalidArgumentError, match=r"`wsd\(warmup_type=\.\.\.\)`.*'exp'"):
        hs.wsd(1.0, 1, 1, 1, warmup_type="exp")
    with pytest.raises(InvalidArgumentError, match=r"`wsd\(decay_type=\.\.\.\)`.*'sqrt'"):
        hs.wsd(1.0, 1, 1, 1, decay_type="sqrt")
    with pytest.raises(InvalidTypeError, match=r"Received: min_ratio='0'"):
        hs.wsd(1.0, 1, 1, 1, min_ratio="0")
    with pytest.raises(InvalidArgumentError, match=r"`inverse_sqrt\(timescale=\.\.\.\)`.*=0"):
        hs.inverse_sqrt(1.0, 10, timescale=0)


COOLDOWN_REFERENCE = {
    "linear": lambda p: 1 - p,
    "cosine": lambda p: (1 + np.cos(np.pi * p)) / 2,
    "1-sqrt": lambda p: 1 - np.sqrt(p),
    "minus_sqrt": lambda p: 1 - np.sqrt(p),
    "exponential": lambda p: 2 * 0.5**p - 1,
}


@pytest.mark.parametrize("shape", DECAY_TYPES)
def test_cooldown_is_its_float64_closed_form_rounded_once(shape) -> None:
    steps = np.arange(0, 60, dtype=np.float64)
    value, end, start, length = 0.858, 0.001, 8, 13
    p = np.clip(steps - start, 0, length) / length
    expected = end + (value - end) * COOLDOWN_REFERENCE[shape](p)
    got = np.asarray(hs.cooldown(value, start, length, shape, end)(steps.astype(np.float32)))
    assert got.dtype == np.float32
    # float64 throughout, rounded once: within one float32 rounding of the closed form
    np.testing.assert_allclose(got, expected, rtol=2**-23, atol=0)
    assert got[0] == np.float32(value) and got[start] == np.float32(value)
    assert (got[start + length :] == np.float32(end)).all()


def test_cooldown_reads_back_and_reaches_its_end() -> None:
    from hyperstep.schedules.language import parse

    schedule = hs.cooldown(1e-3, 600, 300, shape="cosine")
    assert repr(schedule) == "cooldown(0.001, 600, 300, shape='cosine')"
    again = parse(repr(schedule))
    steps = np.arange(0, 1000, dtype=np.float32)
    assert np.asarray(again(steps)).tobytes() == np.asarray(schedule(steps)).tobytes()
    assert schedule.natural_steps == 900


def test_cooldown_arguments_name_the_argument_and_value() -> None:
    with pytest.raises(InvalidArgumentError, match=r"shape.*'square'"):
        hs.cooldown(1.0, 0, 10, shape="square")
    with pytest.raises(InvalidArgumentError, match=r"steps"):
        hs.cooldown(1.0, 0, 0)
    with pytest.raises(InvalidArgumentError, match=r"start"):
        hs.cooldown(1.0, -1, 10)


def test_cooled_value_is_the_closed_form_in_float64() -> None:
    from hyperstep.schedules.wsd import cooled_value

    done = ops.convert_to_tensor(np.arange(0, 11, dtype=np.float64))
    steps = ops.convert_to_tensor(10.0, dtype="float64")
    for shape in DECAY_TYPES:
        got = ops.convert_to_numpy(cooled_value(2.0, 0.5, done, steps, shape))
        p = np.arange(0, 11) / 10
        np.testing.assert_allclose(got, 0.5 + 1.5 * COOLDOWN_REFERENCE[shape](p), rtol=1e-15)
