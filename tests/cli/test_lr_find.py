"""``hyperstep lr-find MODULE:FUNCTION``: suggestions printed, plot written, JSON, exit 0/2."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from hyperstep.cli.main import main

TARGET = textwrap.dedent(
    """
    import keras
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(128, 4)).astype("float32")
    Y = X @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32")


    def regression():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        return model, (X, Y)


    def as_dict():
        return {"model": regression()[0], "data": (X, Y)}


    def flat():  # with rates too small to train, the loss is the batches' noise
        keras.utils.set_random_seed(0)  # the same draws in every run
        return regression()[0], (X, Y + rng.normal(size=Y.shape).astype("float32"))


    def not_compiled():
        return keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)]), (X, Y)


    def wrong():
        return 42


    def no_targets():
        return regression()[0], X


    def wrong_shape():
        return regression()[0], (X[:, :3], Y)


    def mismatched():
        return regression()[0], (X, Y[:100])


    def unbuilt_wrong_shape():
        model = keras.Sequential([keras.layers.Reshape((3,)), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        return model, (X, Y)


    def raises():
        raise RuntimeError("no data here")
    """
)


@pytest.fixture
def target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "lr_target.py").write_text(TARGET)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "lr_target.py"


def test_prints_both_suggestions_and_writes_the_plot(
    target: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)  # a terminal: the progress bar
    argv = ["lr-find", "lr_target.py:regression", "--min-lr", "1e-4", "--max-lr", "10"]
    assert main([*argv, "--steps", "30", "--out", "found.png"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^suggestion: \S+ \(the centred loss's minimum / \d\)$", out, re.M)
    assert re.search(r"^steepest: \S+, valley: \S+$", out, re.M) and "warning" not in out
    assert re.search(r"\b\d+/30\b.*learning_rate: .* loss: ", out)  # the progress bar
    assert (target.parent / "found.png").read_bytes()[:4] == b"\x89PNG"


def test_json_is_the_finding_and_the_same_as_the_library(
    target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["lr-find", "lr_target.py:as_dict", "--steps", "20", "--mode", "linear", "--json"]
    assert main([*argv, "--min-lr", "0.001", "--max-lr", "0.5"]) == 0
    found = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(found["learning_rates"], np.linspace(0.001, 0.5, 20), rtol=1e-12)
    assert found["mode"] == "linear" and found["plot"] == "lr.png"
    assert found["steps_taken"] == len(found["losses"]) == len(found["raw_losses"])
    assert (target.parent / "lr.png").exists()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("lr_target.py:wrong", "returned int 42; it must return (model, data)"),
        ("lr_target.py:raises", "raised RuntimeError: no data here"),
        ("lr_target.py:not_compiled", "not compiled; pass --loss NAME"),
        ("lr_target.py:missing", "has no attribute 'missing'"),
        ("lr_target.py", "expected MODULE:FUNCTION"),
    ],
)
def test_usage_errors_exit_2_with_one_message(
    target: Path, capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    assert main(["lr-find", name, "--steps", "5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hyperstep lr-find: error: ") and message in err
    assert "Traceback" not in err


def test_bad_arguments_exit_2(target: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lr-find", "lr_target.py:regression", "--min-lr", "2", "--max-lr", "1"]) == 2
    assert "Received: --min-lr 2 --max-lr 1\n" in capsys.readouterr().err
    assert main(["lr-find", "lr_target.py:regression", "--mode", "cubic"]) == 2


def test_loss_compiles_an_uncompiled_model(
    target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["lr-find", "lr_target.py:not_compiled", "--steps", "12", "--json", "--loss", "mse"]
    assert main([*argv, "--min-lr", "1e-4", "--max-lr", "1"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["steps_taken"] == 12 and all(np.isfinite(found["raw_losses"]))
    assert main(["lr-find", "lr_target.py:not_compiled", "--loss", "no_such_loss"]) == 2
    assert "Received: --loss no_such_loss" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("no_targets", "returned (model, x) with arrays and no targets; return (model, (x, y))"),
        ("wrong_shape", "have shape (128, 3); the model takes (batch, 4)"),
        ("unbuilt_wrong_shape", "does not fit the model: ValueError: "),
        ("mismatched", "needs as many samples in each array. Received: sizes [128, 100]"),
    ],
)
def test_data_that_does_not_fit_is_one_line_exit_2(
    target: Path, capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    assert main(["lr-find", f"lr_target.py:{name}", "--steps", "5", "--out", "x.png"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hyperstep lr-find: error: ") and message in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not (target.parent / "x.png").exists()


def test_out_is_checked_before_anything_runs(
    target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the function raises: the --out error comes first, so nothing was imported or run
    assert main(["lr-find", "lr_target.py:raises", "--out", "lr.txt"]) == 2
    err = capsys.readouterr().err
    assert "--out must end with an image extension (.png, .pdf, .svg" in err
    assert "Received: --out lr.txt" in err and err.count("\n") == 1
    (target.parent / "adir").mkdir()
    assert main(["lr-find", "lr_target.py:raises", "--out", "adir"]) == 2
    assert "--out is a folder; give a file such as lr.png. Received: adir" in (
        capsys.readouterr().err
    )
    assert not (target.parent / "adir.png").exists()


def test_optimizer_compiles_an_uncompiled_model_and_help_shows_the_defaults(
    target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["lr-find", "lr_target.py:not_compiled", "--steps", "12", "--loss", "mse"]
    assert main([*argv, "--optimizer", "adam", "--json", "--min-lr", "1e-4"]) == 0
    assert json.loads(capsys.readouterr().out)["steps_taken"] == 12
    assert main([*argv, "--optimizer", "no_such_optimizer"]) == 2
    assert "Received: --optimizer no_such_optimizer" in capsys.readouterr().err
    try:
        code = main(["lr-find", "--help"])
    except SystemExit as exit_:
        code = exit_.code
    assert code in (0, None)
    shown = " ".join(capsys.readouterr().out.split())
    for default in ("sgd", "100", "1e-08", "1.0", "exponential", "lr.png"):
        assert f"(default: {default})" in shown, default


def test_output_is_plain_when_stdout_is_not_a_terminal(
    target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["lr-find", "lr_target.py:regression", "--steps", "12", "--min-lr", "1e-4"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "\r" not in out and "\x1b" not in out and "━" not in out
    assert out.splitlines()[0].startswith("suggestion: ")


@pytest.mark.slow
def test_json_in_a_fresh_process_has_every_rule_and_the_noisy_curve_warning(
    target: Path,
) -> None:
    """A flat curve (rates from 1e-9 to 1e-8 train nothing): exit 0, every rule's rate as
    the library gives it for the same series, and the warning line in the JSON, printed
    and on the plot."""
    import subprocess

    import hyperstep as hs

    source = str(Path(hs.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    argv = [sys.executable, "-m", "hyperstep", "lr-find", "lr_target.py:flat", "--steps", "60"]
    argv += ["--min-lr", "1e-9", "--max-lr", "1e-8"]
    done = subprocess.run([*argv, "--json"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    finding = hs.LRFinding(
        found["learning_rates"], found["losses"], found["raw_losses"], steps=found["steps"]
    )
    assert found["suggestion"] == finding.suggestion() and found["valley"] == finding.valley()
    assert found["steepest"] == finding.steepest() is not None
    assert found["lightning"] == finding.steepest(compat="lightning") is not None
    assert found["warning"] == finding.warning is not None
    assert "too noisy to suggest with confidence" in found["warning"]
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert done.returncode == 0 and f"warning: {found['warning']}\n" in done.stdout
