"""hyperstep demo: a short real training run with a hyperstep schedule."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import hyperstep as hs
from hyperstep.cli import demo
from hyperstep.cli.main import main


def test_demo_trains_and_writes_its_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out), "--epochs", "2", "--seed", "1"]) == 0
    printed = capsys.readouterr().out
    assert "validation accuracy:" in printed and "after 2 epochs" in printed
    assert (out / "schedule.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["epochs"] == 2 and metrics["steps"] == 2 * 45
    assert 0.5 < metrics["val_accuracy"] <= 1.0  # chance is 0.1
    schedule = hs.parse(metrics["schedule"])
    assert float(schedule(0)) == 0.0


def test_learning_rate_warms_up_for_an_epoch_then_decays_to_zero() -> None:
    schedule = demo.learning_rate(steps_per_epoch=45, epochs=20)
    steps = np.array([0, 45, 900])
    np.testing.assert_allclose(
        np.asarray(schedule(steps)), [0.0, demo.PEAK_LEARNING_RATE, 0.0], atol=1e-9
    )
    ramp = np.asarray(schedule(np.arange(46)))
    assert np.all(np.diff(ramp) > 0)


def test_data_is_the_bundled_digits_split_80_20() -> None:
    data = demo.load_data(seed=0)
    assert data.x_train.shape == (1437, 64) and data.x_val.shape == (360, 64)
    assert data.x_train.min() >= 0.0 and data.x_train.max() <= 1.0
    assert set(np.unique(data.y_train)) == set(range(10))
