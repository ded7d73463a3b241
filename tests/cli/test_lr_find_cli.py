"""``hyperstep lr-find MODULE:FUNCTION``: suggestions printed, plot written, JSON, exit 0/2."""

from __future__ import annotations

import json
import re
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


    def not_compiled():
        return keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)]), (X, Y)


    def wrong():
        return 42


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
    target: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["lr-find", "lr_target.py:regression", "--min-lr", "1e-4", "--max-lr", "10"]
    assert main([*argv, "--steps", "30", "--out", "found.png"]) == 0
    out = capsys.readouterr().out
    assert "suggestion (steepest descent): " in out and "valley: " in out
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
        ("lr_target.py:not_compiled", "must be compiled"),
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
    assert "Received: max_lr=1.0" in capsys.readouterr().err
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
