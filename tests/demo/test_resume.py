"""The demo: SIGKILL mid-run, the same call again, and the uninterrupted result.

A subprocess runs the demo's training and kills itself with SIGKILL in the middle of its second
epoch (nothing gets to clean up: the per-step CSV holds rows past the last checkpoint).
Calling it again in this process must resume from the checkpoint and end with the
same ``hyperparameters.csv``, ``metrics.csv`` and bit-identical weights (model and
optimizer) as an uninterrupted run. ``plateau_min_delta=10`` makes every epoch after the
first a non-improvement, so the plateau halves the learning rate's scale after the last
epoch only if its ``best``/``wait`` state was saved before the kill and restored.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hyperstep.demo import train

SPE = 8  # 256 training images in batches of 32
ARGS: dict[str, Any] = {"epochs": 3, "plateau_min_delta": 10.0, "train_size": SPE * 32}
KILL_AT = SPE + 3  # in the second epoch
#: the killed run: the demo's training with a callback that SIGKILLs at KILL_AT
SCRIPT = """
import os, signal, sys
import keras
from hyperstep.demo import train

class Kill(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        if int(self.model.optimizer.clock.step.numpy()) == {kill}:
            os.kill(os.getpid(), signal.SIGKILL)

train(sys.argv[1], callbacks=[Kill()], **{args})
"""


def run_demo(out: Path) -> tuple[dict[str, Any], str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        summary = train(out, **ARGS)
    return summary, printed.getvalue()


def steps_in(path: Path) -> list[int]:
    with open(path, newline="") as f:
        return [int(row["step"]) for row in csv.DictReader(f) if row["step"]]


@pytest.mark.slow  # a kill loop: three runs of the demo's training, one in a fresh process
def test_sigkill_then_the_same_command_ends_like_the_uninterrupted_run(
    tmp_path: Path, assert_same_run: Any, hang_timeout: float
) -> None:
    out, reference = tmp_path / "killed", tmp_path / "uninterrupted"
    script = SCRIPT.format(kill=KILL_AT, args=ARGS)
    killed = subprocess.run(
        [sys.executable, "-c", script, str(out)],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True,
        text=True,
        timeout=hang_timeout,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-2000:] + killed.stderr[-2000:]
    state = json.loads((out / "checkpoint" / "state.json").read_text())
    assert (state["epoch"], state["step"]) == (1, SPE)
    assert not (out / "summary.json").exists()

    summary, printed = run_demo(out)
    assert summary["status"] == "complete", printed[-3000:]
    assert f"resuming from epoch 1 / step {SPE}" in printed
    assert "epoch  2/3" in printed and "epoch  1/3" not in printed
    summary, printed = run_demo(reference)
    assert summary["status"] == "complete", printed[-3000:]

    assert steps_in(out / "hyperparameters.csv") == list(range(3 * SPE))
    assert_same_run(out, reference)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resumed_from"] == {"epoch": 1, "step": SPE}
    assert summary["learning_rate_scale"] == 0.5  # wait counted epochs 2 and 3: one before the kill
    assert json.loads((reference / "summary.json").read_text())["learning_rate_scale"] == 0.5
