"""The demo's training run: every file of the run directory, the doctor's verdict, Ctrl-C
and resume, a damaged or locked run directory.

One uninterrupted 2-epoch run (module fixture) is checked file by file against closed
forms of its schedules; a second run is stopped with a real SIGINT mid-epoch, resumed by
the same call, and must end with the same per-step CSV, metrics and bit-identical
weights. The SIGKILL test (a separate process) is in ``test_demo_resume.py``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import signal
import struct
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest

import hyperstep.demo.model as demo_model
from hyperstep.cli import demo as demo_cli
from hyperstep.cli.main import main
from hyperstep.demo import train

EPOCHS, SPE = 2, 45  # 1,437 training images in batches of 32
STEPS = EPOCHS * SPE
#: the hyperparameters that move (the constant ones are not logged by default)
HYPERPARAMETERS = ["learning_rate", "weight_decay", "temperature/learning_rate"]


def run_demo(*args: str) -> tuple[int, str]:
    """Run ``hyperstep demo ARGS`` in this process; return the status and what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        status = main(["demo", *args])
    return status, printed.getvalue()


def train_quietly(*args: Any, **kwargs: Any) -> tuple[dict[str, Any], str]:
    """Call the demo's training function; return the summary and what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        summary = train(*args, **kwargs)
    return summary, printed.getvalue()


class InterruptAt(keras.callbacks.Callback):
    """Send this process ``signum`` when the clock reaches ``step`` (a Ctrl-C)."""

    def __init__(self, step: int, signum: int = signal.SIGINT) -> None:
        super().__init__()
        self.step, self.signum = step, signum

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        if int(self.model.optimizer.clock.step.numpy()) == self.step:
            os.kill(os.getpid(), self.signum)


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def closed_forms(step: np.ndarray) -> dict[str, np.ndarray]:
    """The demo's schedules for a 2-epoch run, written out (float64)."""
    peak, total = demo_model.PEAK_LEARNING_RATE, STEPS
    start = end = peak / 100
    t = np.clip((step - SPE) / (total - SPE), 0.0, 1.0)
    cosine = end + (peak - end) * (1 + np.cos(np.pi * t)) / 2
    return {
        "learning_rate": np.where(step < SPE, start + (peak - start) * step / SPE, cosine),
        "weight_decay": 0.05 * step / total,
        "temperature/learning_rate": 0.02 * (1 + np.cos(np.pi * step / total)) / 2,
    }


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("demo") / "run"
    status, printed = run_demo("--out", str(out), "--epochs", str(EPOCHS))
    assert status == 0, printed[-3000:]
    return out, printed


