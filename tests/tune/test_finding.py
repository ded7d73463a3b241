"""The units of hyperstep.tune.finding: ``ramp`` against NumPy's geomspace and linspace, its
argument checks, and ``LRFinding``'s own rules on hand-made series (Lightning's and fastai's
rules on random series are in tests/tune/test_lr_find_parity.py)."""

import json
import math

import numpy as np
import pytest
from scipy.ndimage import gaussian_filter1d
from scipy.stats import median_abs_deviation

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError
from hyperstep.tune.finding import CAP, CONFIDENT_FALL, FACTOR, WIDTH, ramp


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
def test_ramp_names_the_argument_and_value(args, error, text) -> None:
    with pytest.raises(error, match=f"find_lr.*{text.replace('.', '[.]')}"):
        ramp(*args)
    ramp(np.float32(1e-3), 1.0, np.int32(2), "exponential")  # NumPy scalars are numbers


def _finding(losses, mode="exponential", steps=None) -> hs.LRFinding:
    lrs = ramp(1e-4, 1.0, len(losses), mode)
    return hs.LRFinding(lrs, losses, losses, steps=steps or len(losses), mode=mode)


def test_steepest_is_the_steepest_fall_on_the_ramps_axis() -> None:
    x = np.log(ramp(1e-4, 1.0, 40))
    losses = 2.0 - np.tanh(x - np.log(1e-2))  # falls fastest at lr = 1e-2 (on log lr)
    finding = _finding(losses)
    slopes = np.gradient(losses[10:39], x[10:39])
    assert finding.steepest() == finding.learning_rates[10 + int(np.argmin(slopes))]
    assert finding.steepest() == pytest.approx(1e-2, rel=0.3)
    by_rate = np.gradient(losses[10:39], finding.learning_rates[10:39])
    lightning = finding.steepest(compat="lightning")
    assert lightning == finding.learning_rates[10 + int(np.argmin(by_rate))]


def test_too_few_points_give_none_and_bad_arguments_raise() -> None:
    finding = _finding(np.linspace(3.0, 1.0, 12))
    assert finding.steepest(skip_begin=10, skip_end=1) is None  # one point left
    assert _finding(np.full(8, np.nan)).steepest(skip_begin=0) is None
    assert _finding(np.full(8, np.nan)).suggestion() is None
    assert finding.valley(skip_begin=12) is None
    with pytest.raises(InvalidArgumentError, match=r"Received: compat='fastai'"):
        finding.steepest(compat="fastai")
    for factor, error in ((0, InvalidArgumentError), (-1.0, InvalidArgumentError),
                          (True, InvalidTypeError), ("3", InvalidTypeError)):  # fmt: skip
        with pytest.raises(error, match=f"suggestion\\(factor=.*Received: factor={factor!r}"):
            finding.suggestion(factor=factor)  # type: ignore[arg-type]


def _averaged(raw: np.ndarray, smoothing: float = 0.98) -> np.ndarray:
    """find_lr's bias-corrected moving average of ``raw`` (its docstring's formula)."""
    average, found = 0.0, []
    for k, loss in enumerate(raw):
        average = smoothing * average + (1 - smoothing) * loss
        found.append(average / (1 - smoothing ** (k + 1)))
    return np.array(found)


def _landscape(best: float, noise: float, seed: int = 0, steps: int = 100) -> hs.LRFinding:
    """A range test's raw losses from a known landscape on the default ramp (1e-8 to 1): a
    parabola in log10(lr) whose minimum is at ``best``, plus seeded Gaussian noise."""
    lrs = ramp(1e-8, 1.0, steps)
    raw = 1.0 + (np.log10(lrs) - np.log10(best)) ** 2
    raw += np.random.default_rng(seed).normal(0.0, noise, steps)
    return hs.LRFinding(lrs, _averaged(raw), raw, steps=steps)


@pytest.mark.parametrize("best", [1e-4, 3e-3, 0.1])
def test_suggestion_is_the_landscapes_minimum_divided_by_the_factor(best: float) -> None:
    finding = _landscape(best, noise=0.01)
    step = np.log(finding.learning_rates[1] / finding.learning_rates[0])  # one ramp step
    for factor in (FACTOR, 10.0):
        found = finding.suggestion(factor=factor)
        assert found is not None
        assert abs(np.log(found * factor / best)) <= 2 * step, (found, best)
    assert finding.warning is None


