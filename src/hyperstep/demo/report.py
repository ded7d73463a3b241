"""The demo's ``report.png`` (:func:`write_report`): hyperparameters and metrics of a run,
read from its CSV files.
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


def plateau_reductions(history: Table, steps_per_epoch: int) -> list[dict[str, Any]]:
    """Return each reduction of the plateau controller, read from its own count: the
    epochs (rows of ``metrics.csv``) where ``plateau_reductions`` grew.

    Each item: ``epoch`` (whose ``val_loss`` triggered it, counted from 1), ``step`` (the
    first update with the lower scale), ``scale_before``, ``scale`` and ``held``: the
    learning rate an override held at that moment (the reduction then changed the scale
    only), else None.

    Example:
        >>> history = {"epoch": np.arange(3.0), "plateau_reductions": np.array([0.0, 1, 1]),
        ...            "learning_rate_scale": np.array([1.0, 0.5, 0.5]),
        ...            "learning_rate_override": np.full(3, np.nan)}
        >>> plateau_reductions(history, steps_per_epoch=10)
        [{'epoch': 2, 'step': 20, 'scale_before': 1.0, 'scale': 0.5, 'held': None}]
    """
    count, scale = history["plateau_reductions"], history["learning_rate_scale"]
    found = []
    for i in np.flatnonzero(np.diff(count, prepend=0.0) > 0):
        epoch = int(history["epoch"][i]) + 1
        held = float(history["learning_rate_override"][i])
        found.append(
            {
                "epoch": epoch,
                "step": epoch * steps_per_epoch,
                "scale_before": float(scale[i - 1]) if i > 0 else 1.0,
                "scale": float(scale[i]),
                "held": None if math.isnan(held) else held,
            }
        )
    return found


def overrides(steps: Table) -> list[dict[str, Any]]:
    """Return each stretch of steps over which an override held a hyperparameter, read
    from the ``NAME/override`` columns of ``hyperparameters.csv`` (empty: none).

    Each item: ``name``, ``value``, ``from_step`` and ``to_step`` (the last step it held).

    Example:
        >>> steps = {"step": np.arange(5.0),
        ...          "learning_rate/override": np.array([np.nan, 1e-4, 1e-4, np.nan, np.nan])}
        >>> overrides(steps)
        [{'name': 'learning_rate', 'value': 0.0001, 'from_step': 1, 'to_step': 2}]
    """
    found = []
    for column, values in steps.items():
        if not column.endswith("/override"):
            continue
        changes = np.flatnonzero(
            ~((values[1:] == values[:-1]) | (np.isnan(values[1:]) & np.isnan(values[:-1])))
        )
        for start, end in zip([0, *(changes + 1)], [*(changes + 1), len(values)], strict=True):
            if not math.isnan(values[start]):
                found.append(
                    {
                        "name": column.removesuffix("/override"),
                        "value": float(values[start]),
                        "from_step": int(steps["step"][start]),
                        "to_step": int(steps["step"][end - 1]),
                    }
                )
    return found


def commands(journal: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return the commands of a steering journal (``hs.Remote``'s ``journal.jsonl``), each
    ``{"step", "verb", "arguments", "status"}`` (``step``: where it applied, or None)."""
    return [
        {
            "step": entry.get("step"),
            "verb": entry["command"].get("verb"),
            "arguments": {k: v for k, v in entry["command"].items() if k != "verb"},
            "status": entry.get("status"),
        }
        for entry in journal
        if isinstance(entry.get("command"), dict)
    ]