def test_per_step_csv_has_one_column_per_moving_hyperparameter_matching_the_schedules(
    finished: tuple[Path, str],
) -> None:
    out, _ = finished
    header, rows = read_rows(out / "hyperparameters.csv")
    assert header == ["step", "epoch", *(c for n in HYPERPARAMETERS for c in (n, f"{n}/override"))]
    assert all(r[f"{n}/override"] == "" for r in rows for n in HYPERPARAMETERS)  # none set
    step = np.array([int(r["step"]) for r in rows])
    np.testing.assert_array_equal(step, np.arange(STEPS))
    assert [int(r["epoch"]) for r in rows] == list(step // SPE)
    for name, expected in closed_forms(step).items():
        value = np.array([float(r[name]) for r in rows])
        np.testing.assert_allclose(value, expected, rtol=2e-6, atol=1e-9, err_msg=name)
    assert (out / "hyperparameters.csv").stat().st_size < 100 * STEPS  # was ~290 bytes a row


def test_metrics_csv_has_keras_metrics_temperature_and_hyperparameters_per_epoch(
    finished: tuple[Path, str],
) -> None:
    out, _ = finished
    header, rows = read_rows(out / "metrics.csv")
    expected = {"epoch", "accuracy", "loss", "val_accuracy", "val_loss", "temperature"}
    plateau = {"plateau_reductions", "learning_rate_scale", "learning_rate_override"}
    assert set(header) == expected | plateau | set(HYPERPARAMETERS)
    assert all(r["learning_rate_override"] == "nan" for r in rows)  # no override was set
    assert [int(r["epoch"]) for r in rows] == list(range(EPOCHS))
    ends = closed_forms(np.arange(1, EPOCHS + 1) * SPE)  # the value the next update uses
    for name in ("learning_rate", "weight_decay", "temperature/learning_rate"):
        logged = [float(r[name]) for r in rows]
        np.testing.assert_allclose(logged, ends[name], rtol=2e-6, atol=1e-9, err_msg=name)
    assert all(0.0 < float(r["loss"]) < 10.0 and math.isfinite(float(r["val_loss"])) for r in rows)
    assert all(float(r["temperature"]) != 1.0 for r in rows)  # it trains


def test_tensorboard_has_every_hyperparameter_as_a_per_step_scalar(
    finished: tuple[Path, str],
) -> None:
    import tensorflow as tf

    out, _ = finished
    (events,) = (out / "tensorboard" / "hyperparameters").glob("events.out.tfevents.*")
    seen: dict[str, list[int]] = {}
    for event in tf.compat.v1.train.summary_iterator(str(events)):
        for value in event.summary.value:
            seen.setdefault(value.tag, []).append(event.step)
    assert seen.pop("total") == [0]  # the run's length, once, at the fit's first step
    assert sorted(seen) == sorted(HYPERPARAMETERS)
    assert all(steps == list(range(STEPS)) for steps in seen.values())
    assert list((out / "tensorboard" / "train").glob("events.out.tfevents.*"))
    assert list((out / "tensorboard" / "validation").glob("events.out.tfevents.*"))


def test_report_is_a_png_of_sensible_size(finished: tuple[Path, str]) -> None:
    out, _ = finished
    data = (out / "report.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1500, 860)
    assert len(data) > 50_000  # six panels of curves, not an empty canvas


def test_summary_records_a_clean_doctor_and_the_accuracy(finished: tuple[Path, str]) -> None:
    out, printed = finished
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["resumed_from"] is None
    assert summary["doctor"]["ok"] is True and summary["doctor"]["findings"] == []
    assert summary["doctor"]["variables"] == 7
    assert summary["config"] == {"epochs": EPOCHS, "seed": 0, "batch_size": 32}
    assert (summary["epochs"], summary["steps"], summary["steps_per_epoch"]) == (2, 90, 45)
    assert 0.8 < summary["val_accuracy"] <= 1.0  # chance is 0.1
    assert set(summary["files"]) == {
        "metrics",
        "hyperparameters",
        "tensorboard",
        "report",
        "summary",
        "weights",
    }
    assert all(Path(path).exists() for path in summary["files"].values())
    assert not (out / "checkpoint").exists()  # a finished run keeps model.weights.h5 only
    assert "pre-flight check: hs.doctor: 7 variables examined" in printed
    assert "no findings" in printed and "validation accuracy" in printed
    assert str(out / "report.png") in printed
    lines = [line for line in printed.splitlines() if line.startswith("epoch ")]
    assert [line.split()[1] for line in lines] == ["1/2", "2/2"]
    assert all(len(line) <= 120 and "val_loss" in line for line in lines)


def test_a_finished_run_is_reported_not_retrained_and_other_arguments_are_refused(
    finished: tuple[Path, str],
) -> None:
    out, _ = finished
    before = (out / "hyperparameters.csv").read_bytes()
    status, printed = run_demo("--out", str(out), "--epochs", str(EPOCHS))
    assert status == 0 and "holds a finished run (add --fresh" in printed
    assert "Epoch 1/" not in printed and (out / "hyperparameters.csv").read_bytes() == before
    status, printed = run_demo("--out", str(out), "--epochs", "3")
    assert status == 2
    assert "'epochs': 2" in printed and "'epochs': 3" in printed and "--fresh" in printed


@pytest.mark.slow
def test_ctrl_c_leaves_a_consistent_run_that_resumes_to_identical_results(
    assert_same_run: Any, finished: tuple[Path, str], tmp_path: Path
) -> None:
    reference, _ = finished
    out = tmp_path / "run"
    # Python's own Ctrl-C handler, as in a terminal (a pytest-xdist worker replaces it)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        summary, printed = train_quietly(out, EPOCHS, callbacks=[InterruptAt(50)])
    finally:
        signal.signal(signal.SIGINT, previous)
    assert "Traceback" not in printed
    assert (summary["status"], summary["epoch"], summary["step"]) == ("interrupted", 1, 45)
    assert json.loads((out / "summary.json").read_text())["status"] == "interrupted"
    _, rows = read_rows(out / "hyperparameters.csv")  # cut back to the checkpoint
    assert [int(r["step"]) for r in rows] == list(range(45))
    assert len(read_rows(out / "metrics.csv")[1]) == 1

    summary, printed = train_quietly(out, EPOCHS)
    assert summary["status"] == "complete" and "resuming from epoch 1 / step 45" in printed
    assert_same_run(out, reference)


def test_the_command_tells_how_to_resume_an_interrupted_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import hyperstep.demo

    interrupted = {"status": "interrupted", "epoch": 1, "step": 45}
    monkeypatch.setattr(hyperstep.demo, "train", lambda *args, **kwargs: interrupted)
    out = tmp_path / "run"
    status, printed = run_demo("--out", str(out), "--epochs", "2")
    assert status == demo_cli.INTERRUPTED
    assert f"interrupted. {out} holds the run after epoch 1 (step 45)" in printed
    assert f"run `hyperstep demo --out {out} --epochs 2` again to resume" in printed


def test_data_is_the_bundled_digits_split_80_20_in_a_fixed_order_per_epoch() -> None:
    data = demo_model.load_data(seed=0)
    assert data.x_train.shape == (1437, 64) and data.x_val.shape == (360, 64)
    assert data.x_train.min() >= 0.0 and data.x_train.max() <= 1.0
    assert set(np.unique(data.y_train)) == set(range(10))
    first: Any = demo_model.epoch_order(0, 3, 1437)
    np.testing.assert_array_equal(first, demo_model.epoch_order(0, 3, 1437))
    assert sorted(first) == list(range(1437))
    assert not np.array_equal(first, demo_model.epoch_order(0, 4, 1437))


def test_missing_demo_extras_are_named_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Without its extras (here TensorBoard and matplotlib) the demo says what to install
    and exits 2 before training, instead of failing in the first batch."""
    import importlib.util

    find_spec = importlib.util.find_spec
    gone = {"tensorboard", "matplotlib"}
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name in gone else find_spec(name, *args),
    )
    status, printed = run_demo("--out", str(tmp_path / "run"))
    assert status == 2 and "needs matplotlib, tensorboard, not installed" in printed
    assert "pip install 'hyperstep[demo]'" in printed and not (tmp_path / "run").exists()