def test_a_noise_bump_after_the_start_does_not_move_the_suggestion() -> None:
    """The failure of the steepest rule: the average of the first few losses follows a bump
    right after the start, and its steepest fall is where the bump decays."""
    lrs = ramp(1e-8, 1.0, 100)
    raw = 2.0 - np.tanh(np.log10(lrs) + 3.0)  # falls around 1e-3, bottoms out later
    raw[lrs > 0.05] += 40 * (np.log10(lrs[lrs > 0.05]) - np.log10(0.05)) ** 2  # diverges
    smooth = hs.LRFinding(lrs, _averaged(raw), raw, steps=100)
    raw[9] += 6.0  # the bump, one step before the first point the steepest rule keeps
    finding = hs.LRFinding(lrs, _averaged(raw), raw, steps=100)
    assert 1e-3 < smooth.steepest() < 1e-1  # type: ignore[operator]
    assert finding.steepest() < 1e-6  # type: ignore[operator]
    assert finding.suggestion() == smooth.suggestion()
    assert 0.05 / 10 < finding.suggestion() < 0.05  # type: ignore[operator]
    assert finding.warning is None


def test_centred_is_a_gaussian_filter_of_the_capped_losses_up_to_the_first_non_finite() -> None:
    raw = np.random.default_rng(1).normal(2.0, 0.3, 40)
    raw[[24, 27]] = 1.8 * raw[:3].max(), 50.0  # a rise under the cap, a jump over it
    raw[30] = np.inf
    finding = hs.LRFinding(ramp(1e-4, 1.0, 40), raw, raw, steps=40)
    head = np.minimum(raw[:30], CAP * raw[:3].max())  # capped: the first tenth's highest x2
    # scipy's filter with zeros outside, divided by the same filter of ones: the kernel's
    # weights renormalised at the ends (truncate: the whole series)
    options = {"sigma": WIDTH, "mode": "constant", "cval": 0.0, "truncate": 40 / WIDTH}
    expected = gaussian_filter1d(head, **options) / gaussian_filter1d(np.ones(30), **options)
    np.testing.assert_allclose(finding.centred(), expected, rtol=1e-12)
    assert len(_finding(np.array([np.nan, 1.0])).centred()) == 0


@pytest.mark.parametrize(
    ("shape", "fewest", "most"), [("falls", 0, 0), ("flat", 18, 20), ("rises", 20, 20)]
)
def test_warning_says_when_the_curve_is_too_noisy(shape: str, fewest: int, most: int) -> None:
    """20 seeds of noise (sd 0.03) on a curve that falls by 2, on a flat one (warned at
    least 18 times: pure noise may look like a fall) and on one that only rises."""
    lrs = ramp(1e-8, 1.0, 100)
    x = np.log10(lrs)
    clean = {
        "falls": 2.0 - np.tanh(x + 3.0),
        "flat": np.full(100, 2.0),
        "rises": 2.0 + 0.2 * (x + 8),
    }[shape]
    found = []
    for seed in range(20):
        raw = clean + np.random.default_rng(seed).normal(0.0, 0.03, 100)
        finding = hs.LRFinding(lrs, _averaged(raw), raw, steps=100)
        found.append(finding.warning)
        # the rule: the fall after the first tenth, from that tenth's median, against
        # the noise (scipy's normal-scaled median absolute deviation of raw - centred)
        fall = np.median(raw[:10]) - finding.centred()[10:].min()
        noise = median_abs_deviation(raw - finding.centred(), scale="normal")
        assert (finding.warning is not None) == (fall <= CONFIDENT_FALL * noise)
    assert fewest <= sum(w is not None for w in found) <= most
    if most:
        line = next(w for w in found if w is not None)
        assert "too noisy to suggest with confidence" in line and "\n" not in line
        assert "noisy=True" in repr(finding) or finding.warning is None
    assert "too few finite losses" in str(_finding(np.array([1.0, np.nan, 2.0])).warning)


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
    assert data["suggestion"] == finding.suggestion() and data["steepest"] == finding.steepest()
    assert data["valley"] == finding.valley() and data["warning"] == finding.warning
    assert data["lightning"] == finding.steepest(compat="lightning")
    text = repr(finding)
    assert text.startswith("LRFinding(steps=27 of 40, suggestion=") and "stopped_early=True" in text
    assert "valley=None" in repr(_finding(np.full(3, np.nan)))
