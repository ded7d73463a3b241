"""The demo steered from outside: ``train(..., control=DIR)`` (``hyperstep demo --control``)."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
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


def _reductions_by_the_rule(
    val_loss: list[float], patience: int, cooldown: int, delta: float
) -> list[int]:
    """The epochs (from 1) after which ReduceOnPlateau's documented default rule reduces:
    improvement ``value < best - min_delta``; otherwise, outside cooldown, ``wait += 1``;
    ``wait >= patience`` reduces, zeroes ``wait`` and starts ``cooldown``."""
    best, wait, cooling, found = math.inf, 0, 0, []
    for epoch, value in enumerate(val_loss, start=1):
        if value < best - delta:
            best, wait = value, 0
        elif cooling > 0:
            wait = 0
        else:
            wait += 1
        cooling = max(cooling - 1, 0)
        if wait >= patience:
            found.append(epoch)
            wait, cooling = 0, cooldown
    return found


def test_the_demo_report_tells_the_plateau_s_reductions_from_an_override_and_its_command(
    tmp_path: Path,
) -> None:
    from hyperstep.cli.demo import _print_summary

    out, control = tmp_path / "demo", tmp_path / "control"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        summary = train(
            out, 8, train_size=320, plateau_min_delta=0.5, control=control,
            callbacks=[SendAt(control, 25)],
        )  # fmt: skip
    with open(out / "metrics.csv", newline="") as f:
        val_loss = [float(r["val_loss"]) for r in csv.DictReader(f)]
    expected = _reductions_by_the_rule(val_loss, patience=2, cooldown=1, delta=0.5)
    assert expected and 3 not in expected  # the override at step 25 (epoch 3) is no reduction
    assert [(r["epoch"], r["step"]) for r in summary["plateau_reductions"]] == [
        (e, e * 10) for e in expected
    ]
    first = summary["plateau_reductions"][0]
    assert (first["scale_before"], first["scale"]) == (1.0, 0.5)
    assert first["held"] == float(np.float32(1e-4))  # the override held the value meanwhile
    assert summary["overrides"] == [
        {"name": "learning_rate", "value": float(np.float32(1e-4)), "from_step": 25, "to_step": 79}
    ]
    assert summary["commands"] == [
        {"step": 25, "verb": "set", "arguments": {"values": {"learning_rate": 0.0001}},
         "status": "applied"}
    ]  # fmt: skip
    assert json.loads((out / "summary.json").read_text())["commands"] == summary["commands"]
    lines = printed.getvalue().splitlines()
    at = lines.index(
        f"  ReduceOnPlateau: after epoch {expected[0]} (from step {expected[0] * 10}): scale 1 "
        "-> 0.5, while an override held learning_rate at 0.0001"
    )
    assert lines[at - 1].startswith(f"epoch  {expected[0]}/8  loss")  # after its epoch's line
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        _print_summary(summary)
    reduction_lines = [
        "  " + line.removeprefix("  ReduceOnPlateau: ")
        for line in lines
        if line.startswith("  ReduceOnPlateau: ")
    ]
    assert len(reduction_lines) == len(expected)
    assert shown.getvalue().splitlines()[1 : 6 + len(expected)] == [
        f"ReduceOnPlateau: {len(expected)} reduction{'s' * (len(expected) != 1)} (its own count):",
        *reduction_lines,
        "overrides: 1",
        "  learning_rate = 0.0001 from step 25 to 79",
        "commands (steering journal): 1",
        "  set learning_rate=0.0001 (applied, step 25)",
    ]
