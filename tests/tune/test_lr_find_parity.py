"""find_lr's rules against the real PyTorch Lightning (``pytorch_lightning.tuner.lr_finder``)
and against fastai's published ``valley`` (fastai itself is not installed: an independent
transcription of its source, cited below, is the reference)."""

from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import Any

import keras
import numpy as np
import pytest
import torch

import hyperstep as hs
from hyperstep.tune.finding import ramp
from hyperstep.tune.lr_find import _RangeTest


def _lr_finder() -> Any:
    """``pytorch_lightning.tuner.lr_finder``, imported where a test uses it (seconds that
    the pytest processes running the other files do not spend collecting this one)."""
    from pytorch_lightning.tuner import lr_finder

    return lr_finder


def _walks(count: int, seed: int = 0) -> list[np.ndarray]:
    """Random walks of losses: down, flat, then up, with noise; lengths 2 to 120."""
    rng = np.random.default_rng(seed)
    walks = []
    for _ in range(count):
        n = int(rng.integers(2, 121))
        drift = np.concatenate([np.full(n // 2, -0.05), np.full(n - n // 2, 0.08)])
        walks.append(3.0 + np.cumsum(drift + rng.normal(0, 0.1, n)))
    return walks


# ---- the ramp -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "scheduler"), [("exponential", "_ExponentialLR"), ("linear", "_LinearLR")]
)
def test_lightning_skips_the_first_ratio_ours_is_even_from_min_to_max(
    mode: str, scheduler: str
) -> None:
    """Lightning's ramp records ``min_lr`` and then the value of step 2 of ``num_training``
    (``_ExponentialLR.get_lr`` uses ``(last_epoch + 1) / num_iter`` once ``last_epoch > 0``):
    one step of the ramp is skipped. Ours is even, both ends included."""
    n, low, high = 20, 1e-6, 1.0
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=low)
    ramp_class = getattr(_lr_finder(), scheduler)(optimizer, high, n)
    seen = []
    for _ in range(n):  # as _LRCallback: read before the step, scheduler stepped after it
        seen.append(ramp_class.lr[0])
        optimizer.step()
        ramp_class.step()
    ours = ramp(low, high, n, mode)
    if mode == "exponential":
        lightning = [low] + [low * (high / low) ** (k / n) for k in range(2, n + 1)]
        np.testing.assert_allclose(ours, np.geomspace(low, high, n), rtol=1e-13)
        np.testing.assert_allclose(np.diff(np.log(ours)), np.log(high / low) / (n - 1), 1e-9)
    else:
        lightning = [low] + [low + k / n * (high - low) for k in range(2, n + 1)]
        np.testing.assert_allclose(ours, np.linspace(low, high, n), rtol=1e-13)
    np.testing.assert_allclose(seen, lightning, rtol=1e-13)
    assert seen[0] == ours[0] == low and ours[-1] == high
    assert not np.allclose(seen[1], ours[1])  # Lightning's second value is step 2 of n


# ---- smoothing and the early stop -----------------------------------------------------


def _lightning_callback(raw: np.ndarray, beta: float, stop_factor: float | None) -> list[float]:
    """Lightning's own ``_LRCallback`` fed ``raw``, stopping when it says so.

    In a real run ``trainer.global_step`` already counts the batch's update when
    ``on_train_batch_end`` runs (``test_lightning_global_step_counts_the_update``), so the
    stub passes ``k + 1`` for batch ``k``.
    """
    callback = _lr_finder()._LRCallback(len(raw), early_stop_threshold=stop_factor, beta=beta)
    trainer = SimpleNamespace(
        fit_loop=SimpleNamespace(batch_idx=0),
        accumulate_grad_batches=1,
        should_stop=False,
        global_step=0,
        strategy=SimpleNamespace(broadcast=lambda value: value),
    )
    for k, loss in enumerate(raw):
        trainer.fit_loop.batch_idx, trainer.global_step = k, k + 1
        output = {"loss": torch.tensor(loss, dtype=torch.float64)}
        callback.on_train_batch_end(trainer, None, output, None, k)
        if trainer.should_stop:
            break
    return list(callback.losses)


class _Model:
    stop_training = False


def _ours(raw: np.ndarray, smoothing: float, stop_factor: float | None) -> _RangeTest:
    """find_lr's own callback fed ``raw`` the same way."""
    rates = ramp(1e-6, 1.0, len(raw))
    test = _RangeTest(rates, None, stop_factor, smoothing, 0, 1, None)  # type: ignore[arg-type]
    model = _Model()
    test.set_model(model)  # type: ignore[arg-type]
    for k, loss in enumerate(raw):
        test.on_train_batch_end(k, {"loss": loss})
        if model.stop_training:
            break
    return test


@pytest.mark.parametrize("stop_factor", [4.0, 1.5, None])
def test_early_stop_is_lightnings_on_the_same_smoothed_losses(stop_factor: float | None) -> None:
    """``smoothing=0`` makes both smoothed series the raw losses: the stop (first step after
    the first whose loss exceeds ``stop_factor`` x the best so far, that step included)
    and the recorded values then agree exactly."""
    stopped = 0
    for raw in _walks(200, seed=1):
        raw = np.exp(raw - 3.0)  # positive, as losses are
        ours = _ours(raw, 0.0, stop_factor)
        lightning = _lightning_callback(raw, 0.0, stop_factor)
        assert ours.smoothed == lightning
        stopped += ours.stopped
    assert stopped > 20 if stop_factor == 1.5 else True  # the rule was exercised


def test_smoothing_is_lightnings_average_with_the_textbook_bias_correction() -> None:
    """Both keep ``avg(k) = beta * avg(k-1) + (1 - beta) * loss(k)``; we divide by
    ``1 - beta ** (k + 1)`` (the first smoothed loss is the first loss, as fastai's
    ``AvgSmoothLoss``); Lightning by ``1 - beta ** (global_step + 1)``, one step later, so its
    first smoothed loss is ``loss(0) / (1 + beta)``: about half (Lightning issue 14167)."""
    beta = 0.98
    for raw in _walks(50, seed=2):
        ours = np.array(_ours(raw, beta, None).smoothed)
        lightning = np.array(_lightning_callback(raw, beta, None))
        k = np.arange(len(raw))
        np.testing.assert_allclose(
            ours * (1 - beta ** (k + 1)), lightning * (1 - beta ** (k + 2)), rtol=1e-12
        )
        assert ours[0] == raw[0]
        np.testing.assert_allclose(lightning[0], raw[0] / (1 + beta), rtol=1e-12)


def test_a_non_finite_loss_ends_our_test_lightning_runs_on() -> None:
    raw = np.linspace(2.0, 1.0, 30)
    raw[12] = np.nan
    ours = _ours(raw, 0.98, 4.0)
    assert ours.stopped and len(ours.smoothed) == 13
    assert len(_lightning_callback(raw, 0.98, 4.0)) == 30  # nan > x is False: no stop


def test_lightning_global_step_counts_the_update() -> None:
    """A real ``Tuner.lr_find``: its first smoothed loss is ``loss(0) * (1 - beta) / (1 -
    beta ** 2)``, i.e. ``global_step`` is 1 in ``on_train_batch_end`` of batch 0."""
    import logging

    import pytorch_lightning as pl

    raw: list[float] = []

    class Module(pl.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.layer, self.lr = torch.nn.Linear(4, 1), 1e-3

        def training_step(self, batch: Any, index: int) -> Any:
            x, y = batch
            loss = torch.nn.functional.mse_loss(self.layer(x), y)
            raw.append(loss.item())
            return loss

        def configure_optimizers(self) -> Any:
            return torch.optim.SGD(self.parameters(), lr=self.lr)

    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
    trainer = pl.Trainer(
        max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, default_root_dir=None,
    )  # fmt: skip
    logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
    with warnings.catch_warnings():  # Lightning's hints (workers, log intervals) and torch's
        warnings.simplefilter("ignore")  # pytree deprecations inside Lightning
        finder = pl.tuner.Tuner(trainer).lr_find(
            Module(), torch.utils.data.DataLoader(data, batch_size=8), num_training=8,
            early_stop_threshold=None,
        )  # fmt: skip
    assert finder is not None
    np.testing.assert_allclose(finder.results["loss"][0], raw[0] * 0.02 / (1 - 0.98**2))


# ---- suggestion -----------------------------------------------------------------------


def _lightning_suggestion(mode: str, lrs: np.ndarray, losses: np.ndarray) -> float | None:
    finder = _lr_finder()._LRFinder(mode, float(lrs[0]), float(lrs[-1]), len(lrs))
    finder.results = {"lr": [float(v) for v in lrs], "loss": [float(v) for v in losses]}
    return finder.suggestion()  # type: ignore[no-any-return]


def _with_bad_values(losses: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    losses = losses.copy()
    for _ in range(int(rng.integers(0, 4))):
        losses[int(rng.integers(0, len(losses)))] = rng.choice([np.nan, np.inf, -np.inf])
    return losses


def test_suggestion_is_lightnings_on_the_same_series() -> None:
    """Random walks with nan and +-inf, lengths 2 to 120 (too short -> None in both):
    linear ramps as they are; exponential ramps with ``compat="lightning"`` (Lightning
    differentiates by the learning rate) and, by default, differentiated by
    ``log(lr)``: Lightning's rule given the log learning rates as its coordinates."""
    rng = np.random.default_rng(3)
    nones = 0
    for walk in _walks(300, seed=4):
        losses = _with_bad_values(walk, rng)
        n = len(losses)
        linear = hs.LRFinding(ramp(1e-3, 1.0, n, "linear"), losses, losses, n, "linear")
        exponential = hs.LRFinding(ramp(1e-7, 1.0, n), losses, losses, n)
        expected = _lightning_suggestion("linear", linear.learning_rates, losses)
        assert linear.steepest() == expected
        assert linear.steepest(compat="lightning") == expected
        expected = _lightning_suggestion("exponential", exponential.learning_rates, losses)
        assert exponential.steepest(compat="lightning") == expected
        log_lrs = np.log(exponential.learning_rates)
        in_log = _lightning_suggestion("exponential", log_lrs, losses)
        ours = exponential.steepest()
        assert (ours is None) == (in_log is None)
        if ours is not None:
            assert ours == exponential.learning_rates[list(log_lrs).index(in_log)]
        nones += ours is None
    assert nones > 3  # short series were among them


def test_lightning_picks_the_first_point_kept_on_an_exponential_ramp_ours_the_steepest() -> None:
    """The reason for the default: a loss that falls fastest at lr = 1e-2 on a ramp from
    1e-8 to 1 (Lightning issue 21141)."""
    lrs = ramp(1e-8, 1.0, 100)
    losses = 2.0 - np.tanh(np.log10(lrs) + 2.0)
    finding = hs.LRFinding(lrs, losses, losses, 100)
    assert finding.steepest(compat="lightning") == lrs[10]
    assert 0.5e-2 < finding.steepest() < 2e-2  # type: ignore[operator]


# ---- valley: fastai -------------------------------------------------------------------


def fastai_valley(lrs: list[float], losses: list[float]) -> float:
    """fastai's ``valley`` as published in fastai/callback/schedule.py (fastai 2.x,
    https://github.com/fastai/fastai/blob/master/fastai/callback/schedule.py, function
    ``valley``), transcribed: the longest strictly decreasing subsequence of losses found by
    dynamic programming, then the point two thirds down it."""
    n = len(losses)
    max_start, max_end = 0, 0
    lds = [1] * n
    for i in range(1, n):
        for j in range(0, i):
            if (losses[i] < losses[j]) and (lds[i] < lds[j] + 1):
                lds[i] = lds[j] + 1
            if lds[max_end] < lds[i]:
                max_end = i
                max_start = max_end - lds[max_end]
    sections = (max_end - max_start) / 3
    idx = max_start + int(sections) + int(sections / 2)
    return float(lrs[idx])


def fastai_lr_find_suggestion(lrs: np.ndarray, losses: np.ndarray, num_it: int) -> float | None:
    """What ``Learner.lr_find`` (same file) hands ``valley``: the recorded series without
    the first ``num_it // 10`` and the last 5 points, cut at the first nan."""
    lrs, losses = lrs[num_it // 10 : -5], losses[num_it // 10 : -5]
    nans = np.flatnonzero(np.isnan(losses))
    if len(nans):
        lrs, losses = lrs[: nans[0]], losses[: nans[0]]
    if len(losses) == 0:
        return None  # fastai itself fails here (an index into an empty list)
    return fastai_valley(list(lrs), list(losses))


def test_valley_is_fastais_on_the_same_series() -> None:
    rng = np.random.default_rng(5)
    checked = 0
    for walk in _walks(300, seed=6):
        losses = walk.copy()
        if rng.random() < 0.3:
            losses[int(rng.integers(0, len(losses))) :] = np.nan
        n = len(losses)
        steps = int(rng.integers(n, 2 * n + 1))  # num_it: the steps asked for
        lrs = ramp(1e-7, 10.0, n)
        finding = hs.LRFinding(lrs, losses, losses, steps=steps)
        assert finding.valley() == fastai_lr_find_suggestion(lrs, losses, steps)
        checked += finding.valley() is not None
    assert checked > 200


def test_find_lr_on_a_model_gives_the_rules_of_its_series() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 8)).astype("float32")
    y = (x @ rng.normal(size=(8, 1))).astype("float32")
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(), loss="mse")
    finding = hs.find_lr(model, x, y, min_lr=1e-4, max_lr=3.0, steps=60, verbose=0)
    lrs, losses = finding.learning_rates, finding.losses
    assert finding.steepest(compat="lightning") == _lightning_suggestion("exponential", lrs, losses)
    assert finding.valley() == fastai_lr_find_suggestion(lrs, losses, 60)
