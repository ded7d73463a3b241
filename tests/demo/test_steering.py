"""The demo steered from outside: ``train(..., control=DIR)`` (``hyperstep demo --control``)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path
from typing import Any

import keras
import numpy as np

from hyperstep.cli.main import main
from hyperstep.demo import train


class SendAt(keras.callbacks.Callback):
    """Write a command into the control directory when the clock reaches ``step``, as a
    second shell would (``hyperstep set DIR learning_rate=1e-4``)."""

    def __init__(self, directory: Path, step: int) -> None:
        super().__init__()
        self.directory, self.step = directory, step

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        if int(self.model.optimizer.clock.step.numpy()) == self.step:
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(["set", str(self.directory), "learning_rate=1e-4"]) == 0


def test_a_demo_run_takes_a_learning_rate_from_outside_and_logs_it_from_that_step(
    tmp_path: Path,
) -> None:
    out, control = tmp_path / "demo", tmp_path / "control"
    with contextlib.redirect_stdout(io.StringIO()):
        summary = train(out, 1, train_size=320, control=control, callbacks=[SendAt(control, 4)])
    assert summary["status"] == "complete"
    journal = [json.loads(x) for x in (control / "journal.jsonl").read_text().splitlines()]
    [applied] = [e for e in journal if e.get("status") == "applied"]
    assert applied["step"] == 4  # written after update 3: the next update takes it
    with open(out / "hyperparameters.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    rates = {int(r["step"]): float(r["learning_rate"]) for r in rows}
    new = float(np.float32(1e-4))  # the override variable's float32
    assert rates[3] != new and all(rates[t] == new for t in rates if t >= 4)
