"""The demo's run directory: a damaged, locked or impossible one is one line and exit 2.

Each case is refused before any training starts (the truncated weights file once the model
is built), by ``hyperstep demo`` with a message that names the file and ``--fresh``.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from hyperstep.cli.main import main
from hyperstep.demo import state

CONFIG = {"epochs": 2, "seed": 0, "batch_size": 32}


def run_demo(out: Path) -> tuple[int, str]:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        status = main(["demo", "--out", str(out), "--epochs", "2"])
    return status, printed.getvalue()


def interrupted_run(out: Path, epoch: int = 1, step: int = 45) -> None:
    """Files shaped like a run interrupted after ``epoch`` epochs (weights: fake bytes)."""
    folder = out / "checkpoint"
    folder.mkdir(parents=True)
    (folder / "epoch-0001.weights.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + bytes(64))
    state.write_json(
        folder / "state.json",
        {"epoch": epoch, "step": step, "weights": "epoch-0001.weights.h5", "config": CONFIG},
    )
    (out / "metrics.csv").write_text("epoch,loss\n" + "".join(f"{e},0.5\n" for e in range(epoch)))
    rows = "".join(f"{s},{s // 45},0.001\n" for s in range(step + 3))
    (out / "hyperparameters.csv").write_text("step,epoch,learning_rate\n" + rows)


def assert_refused(out: Path, damaged: Path, what: str) -> None:
    status, printed = run_demo(out)
    assert status == 2, printed[-2000:]
    assert "Traceback" not in printed and "Epoch" not in printed and "epoch " not in printed
    (line,) = [x for x in printed.splitlines() if x.startswith("hyperstep demo: error:")]
    assert str(damaged) in line and what in line and "--fresh" in line


@pytest.mark.parametrize(
    ("field", "value", "what"),
    [
        ("epoch", "x", "'epoch' is 'x', not a int"),
        ("weights", "gone.h5", "which is missing"),
        ("step", 10**30, "'step' is a 31-digit number, above 2**63 - 1"),
        ("epoch", 10**400, "'epoch' is a 401-digit number, above 2**63 - 1"),
        ("config", {**CONFIG, "epochs": 10**30}, "'config/epochs' is 1" + "0" * 30),
        ("config", {**CONFIG, "seed": float("inf")}, "'config/seed' is inf, not a number"),
        ("config", {**CONFIG, "batch_size": "32"}, "'config/batch_size' is '32', not a number"),
    ],
)
def test_a_damaged_state_json_names_the_file_and_fresh(
    tmp_path: Path, field: str, value: object, what: str
) -> None:
    interrupted_run(tmp_path)
    path = tmp_path / "checkpoint" / "state.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), field: value}))
    assert_refused(tmp_path, path, what)


def test_state_json_that_is_not_json_is_damaged(tmp_path: Path) -> None:
    interrupted_run(tmp_path)
    path = tmp_path / "checkpoint" / "state.json"
    path.write_text('{"epoch": 1, "st')
    assert_refused(tmp_path, path, "not readable as JSON")


@pytest.mark.parametrize(
    ("name", "text", "what"),
    [
        ("hyperparameters.csv", "0,0,0.001\n1,0,0.001\n", "no header with a 'step' column"),
        ("hyperparameters.csv", "", "no header"),
        ("hyperparameters.csv", "step,epoch,learning_rate\n0,0,0.1\n", "steps 0 .. 44"),
        ("metrics.csv", "epoch,loss\n", "epochs 0 .. 0"),
        ("metrics.csv", "epoch,loss\nx,0.5\n", "is not a number"),
        ("metrics.csv", "epoch,loss\n1e400,0.5\n", "is not a number"),
        ("metrics.csv", "epoch,loss\n0,abc\n", "a 'loss' cell is not a number: 'abc'"),
        (
            "hyperparameters.csv",
            "step,epoch,learning_rate\n" + "".join(f"{s},0,0.1\n" for s in range(44)) + "44,0,1e",
            "a 'learning_rate' cell is not a number: '1e'",
        ),
    ],
)
def test_csv_files_that_lack_rows_up_to_the_checkpoint_are_damaged(
    tmp_path: Path, name: str, text: str, what: str
) -> None:
    interrupted_run(tmp_path)
    (tmp_path / name).write_text(text)
    assert_refused(tmp_path, tmp_path / name, what)


def finished_run(out: Path, **changes: object) -> Path:
    """A finished run's summary.json as the demo writes it (``changes`` replace its keys)."""
    reduction = {"epoch": 1, "step": 45, "scale_before": 1.0, "scale": 0.5, "held": None}
    summary = {
        "status": "complete", "config": CONFIG, "val_accuracy": 0.95, "target_accuracy": 0.9,
        "epochs": 2, "steps": 90, "seconds": 3.5, "temperature": 1.2,
        "plateau_reductions": [reduction], "overrides": [], "commands": [],
        "doctor": {"ok": True}, "files": {"tensorboard": str(out / "tensorboard")},
    }  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    state.write_json(out / "summary.json", {**summary, **changes})
    return out / "summary.json"


def test_a_finished_run_is_reported_again(tmp_path: Path) -> None:
    finished_run(tmp_path)
    status, printed = run_demo(tmp_path)
    assert status == 0 and "holds a finished run" in printed
    assert "validation accuracy 95.0% (target met" in printed and "scale 1 -> 0.5" in printed


@pytest.mark.parametrize(
    ("changes", "what"),
    [
        ({"val_accuracy": "high"}, "'val_accuracy' is 'high', not a number below 2**63"),
        ({"temperature": None}, "'temperature' is None, not a number"),
        ({"seconds": float("nan")}, "'seconds' is nan, not a number"),
        ({"steps": 10**30}, "'steps' is 1000000000000000000000000000000, not a number"),
        ({"epochs": True}, "'epochs' is True, not a number"),
        (
            {"plateau_reductions": [{"epoch": 1, "step": 45, "scale_before": 1.0, "scale": "x"}]},
            "'plateau_reductions/0/scale' is 'x', not a number",
        ),
        ({"overrides": {"value": 1}}, "'overrides' is {'value': 1}, not a list of objects"),
    ],
)
def test_a_damaged_summary_json_of_a_finished_run_names_the_file_and_field(
    tmp_path: Path, changes: dict, what: str
) -> None:
    assert_refused(tmp_path, finished_run(tmp_path, **changes), what)


def test_a_huge_step_in_range_is_checked_without_counting_to_it(tmp_path: Path) -> None:
    interrupted_run(tmp_path)
    path = tmp_path / "checkpoint" / "state.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "step": 2**62}))  # an int64
    assert_refused(tmp_path, tmp_path / "hyperparameters.csv", "steps 0 .. 4611686018427387903")


def test_a_truncated_weights_file_is_damaged(tmp_path: Path) -> None:
    interrupted_run(tmp_path)
    assert_refused(tmp_path, tmp_path / "checkpoint" / "epoch-0001.weights.h5", "OSError")


def test_a_second_run_on_a_locked_directory_is_refused(tmp_path: Path) -> None:
    with state.locked(tmp_path):
        status, printed = run_demo(tmp_path)
    assert status == 2 and "Traceback" not in printed
    assert "another hyperstep demo (process " in printed and "is training in" in printed


def test_out_below_a_file_is_a_usage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    status, printed = run_demo(blocker / "run")
    assert status == 2 and "Traceback" not in printed
    assert f"cannot use {blocker / 'run'} as the run directory" in printed
