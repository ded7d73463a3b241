"""The demo's ``report.png``: hyperparameters and metrics of a run, read from its CSV files.

Up to six panels on one epoch axis: the learning rates (log scale; the schedule alone
dashed, what the plateau controller made of it solid), weight decay, the trainable
temperature, loss, accuracy, and a text summary; series that never change are left
out. Every plateau reduction is a dotted vertical line. Drawn with matplotlib's Agg
canvas (no pyplot, no global state).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

Table = dict[str, np.ndarray]

_REDUCTION = {"color": "tab:red", "linestyle": ":", "linewidth": 1.2}


def read_csv(path: Path) -> Table:
    """Return ``{column: float array}`` from a CSV file (empty cells are NaN)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    return {
        name: np.array([float(r[i]) if r[i] != "" else math.nan for r in body], dtype=float)
        for i, name in enumerate(header)
    }


def plateau_reductions(
    steps: Table, schedule: np.ndarray, steps_per_epoch: int
) -> list[dict[str, Any]]:
    """Return each step from which ``learning_rate / schedule`` (the plateau's scale) is
    lower than before; ``schedule`` is the learning rate's schedule alone at ``steps``.

    Each item: ``step`` (the first update with the lower scale), ``after_epoch`` (the epoch
    whose ``val_loss`` triggered it, counted from 1), ``scale`` and ``learning_rate``.

    Example:
        >>> steps = {"step": np.arange(4.0), "learning_rate": np.array([1.0, 1.0, 0.5, 0.5])}
        >>> plateau_reductions(steps, np.ones(4), steps_per_epoch=2)
        [{'step': 2, 'after_epoch': 1, 'scale': 0.5, 'learning_rate': 0.5}]
    """
    scale = np.round(steps["learning_rate"] / schedule, 4)  # float32 values: 1e-4 is plenty
    found = []
    for i in np.flatnonzero(scale[1:] < scale[:-1]) + 1:
        step = int(steps["step"][i])
        found.append(
            {
                "step": step,
                "after_epoch": step // steps_per_epoch,
                "scale": float(scale[i]),
                "learning_rate": float(steps["learning_rate"][i]),
            }
        )
    return found


def write_report(
    path: Path,
    history: Table,
    steps: Table,
    schedule: np.ndarray,
    reductions: Sequence[dict[str, Any]],
    steps_per_epoch: int,
    notes: Sequence[str] = (),
    initial_temperature: float = 1.0,
) -> Path:
    """Draw the panels into ``path`` (1500 x 860 pixels); return the path.

    ``schedule`` is the learning rate's schedule alone at ``steps["step"]`` (drawn dashed
    under the value the plateau made of it). A series that never changes is left out, and
    a panel with nothing to show is not drawn.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(15, 8.6), dpi=100)
    FigureCanvasAgg(figure)
    grid = figure.subplots(2, 3, sharex=True)
    x = steps["step"] / steps_per_epoch  # the step axis, in epochs
    epochs = history["epoch"] + 1.0  # metrics are measured at the end of each epoch
    marks = [r["after_epoch"] for r in reductions]

    lr = grid[0, 0]
    lr.plot(x, schedule, "--", color="tab:blue", alpha=0.6, label="learning_rate: schedule alone")
    _series(lr, x, steps, "learning_rate", "learning_rate: schedule x plateau", "tab:blue")
    _series(lr, x, steps, "temperature/learning_rate", "temperature group's learning_rate",
            "tab:orange")  # fmt: skip
    lr.set_yscale("log")
    lr.set_title("learning rates (log scale)")

    wd = grid[0, 1]
    _series(wd, x, steps, "weight_decay", "weight_decay (linear schedule)", "tab:green")
    _series(wd, x, steps, "temperature/weight_decay", "temperature group's weight_decay",
            "tab:orange")  # fmt: skip
    wd.set_title("weight decay (AdamW, decoupled)")

    temperature = grid[0, 2]
    start = [0.0] if history["epoch"][0] == 0 else []  # the initial value, before epoch 1
    temperature.plot(np.concatenate([start, epochs]),
                     np.concatenate([[initial_temperature] * len(start), history["temperature"]]),
                     "o-", color="tab:purple", markersize=3,
                     label="temperature T (logits / T), trained")  # fmt: skip
    temperature.set_title("trainable temperature (its own group)")

    loss = grid[1, 0]
    loss.plot(epochs, history["loss"], "o-", markersize=3, label="training loss")
    loss.plot(epochs, history["val_loss"], "o-", markersize=3, label="validation loss")
    loss.set_yscale("log")
    loss.set_title("loss (log scale); ReduceOnPlateau watches val_loss")

    accuracy = grid[1, 1]
    accuracy.plot(epochs, history["accuracy"], "o-", markersize=3, label="training accuracy")
    accuracy.plot(epochs, history["val_accuracy"], "o-", markersize=3,
                  label="validation accuracy")  # fmt: skip
    accuracy.axhline(0.95, color="gray", linewidth=0.8, label="95% target")
    final = float(history["val_accuracy"][-1])
    accuracy.annotate(f"{final:.1%}", (epochs[-1], final), textcoords="offset points",
                      xytext=(-30, -18), fontweight="bold")  # fmt: skip
    lowest = float(np.nanmin(np.concatenate([history["accuracy"], history["val_accuracy"]])))
    accuracy.set_ylim(max(0.0, min(0.9, lowest) - 0.03), 1.005)  # every point inside
    accuracy.set_title("accuracy")

    for axes in grid.flat[:5]:
        if not axes.lines:
            axes.axis("off")  # nothing to show: no axes, no title over an empty area
            axes.set_title("")
            continue
        _mark(axes, marks, label=axes is lr)
        axes.grid(True, alpha=0.3)
        axes.legend(loc="best", fontsize="small")
        axes.tick_params(labelbottom=True)  # shared x: label every panel, not just the last row
        axes.set_xlabel("epoch")

    text = grid[1, 2]
    text.axis("off")
    lines = [
        f"{len(reductions)} plateau reduction{'s' * (len(reductions) != 1)}"
        + (":" if reductions else ""),
        *(
            f"  after epoch {r['after_epoch']}: scale {r['scale']:.3g}, lr {r['learning_rate']:.3g}"
            for r in reductions
        ),
        *notes,
    ]
    text.text(0.0, 1.0, "\n".join(lines), va="top", family="monospace", fontsize=9,
              transform=text.transAxes, wrap=True)  # fmt: skip
    figure.suptitle("hyperstep demo: one clock, scheduled hyperparameters, plateau control",
                    fontsize=13)  # fmt: skip
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return path


def _series(axes: Any, x: np.ndarray, steps: Table, name: str, label: str, color: str) -> None:
    """Plot the column ``name`` if it is there and changes."""
    values = steps.get(name)
    if values is not None and np.nanmax(values) != np.nanmin(values):
        axes.plot(x, values, color=color, label=label)


def _mark(axes: Any, marks: Sequence[float], label: bool = False) -> None:
    for i, epoch in enumerate(marks):
        axes.axvline(epoch, **_REDUCTION, label="plateau: lr x 0.5" if label and i == 0 else None)
