"""hyperstep plot: PNG and text charts of schedule expressions; errors without tracebacks."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hyperstep.cli.main import main
from hyperstep.schedules import chart

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def read_png(path: Path) -> np.ndarray:
    import matplotlib.image

    assert path.read_bytes()[:8] == PNG_MAGIC
    return matplotlib.image.imread(path)


def test_png_is_written_with_sensible_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sub" / "lr.png"
    status = main(
        [
            "plot",
            "warmup(cosine(1e-3, steps=900), steps=100)",
            "0.5e-3",
            "--steps",
            "1200",
            "--out",
            str(out),
        ]
    )
    assert status == 0
    assert f"wrote {out} (2 schedules, steps 0..1199)" in capsys.readouterr().out
    image = read_png(out)
    assert image.shape[:2] == (450, 800)
    assert 0.05 < image[..., :3].std() < 0.5  # not blank: axes, curves and text are drawn


def test_png_defaults_to_schedule_png_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert (
        main(
            [
                "plot",
                "0.1 * 0.5 ** floor(epoch / 3)",
                "--steps",
                "1000",
                "--log",
                "--steps-per-epoch",
                "100",
            ]
        )
        == 0
    )
    assert read_png(tmp_path / "schedule.png").shape[:2] == (450, 800)


def test_png_differs_with_log_scale(tmp_path: Path) -> None:
    linear, log = tmp_path / "linear.png", tmp_path / "log.png"
    assert main(["plot", "exp(-step / 100)", "--steps", "1000", "--out", str(linear)]) == 0
    assert main(["plot", "exp(-step / 100)", "--steps", "1000", "--out", str(log), "--log"]) == 0
    assert not np.array_equal(read_png(linear), read_png(log))


def chart_rows(out: str, height: int) -> list[str]:
    return [line.split("|", 1)[1] if "|" in line else "" for line in out.splitlines()[:height]]


def test_text_chart_draws_each_curve_where_its_values_are(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = [
        "plot",
        "where(step < 50, 1, 0)",
        "step / 100",
        "--steps",
        "100",
        "--text",
        "--width",
        "20",
        "--height",
        "5",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    rows = chart_rows(out, 5)
    assert rows[0].startswith("*" * 10) and "*" not in rows[0][10:]  # 1 for the first half
    assert rows[4][10:].startswith("*" * 10)  # then 0
    assert rows[0].rstrip().endswith("o") and rows[4].startswith("o")  # the ramp 0 -> 0.99
    lines = out.splitlines()
    assert lines[0].split("|")[0].strip() == "1" and lines[4].split("|")[0].strip() == "0"
    assert "* where(step < 50, 1, 0)" in lines and "o step / 100" in lines
    assert lines[6].rstrip().endswith("99 step")
    assert not list(tmp_path.iterdir())  # nothing written in text mode


def test_text_chart_of_a_constant_and_on_log_scale() -> None:
    steps = np.arange(10)
    flat = chart.text_chart([("c", steps, np.full(10, 0.5, np.float32))], width=10, height=5)
    assert flat.splitlines()[2] == "       0.5 |**********"  # the middle row, labelled
    decay = 10.0 ** -steps.astype(np.float64)
    drawn = chart.text_chart([("d", steps, decay)], log=True, width=10, height=10)
    lines = drawn.splitlines()
    assert lines[0].split("|")[0].strip() == "1" and lines[9].split("|")[0].strip() == "1e-09"
    assert [line.index("*") - line.index("|") - 1 for line in lines[:10]] == list(range(10))
    assert lines[-1] == "(log scale)"
    assert "nothing to draw" in chart.text_chart([("z", steps, -decay)], log=True)


def test_text_chart_is_used_when_matplotlib_is_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name)
    )
    out = tmp_path / "never.png"
    assert main(["plot", "cosine(1.0, 100)", "--steps", "100", "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "matplotlib is not installed; printing a text chart" in captured.err
    assert "* cosine(1.0, 100)" in captured.out
    assert not out.exists()


@pytest.mark.parametrize(
    ("expression", "message", "column"),
    [
        ("stpe / 1000", "unknown name 'stpe'; did you mean 'step'?", 0),
        ("cosine(1e-3, stpes=100)", "unexpected keyword 'stpes'", 13),
        ("cos(step", "'(' was never closed", 3),
    ],
)
def test_bad_expression_exits_2_with_the_caret_and_no_traceback(
    expression: str, message: str, column: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", "step", expression, "--steps", "10", "--text"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("hyperstep plot: error: ")
    assert message in captured.err
    lines = captured.err.splitlines()
    assert lines[-2] == "  " + expression and lines[-1] == "  " + " " * column + "^"
    assert "Traceback" not in captured.err


def test_epoch_needs_steps_per_epoch(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plot", "0.5 ** epoch", "--steps", "10", "--text"]) == 2
    assert "uses `epoch`; pass --steps-per-epoch K" in capsys.readouterr().err


def test_total_needs_total_and_plots_the_schedule_written_with_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plot", "1 - progress", "--steps", "10", "--text"]) == 2
    assert "uses `total`, the run's length; pass --total N" in capsys.readouterr().err
    size = ["--text", "--width", "20", "--height", "5"]
    assert (
        main(
            [
                "plot",
                "warmup(cosine(1.0, steps=0.9 * total), steps=0.1 * total)",
                "--total",
                "200",
                *size,
            ]
        )
        == 0
    )
    with_total = capsys.readouterr().out.splitlines()
    assert main(["plot", "warmup(cosine(1.0, steps=180), steps=20)", *size]) == 0
    by_hand = capsys.readouterr().out.splitlines()
    assert with_total[:7] == by_hand[:7]  # the same chart, over its natural length
    assert with_total[6].rstrip().endswith("199 step")


@pytest.mark.parametrize("steps", ["0", "-5", "ten"])
def test_bad_steps_is_a_usage_error(steps: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plot", "step", "--steps", steps]) == 2
    err = capsys.readouterr().err
    assert f"expected a positive integer, got '{steps}'" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["step", "--steps", "99999999999999999999"], "expected at most 2**53"),
        (["step", "--steps", "10", "--width", "0"], "expected a positive integer, got '0'"),
    ],
)
def test_huge_or_zero_numbers_are_usage_errors(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["plot", *argv, "--text"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_unwritable_out_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["plot", "step", "--steps", "10", "--out", str(blocker / "x.png")]) == 1
    assert "cannot write" in capsys.readouterr().err


def test_python_dash_m_entry_point_shows_plot_help(hang_timeout: float) -> None:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-m", "hyperstep", "plot", "--help"],
        capture_output=True,
        text=True,
        timeout=hang_timeout,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "--steps N" in done.stdout and "--text" in done.stdout and "--log" in done.stdout


@pytest.mark.parametrize(
    "expression",
    [
        "piecewise([10, 29**90], [1, 2, 3])",
        "one_cycle(1, steps=19**90)",
        "exponential(0.1, 1e-50, every=10)",
        'cyclic(0.1, 1, 10, mode="exp_range", gamma=1.5)',
        "step ** 1e30",
    ],
)
def test_extreme_numbers_draw_or_fail_in_one_line(
    expression: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["plot", expression, "--steps", "100", "--text", "--width", "10"])
    err = capsys.readouterr().err
    assert status in (0, 2) and "Traceback" not in err
    # one line, or one line and the parser's expression with a caret under the value refused
    assert status == 0 or (err.startswith("hyperstep plot: error: ") and err.count("\n") in (1, 3))
    if err.count("\n") == 3:
        assert err.splitlines()[2].strip() == "^"
