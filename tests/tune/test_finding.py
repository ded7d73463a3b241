"""The units of hyperstep.tune.finding: ``ramp`` against NumPy's geomspace and linspace, its
argument checks, and ``LRFinding``'s own rules on hand-made series (Lightning's and fastai's
rules on random series are in tests/tune/test_lr_find_parity.py)."""

import json
import math

import numpy as np
import pytest

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError
from hyperstep.tune.finding import check_ramp, ramp


def test_exponential_ramp_is_geomspace_with_both_ends_exact() -> None:
    rates = ramp(1e-7, 3.0, 57)
    assert rates.dtype == np.float64 and len(rates) == 57
    np.testing.assert_allclose(rates, np.geomspace(1e-7, 3.0, 57), rtol=1e-13)
    assert rates[0] == 1e-7 and rates[-1] == 3.0


def test_linear_ramp_is_linspace() -> None:
    rates = ramp(0.01, 0.5, 11, mode="linear")
    np.testing.assert_allclose(rates, np.linspace(0.01, 0.5, 11), rtol=1e-15)
    assert rates[-1] == 0.5 and ramp(1, 2, 2, "linear").tolist() == [1.0, 2.0]


@pytest.mark.parametrize(
    ("args", "error", "text"),
    [
        ((0.0, 1.0, 10, "linear"), InvalidArgumentError, "min_lr=0.0"),
        ((1e-3, math.inf, 10, "linear"), InvalidArgumentError, "max_lr=inf"),
        ((True, 1.0, 10, "linear"), InvalidTypeError, "min_lr=True"),
        (("1", 1.0, 10, "linear"), InvalidTypeError, "min_lr='1'"),
        ((1.0, 1.0, 10, "linear"), InvalidArgumentError, "larger than min_lr=1.0"),
        ((1e-3, 1.0, np.int64(1), "linear"), InvalidArgumentError, "at least 2 steps"),
        ((1e-3, 1.0, 10.0, "linear"), InvalidTypeError, "steps=10.0"),
        ((1e-3, 1.0, 10, "log"), InvalidArgumentError, "mode='log'"),
    ],
)
def test_check_ramp_names_the_argument_and_value(args, error, text) -> None:
    with pytest.raises(error, match=f"find_lr.*{text.replace('.', '[.]')}"):
        check_ramp(*args)
    check_ramp(np.float32(1e-3), 1.0, np.int32(2), "exponential")  # NumPy scalars are numbers


def _finding(losses, mode="exponential", steps=None) -> hs.LRFinding:
    lrs = ramp(1e-4, 1.0, len(losses), mode)
    return hs.LRFinding(lrs, losses, losses, steps=steps or len(losses), mode=mode)


def test_suggestion_is_the_steepest_fall_on_the_ramps_axis() -> None:
    x = np.log(ramp(1e-4, 1.0, 40))
    losses = 2.0 - np.tanh(x - np.log(1e-2))  # falls fastest at lr = 1e-2 (on log lr)
    finding = _finding(losses)
    slopes = np.gradient(losses[10:39], x[10:39])
    assert finding.suggestion() == finding.learning_rates[10 + int(np.argmin(slopes))]
    assert finding.suggestion() == pytest.approx(1e-2, rel=0.3)
    by_rate = np.gradient(losses[10:39], finding.learning_rates[10:39])
    lightning = finding.suggestion(compat="lightning")
    assert lightning == finding.learning_rates[10 + int(np.argmin(by_rate))]


def test_too_few_points_give_none_and_a_bad_compat_raises() -> None:
    finding = _finding(np.linspace(3.0, 1.0, 12))
    assert finding.suggestion(skip_begin=10, skip_end=1) is None  # one point left
    assert _finding(np.full(8, np.nan)).suggestion(skip_begin=0) is None
    assert finding.valley(skip_begin=12) is None
    with pytest.raises(InvalidArgumentError, match=r"Received: compat='fastai'"):
        finding.suggestion(compat="fastai")


def test_valley_is_two_thirds_down_the_longest_fall() -> None:
    # a fall over points 2..11 (10 points), then a rise: fastai's start is one before it
    losses = np.concatenate([[0.5, 0.6], np.linspace(5.0, 1.0, 10), np.linspace(1.5, 4.0, 8)])
    finding = _finding(losses, steps=20)
    start, end = 1, 11  # end: the last of the run; start = end - 10
    sections = (end - start) / 3
    expected = start + int(sections) + int(sections / 2)
    assert finding.valley(skip_begin=0, skip_end=0) == finding.learning_rates[expected]
    # points from the first nan on are dropped
    cut = losses.copy()
    cut[5] = np.nan
    assert _finding(cut).valley(skip_begin=0, skip_end=0) == finding.learning_rates[2]


def test_post_init_converts_and_checks_lengths() -> None:
    finding = hs.LRFinding([0.1, 0.2], [1, 2], [1, 2], steps=2)
    assert finding.losses.dtype == np.float64
    with pytest.raises(InvalidArgumentError, match=r"2 learning rates, 1 losses and 2 raw"):
        hs.LRFinding([0.1, 0.2], [1.0], [1.0, 2.0], steps=2)


def test_to_dict_is_strict_json_and_repr_shows_the_suggestions() -> None:
    losses = np.concatenate([np.linspace(3.0, 1.0, 25), [np.inf, np.nan]])
    finding = hs.LRFinding(ramp(1e-4, 1.0, 27), losses, losses, steps=40, stopped_early=True)
    data = json.loads(json.dumps(finding.to_dict(), allow_nan=False))
    assert data["losses"][-2:] == [None, None] and data["steps_taken"] == 27
    assert data["steps"] == 40 and data["stopped_early"] is True
    assert data["valley"] == finding.valley()
    text = repr(finding)
    assert text.startswith("LRFinding(steps=27 of 40, suggestion=") and "stopped_early=True" in text
    assert "valley=None" in repr(_finding(np.full(3, np.nan)))