def write_report(
    path: Path,
    history: Table,
    steps: Table,
    schedule: np.ndarray,
    reductions: Sequence[dict[str, Any]],
    steps_per_epoch: int,
    notes: Sequence[str] = (),
    held: Sequence[dict[str, Any]] = (),
    steering: Sequence[dict[str, Any]] = (),
) -> Path:
    """Draw the panels (learning rates, weight decay, temperature, loss, accuracy, a text
    summary, on one epoch axis) into ``path`` (1500 x 860 pixels); return the path.

    ``schedule`` is the learning rate's schedule alone at ``steps["step"]`` (drawn dashed
    under the value in force). ``reductions`` (:func:`plateau_reductions`), ``held``
    (:func:`overrides`) and ``steering`` (:func:`commands`) are drawn and listed apart:
    red dotted lines, shaded stretches and grey dash-dotted lines. A series that never
    changes is left out, and a panel with nothing to show is not drawn.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(15, 8.6), dpi=100)
    FigureCanvasAgg(figure)
    grid = figure.subplots(2, 3, sharex=True)
    x = steps["step"] / steps_per_epoch  # the step axis, in epochs
    epochs = history["epoch"] + 1.0  # metrics are measured at the end of each epoch
    marks = [r["epoch"] for r in reductions]
    applied = [c for c in steering if c["status"] == "applied"]

    lr = grid[0, 0]
    lr.plot(x, schedule, "--", color="tab:blue", alpha=0.6, label="learning_rate: schedule alone")
    _series(lr, x, steps, "learning_rate", "learning_rate in force", "tab:blue")
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
                     np.concatenate([[1.0] * len(start), history["temperature"]]),  # initially 1
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
        for i, epoch in enumerate(marks):
            label = "ReduceOnPlateau reduction" if axes is lr and i == 0 else None
            axes.axvline(epoch, **_REDUCTION, label=label)
        for i, stretch in enumerate(held):
            start, end = stretch["from_step"], stretch["to_step"] + 1
            label = "override held (hyperstep set)" if axes is lr and i == 0 else None
            axes.axvspan(start / steps_per_epoch, end / steps_per_epoch, color="tab:green",
                         alpha=0.12, label=label)  # fmt: skip
        for i, command in enumerate(applied):
            label = "steering command" if axes is lr and i == 0 else None
            axes.axvline(command["step"] / steps_per_epoch, color="gray", linestyle="-.",
                         linewidth=1.0, label=label)  # fmt: skip
        axes.grid(True, alpha=0.3)
        axes.legend(loc="best", fontsize="small")
        axes.tick_params(labelbottom=True)  # shared x: label every panel, not just the last row
        axes.set_xlabel("epoch")

    text = grid[1, 2]
    text.axis("off")
    lines = [*reduction_lines(reductions), *steering_lines(held, steering), *notes]
    text.text(0.0, 1.0, "\n".join(lines), va="top", family="monospace", fontsize=9,
              transform=text.transAxes, wrap=True)  # fmt: skip
    figure.suptitle("hyperstep demo: one clock, scheduled hyperparameters, plateau control",
                    fontsize=13)  # fmt: skip
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return path


def reduction_lines(reductions: Sequence[dict[str, Any]]) -> list[str]:
    """The plateau controller's reductions, one line each after a count.

    Example:
        >>> lines = reduction_lines([{"epoch": 6, "step": 60, "scale_before": 1.0, "scale": 0.5,
        ...                           "held": None}])
        >>> for line in lines:
        ...     print(line)
        ReduceOnPlateau: 1 reduction (its own count):
          after epoch 6 (from step 60): scale 1 -> 0.5
    """
    plural = "s" * (len(reductions) != 1)
    lines = [f"ReduceOnPlateau: {len(reductions)} reduction{plural} (its own count)"]
    lines[0] += ":" if reductions else ""
    return lines + [f"  {reduction_text(r)}" for r in reductions]


def reduction_text(reduction: dict[str, Any]) -> str:
    """``after epoch 6 (from step 60): scale 1 -> 0.5`` and, under an override, what it held."""
    text = (
        f"after epoch {reduction['epoch']} (from step {reduction['step']}): scale "
        f"{reduction['scale_before']:.3g} -> {reduction['scale']:.3g}"
    )
    if reduction["held"] is not None:
        text += f", while an override held learning_rate at {reduction['held']:.3g}"
    return text


def steering_lines(held: Sequence[dict[str, Any]], steering: Sequence[dict[str, Any]]) -> list[str]:
    """The overrides that held values and the steering commands, each under its heading
    (nothing when there were none)."""
    lines = []
    if held:
        lines.append(f"overrides: {len(held)}")
        lines += [
            f"  {h['name']} = {h['value']:.3g} from step {h['from_step']} to {h['to_step']}"
            for h in held
        ]
    if steering:
        lines.append(f"commands (steering journal): {len(steering)}")
        for c in steering:
            where = f"step {c['step']}" if c["step"] is not None else "not applied"
            lines.append(f"  {c['verb']} {_arguments(c['arguments'])} ({c['status']}, {where})")
    return lines


def _arguments(arguments: dict[str, Any]) -> str:
    values = arguments.get("values")
    if isinstance(values, dict) and len(arguments) == 1:
        return " ".join(
            f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items()
        )
    return " ".join(f"{k}={v}" for k, v in arguments.items())


def _series(axes: Any, x: np.ndarray, steps: Table, name: str, label: str, color: str) -> None:
    """Plot the column ``name`` if it is there and changes."""
    values = steps.get(name)
    if values is not None and np.nanmax(values) != np.nanmin(values):
        axes.plot(x, values, color=color, label=label)
