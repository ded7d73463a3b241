"""Units of :mod:`hyperstep.demo.report`: the CSV reader (checked against numpy's),
plateau reductions found from the learning rate over its schedule, and the PNG drawn."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from hyperstep.demo.report import plateau_reductions, read_csv, write_report


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


def _steps(scale: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """A cosine schedule over ``len(scale)`` steps, and the learning rate ``scale`` times it."""
    step = np.arange(len(scale), dtype=float)
    schedule = 0.1 * 0.5 * (1 + np.cos(np.pi * step / len(scale))) + 1e-3
    learning_rate = (schedule * scale).astype(np.float32).astype(float)  # as logged
    return {"step": step, "learning_rate": learning_rate}, schedule


def test_each_drop_of_the_plateaus_scale_is_one_reduction() -> None:
    scale = np.ones(20)
    scale[8:] = 0.5  # reduced after epoch 2 (4 steps an epoch)
    scale[16:] = 0.25  # then after epoch 4
    steps, schedule = _steps(scale)
    found = plateau_reductions(steps, schedule, steps_per_epoch=4)
    assert [r["step"] for r in found] == [8, 16]
    assert [r["after_epoch"] for r in found] == [2, 4]
    assert [r["scale"] for r in found] == [0.5, 0.25]
    assert [r["learning_rate"] for r in found] == [
        steps["learning_rate"][8],
        steps["learning_rate"][16],
    ]
    assert all(type(r["step"]) is int and type(r["scale"]) is float for r in found)


def test_a_falling_schedule_alone_or_a_rising_scale_is_no_reduction() -> None:
    steps, schedule = _steps(np.ones(12))  # the learning rate falls, its scale does not
    assert plateau_reductions(steps, schedule, steps_per_epoch=3) == []
    rising = np.ones(12)
    rising[6:] = 2.0
    steps, schedule = _steps(rising)
    assert plateau_reductions(steps, schedule, steps_per_epoch=3) == []


def test_float32_rounding_of_the_logged_rate_is_no_reduction() -> None:
    steps, schedule = _steps(np.ones(50))
    ratio = steps["learning_rate"] / schedule
    assert np.any(ratio[1:] < ratio[:-1])  # float32 logging: the raw ratio does wobble
    assert plateau_reductions(steps, schedule, steps_per_epoch=5) == []


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
    reductions = plateau_reductions(steps, schedule, 5)
    assert len(reductions) == 1
    path = tmp_path / "new" / "folder" / "report.png"
    returned = write_report(path, history, steps, schedule, reductions, 5, notes=["a note"])
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
