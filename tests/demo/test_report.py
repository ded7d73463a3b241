"""Units of :mod:`hyperstep.demo.report`: the CSV reader (checked against numpy's), plateau
reductions read from the controller's own count, overrides and commands, the PNG drawn."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from hyperstep.demo.report import (
    commands,
    overrides,
    plateau_reductions,
    read_csv,
    steering_lines,
    write_report,
)


def _write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_read_csv_is_numpys_reading_with_empty_cells_nan(tmp_path: Path) -> None:
    rows = [[0, 0.5, ""], [1, 0.25, 3.5], [2, "", 1e-7]]
    path = _write_csv(tmp_path / "log.csv", ["step", "learning_rate", "loss"], rows)
    table = read_csv(path)
    reference = np.genfromtxt(path, delimiter=",", names=True)
    assert list(table) == list(reference.dtype.names)
    for name, column in table.items():
        assert column.dtype == np.float64
        np.testing.assert_array_equal(column, reference[name])
    assert math.isnan(table["loss"][0]) and math.isnan(table["learning_rate"][2])


def test_read_csv_of_a_header_alone_is_empty_columns(tmp_path: Path) -> None:
    table = read_csv(_write_csv(tmp_path / "empty.csv", ["epoch", "loss"], []))
    assert list(table) == ["epoch", "loss"]
    assert all(column.shape == (0,) for column in table.values())


def _history(
    count: list[float], scale: list[float], override: list[float]
) -> dict[str, np.ndarray]:
    """``metrics.csv`` columns the demo writes at each epoch end."""
    return {
        "epoch": np.arange(len(count), dtype=float),
        "plateau_reductions": np.array(count, dtype=float),
        "learning_rate_scale": np.array(scale, dtype=float),
        "learning_rate_override": np.array(override, dtype=float),
    }


def test_each_increase_of_the_controller_s_own_count_is_one_reduction() -> None:
    nan = math.nan
    history = _history([0, 1, 1, 2, 2], [1, 0.5, 0.5, 0.25, 0.25], [nan, nan, 1e-4, 1e-4, nan])
    found = plateau_reductions(history, steps_per_epoch=4)
    assert found == [
        {"epoch": 2, "step": 8, "scale_before": 1.0, "scale": 0.5, "held": None},
        {"epoch": 4, "step": 16, "scale_before": 0.5, "scale": 0.25, "held": 1e-4},
    ]
    assert all(type(r["step"]) is int and type(r["scale"]) is float for r in found)


def test_a_scale_or_a_value_changed_from_outside_is_no_reduction() -> None:
    nan = math.nan  # `hyperstep scale DIR learning_rate=0.1`, then `set learning_rate=1e-4`
    history = _history([0, 0, 0, 0], [1, 0.1, 0.1, 0.1], [nan, nan, 1e-4, 1e-4])
    assert plateau_reductions(history, steps_per_epoch=3) == []
    history = _history([1, 1], [0.5, 0.5], [nan, nan])  # reduced in the first epoch
    assert plateau_reductions(history, 3) == [
        {"epoch": 1, "step": 3, "scale_before": 1.0, "scale": 0.5, "held": None}
    ]


def test_overrides_are_the_stretches_of_steps_an_override_held_each_value() -> None:
    nan = math.nan
    steps = {
        "step": np.arange(7.0),
        "learning_rate": np.ones(7),
        "learning_rate/override": np.array([nan, 1e-4, 1e-4, 2e-4, nan, nan, 3e-4]),
        "weight_decay/override": np.full(7, nan),
    }
    assert overrides(steps) == [
        {"name": "learning_rate", "value": 1e-4, "from_step": 1, "to_step": 2},
        {"name": "learning_rate", "value": 2e-4, "from_step": 3, "to_step": 3},
        {"name": "learning_rate", "value": 3e-4, "from_step": 6, "to_step": 6},
    ]


def test_commands_are_the_journal_s_commands_apart_from_its_events() -> None:
    journal = [
        {"event": "begin", "step": 0},
        {"seq": 1, "command": {"verb": "set", "values": {"learning_rate": 1e-4}},
         "status": "applied", "step": 25},
        {"seq": 2, "command": {"verb": "stop"}, "status": "refused", "reason": "..."},
    ]  # fmt: skip
    assert commands(journal) == [
        {"step": 25, "verb": "set", "arguments": {"values": {"learning_rate": 1e-4}},
         "status": "applied"},
        {"step": None, "verb": "stop", "arguments": {}, "status": "refused"},
    ]  # fmt: skip
    assert steering_lines([], commands(journal)) == [
        "commands (steering journal): 2",
        "  set learning_rate=0.0001 (applied, step 25)",
        "  stop  (refused, not applied)",
    ]


def _steps(scale: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """A cosine schedule over ``len(scale)`` steps, and the learning rate ``scale`` times it."""
    step = np.arange(len(scale), dtype=float)
    schedule = 0.1 * 0.5 * (1 + np.cos(np.pi * step / len(scale))) + 1e-3
    learning_rate = (schedule * scale).astype(np.float32).astype(float)  # as logged
    return {"step": step, "learning_rate": learning_rate}, schedule


def _run(epochs: int, steps_per_epoch: int) -> tuple[dict, dict, np.ndarray]:
    scale = np.ones(epochs * steps_per_epoch)
    scale[3 * steps_per_epoch :] = 0.5
    steps, schedule = _steps(scale)
    steps["weight_decay"] = np.linspace(1e-2, 1e-3, len(scale))
    steps["temperature/learning_rate"] = steps["learning_rate"] * 2
    epoch = np.arange(epochs, dtype=float)
    history = {
        "epoch": epoch,
        "temperature": 1.0 + 0.1 * epoch,
        "loss": 1.0 / (epoch + 1),
        "val_loss": 1.2 / (epoch + 1),
        "accuracy": 0.6 + 0.04 * epoch,
        "val_accuracy": 0.55 + 0.045 * epoch,
    }
    return history, steps, schedule


def test_write_report_draws_a_1500_by_860_png_and_makes_its_folder(tmp_path: Path) -> None:
    from matplotlib.image import imread

    history, steps, schedule = _run(epochs=8, steps_per_epoch=5)
    reductions = [{"epoch": 3, "step": 15, "scale_before": 1.0, "scale": 0.5, "held": None}]
    path = tmp_path / "new" / "folder" / "report.png"
    held = [{"name": "learning_rate", "value": 1e-4, "from_step": 7, "to_step": 12}]
    steering = [{"step": 7, "verb": "set", "arguments": {}, "status": "applied"}]
    returned = write_report(
        path, history, steps, schedule, reductions, 5, ["a note"], held=held, steering=steering
    )
    assert returned == path
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = imread(path)
    assert pixels.shape[:2] == (860, 1500)
    assert pixels.std() > 0.05  # something drawn, not a blank canvas


#: pixels (rows, columns) of the weight decay panel, the top middle one, with its title (the
#: figure's own title is above row 40)
WEIGHT_DECAY_PANEL = (slice(40, 390), slice(580, 990))


def test_a_series_that_never_changes_is_left_out(tmp_path: Path) -> None:
    from matplotlib.image import imread

    history, steps, schedule = _run(epochs=4, steps_per_epoch=3)
    drawn = write_report(tmp_path / "drawn.png", history, steps, schedule, [], 3)
    steps["learning_rate"] = schedule.copy()
    steps["weight_decay"] = np.full_like(schedule, 1e-2)  # constant: its panel is left out
    del steps["temperature/learning_rate"]
    plain = write_report(tmp_path / "plain.png", history, steps, schedule, [], 3)
    assert imread(plain).shape[:2] == (860, 1500)
    assert np.all(imread(plain)[WEIGHT_DECAY_PANEL][..., :3] == 1.0)  # white: no axes, no title
    assert np.any(imread(drawn)[WEIGHT_DECAY_PANEL][..., :3] < 0.5)  # the line and axes


@pytest.mark.parametrize("first_epoch", [0.0, 5.0])
def test_write_report_of_a_resumed_history(tmp_path: Path, first_epoch: float) -> None:
    history, steps, schedule = _run(epochs=4, steps_per_epoch=3)
    history["epoch"] = history["epoch"] + first_epoch  # a run resumed after 5 epochs
    path = write_report(tmp_path / "resumed.png", history, steps, schedule, [], 3)
    assert path.stat().st_size > 0
