"""The units of hyperstep.schedules.chart: write_png (matplotlib's Agg canvas) and text_chart
(NumPy only), called directly with (label, steps, values) curves."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hyperstep.schedules import chart


def test_write_png_makes_the_folder_and_an_800_by_450_image(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the optional `plot` extra (not in make test-oldest)")
    import matplotlib.image

    steps = np.arange(100)
    curves = [("x" * 100, steps, np.cos(steps / 30.0) + 2), ("flat", steps, np.full(100, 1.5))]
    path = chart.write_png(curves, tmp_path / "a" / "b.png", log=True, steps_per_epoch=10)
    assert path == tmp_path / "a" / "b.png"
    image = matplotlib.image.imread(path)
    assert image.shape[:2] == (450, 800)
    plain = chart.write_png(curves, str(tmp_path / "plain.png"))
    assert not np.array_equal(matplotlib.image.imread(plain), image)  # the log, the epoch axis


def test_text_chart_is_ascii_of_the_asked_size_with_labelled_ends() -> None:
    steps = np.arange(50)
    text = chart.text_chart([("ramp", steps, steps / 49.0)], width=25, height=7)
    lines = text.splitlines()
    assert text.isascii() and len(lines) == 7 + 3
    assert all(len(line) <= 12 + 25 for line in lines[:7])
    assert lines[0].split("|")[0].strip() == "1" and lines[6].split("|")[0].strip() == "0"
    assert lines[3].split("|")[0].strip() == "0.5"  # the middle row: 3 significant digits
    assert lines[8].endswith("49 step") and lines[9] == "* ramp"
    # a ramp: one mark per column, from the bottom left to the top right
    assert lines[6][12] == "*" and lines[0].rstrip().endswith("*")


def test_text_chart_leaves_out_non_finite_values_and_cycles_its_markers() -> None:
    steps = np.arange(10)
    values = np.where(steps % 2 == 0, np.nan, 1.0)
    assert "*" in chart.text_chart([("half", steps, values)], width=10, height=3)
    nothing = chart.text_chart([("nan", steps, np.full(10, np.nan))])
    assert nothing == "(nothing to draw: no finite values)"
    curves = [(f"c{i}", steps, steps + float(i)) for i in range(9)]
    legend = chart.text_chart(curves, width=10, height=5).splitlines()[-9:]
    assert [line[0] for line in legend] == list("*o+x#@%&*")


def test_text_chart_draws_a_jump_as_a_vertical_stroke() -> None:
    steps = np.arange(4)
    text = chart.text_chart([("jump", steps, np.array([0.0, 0.0, 0.0, 1.0]))], width=2, height=4)
    columns = [line.split("|")[1].ljust(2) for line in text.splitlines()[:4]]
    assert [row[1] for row in columns] == ["*"] * 4  # the second column spans 0 to 1
    assert [row[0] for row in columns] == [" ", " ", " ", "*"]
