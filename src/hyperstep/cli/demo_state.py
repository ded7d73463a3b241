"""The demo's run directory: its files, its checkpoint, and what resuming keeps.

A checkpoint is written at the end of every epoch: the model's weights together with the
optimizer's (which hold the clock, every hyperparameter's scale/override and the plateau
controller's ``best``/``wait``/``cooldown``) in ``checkpoint/epoch-K.weights.h5``, then
``checkpoint/state.json`` naming it, replaced atomically. A run killed at any point
therefore resumes from the last complete epoch; rows the logs got after it are dropped
(:func:`truncate_logs`), so the resumed files equal an uninterrupted run's.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: the files and folders a run writes (and ``--fresh`` removes), by role
FILES = {
    "metrics": "metrics.csv",
    "hyperparameters": "hyperparameters.csv",
    "tensorboard": "tensorboard",
    "report": "report.png",
    "summary": "summary.json",
    "weights": "model.weights.h5",
    "checkpoint": "checkpoint",
}


@dataclass(frozen=True)
class Checkpoint:
    """Where an interrupted run stopped: ``epoch`` epochs and ``step`` updates done."""

    epoch: int
    step: int
    weights: Path
    config: dict[str, Any]


def paths(out: Path) -> dict[str, Path]:
    """Return ``{role: path}`` for the files of the run directory ``out``."""
    return {role: out / name for role, name in FILES.items()}


def read_json(path: Path) -> dict[str, Any] | None:
    """Return the JSON object in ``path``, or None if it is missing or unreadable."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def write_json(path: Path, value: dict[str, Any]) -> None:
    """Write ``value`` to ``path`` atomically (a temporary file, then ``os.replace``)."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(value, indent=2) + "\n")
    os.replace(temporary, path)


def latest_checkpoint(out: Path) -> Checkpoint | None:
    """Return the last complete epoch's checkpoint in ``out``, or None."""
    folder = paths(out)["checkpoint"]
    state = read_json(folder / "state.json")
    if state is None:
        return None
    weights = folder / str(state.get("weights", ""))
    if not weights.is_file():
        return None
    return Checkpoint(int(state["epoch"]), int(state["step"]), weights, dict(state["config"]))


def save_checkpoint(model: Any, out: Path, epoch: int, step: int, config: dict[str, Any]) -> None:
    """Save the weights after ``epoch`` epochs (``step`` updates), then point state.json at
    them; older weight files are removed only once the new state is in place."""
    folder = paths(out)["checkpoint"]
    folder.mkdir(parents=True, exist_ok=True)
    name = f"epoch-{epoch:04d}.weights.h5"
    model.save_weights(folder / name)
    write_json(
        folder / "state.json",
        {"epoch": epoch, "step": step, "weights": name, "config": config},
    )
    for old in folder.glob("epoch-*.weights.h5"):
        if old.name != name:
            old.unlink()


def truncate_csv(path: Path, column: str, stop: int) -> int:
    """Keep the header and the rows whose ``column`` is below ``stop``; return how many."""
    if not path.is_file():
        return 0
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return 0
    index = rows[0].index(column)
    kept = [r for r in rows[1:] if len(r) == len(rows[0]) and int(float(r[index])) < stop]
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", newline="") as f:
        csv.writer(f).writerows([rows[0], *kept])
    os.replace(temporary, path)
    return len(kept)


def truncate_logs(out: Path, epoch: int, step: int) -> None:
    """Drop the log rows written after the checkpoint (epoch ``epoch``, step ``step``)."""
    files = paths(out)
    truncate_csv(files["metrics"], "epoch", epoch)
    truncate_csv(files["hyperparameters"], "step", step)


def clear(out: Path) -> None:
    """Remove the files a run writes (and only those) from ``out``."""
    for path in paths(out).values():
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()


def remove_checkpoint(out: Path) -> None:
    """Remove the checkpoint of a finished run (its weights are in ``model.weights.h5``)."""
    folder = paths(out)["checkpoint"]
    if folder.is_dir():
        shutil.rmtree(folder)
