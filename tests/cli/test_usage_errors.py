"""The command line as a user meets it: a usage error is one line naming the flag that fixes
it, exit status 2, and no backend imported to say so (``python -X importtime``)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hyperstep
from hyperstep.cli.arguments import LOSSES, OPTIMIZERS
from hyperstep.cli.main import COMMANDS, command_names, main

HEAVY = ("tensorflow", "jax", "torch", "keras")
README = Path(hyperstep.__file__).parents[2] / "README.md"


def hyperstep_cli(
    *argv: str, cwd: Path | None = None
) -> tuple[int, list[str], list[str], set[str]]:
    """Run ``python -X importtime -m hyperstep ARGV`` in a fresh process; return its exit
    status, stdout lines, stderr lines (the import times taken out) and the top-level
    modules it imported."""
    source = str(Path(hyperstep.__file__).parents[1])
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = os.pathsep.join([source, env.get("PYTHONPATH", "")])
    env["COLUMNS"] = "1000"  # help on one line per option: words are not cut at hyphens
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "hyperstep", *argv],
        capture_output=True, text=True, env=env, cwd=cwd, check=False,
    )  # fmt: skip
    imported, err = set(), []
    for line in done.stderr.splitlines():
        timing = re.match(r"import time:\s+\d+ \|\s+\d+ \| (\s*)(\S+)", line)
        if timing:
            imported.add(timing.group(2).split(".")[0])
        elif not line.startswith("import time:"):
            err.append(line)
    return done.returncode, done.stdout.splitlines(), err, imported


USAGE_ERRORS = {
    ("lr-find", "nosuchmodule:build", "--loss", "msee"): "hyperstep lr-find: error: --loss "
    "must name a Keras loss such as mse or sparse_categorical_crossentropy; did you mean "
    "mse? Received: --loss msee",
    ("lr-find", "nosuchmodule:build", "--loss", "mse", "--optimizer", "adamm"): "hyperstep "
    "lr-find: error: --optimizer must name a Keras optimizer such as sgd, adam or adamw; "
    "did you mean adam? Received: --optimizer adamm",
    ("lr-find", "nosuchmodule:build", "--min-lr", "1", "--max-lr", "1e-3"): "hyperstep "
    "lr-find: error: --max-lr must be larger than --min-lr. Received: --min-lr 1 --max-lr "
    "0.001",
    ("lr-find", "nosuchmodule:build", "--steps", "1"): "hyperstep lr-find: error: argument "
    "--steps: the range test needs at least 2 steps (one per learning rate; 100 is usual), "
    "got '1' (see hyperstep lr-find --help)",
    ("lr-find", "nosuchmodule:build", "--min-lr", "0"): "hyperstep lr-find: error: argument "
    "--min-lr: expected a positive number, got '0' (see hyperstep lr-find --help)",
    ("lr-find", "nosuchmodule:build", "--out", "lr.txt"): "hyperstep lr-find: error: --out "
    "must end with an image extension (.png, .pdf, .svg, .jpg, .jpeg, .eps, .ps, .tif, .tiff, "
    ".webp). Received: --out lr.txt",
    ("doctor", "nosuchmodule:build", "--loss", "sparse_categorical_crossentropyy"): "hyperstep "
    "doctor: error: --loss must name a Keras loss such as mse or "
    "sparse_categorical_crossentropy; did you mean sparse_categorical_crossentropy? Received: "
    "--loss sparse_categorical_crossentropyy",
    ("lr-find", "nosuchmodule:build", "--bogus"): "hyperstep: error: unrecognized arguments: "
    "--bogus (see hyperstep --help)",
    ("plot",): "hyperstep plot: error: the following arguments are required: EXPR (see "
    "hyperstep plot --help)",
    ("demo", "--epochs", "0"): "hyperstep demo: error: argument --epochs: expected a "
    "positive integer, got '0' (see hyperstep demo --help)",
}


@pytest.mark.parametrize("argv", list(USAGE_ERRORS), ids=" ".join)
def test_a_usage_error_is_one_line_naming_the_flag_before_any_backend_is_imported(
    argv: tuple[str, ...], tmp_path: Path
) -> None:
    status, out, err, imported = hyperstep_cli(*argv, cwd=tmp_path)
    assert (status, out, err) == (2, [], [USAGE_ERRORS[argv]])
    assert imported.isdisjoint(HEAVY), sorted(imported & set(HEAVY))


def test_a_close_name_is_suggested_and_a_far_one_is_not() -> None:
    from hyperstep.cli.arguments import UsageError, check_loss_names

    check_loss_names("MeanSquaredError", "AdamW")  # Keras's class names and any case pass
    with pytest.raises(UsageError, match=r"such as sgd, adam or adamw\. Received: --optimizer x"):
        check_loss_names(None, "x")
    assert {"mse", "sparse_categorical_crossentropy", "huber"} <= set(LOSSES)
    assert {"sgd", "adam", "adamw"} <= set(OPTIMIZERS)


def test_every_name_the_cli_takes_is_a_name_keras_takes_and_every_keras_loss_is_taken() -> None:
    import keras

    for name in LOSSES:
        assert keras.losses.get(name) is not None, name
    for name in OPTIMIZERS:
        assert isinstance(keras.optimizers.get(name), keras.optimizers.Optimizer), name
    taken = set()
    for name in dir(keras.losses):
        if name.islower() and not name.startswith("_"):
            with contextlib.suppress(ValueError, TypeError):
                if keras.losses.get(name) is getattr(keras.losses, name):
                    taken.add(name)
    assert len(taken) > 15 and taken <= set(LOSSES)
    taken = set()
    for name in dir(keras.optimizers):  # a wrapper cannot be made from its name alone
        with contextlib.suppress(ValueError, TypeError, KeyError):
            taken.add(type(keras.optimizers.get(name.lower())).__name__.lower())
    assert len(taken) > 10 and taken <= set(OPTIMIZERS)


def test_help_describes_every_command_and_shows_defaults_one_way() -> None:
    status, out, err, imported = hyperstep_cli("--help")
    assert status == 0 and err == [] and imported.isdisjoint(HEAVY)
    text = " ".join(out)
    description = text.split("options:")[0]
    names = [name for module in COMMANDS for name in command_names(module)]
    for name in names:
        assert re.search(rf"\b{name}\b", description), name  # in the tool's own words
    for name in names:
        status, out, err, _ = hyperstep_cli(name, "--help")
        options = re.sub(r"\s+", " ", " ".join(out).split("options:")[1])
        assert status == 0 and err == []
        assert re.findall(r"\(default[^:][^)]*\)$|default \d", options) == [], name


def _readme_module(tmp_path: Path) -> str:
    """Write the README's ``mymodule.py`` into ``tmp_path``; return the README's
    ``hyperstep lr-find`` command line."""
    text = README.read_text()
    [setup] = re.findall(r"<!-- test session=slow\n(.*?Path\(\"mymodule.py\"\).*?)-->", text, re.S)
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        exec(setup, {})  # the README's own set-up: writes mymodule.py
    finally:
        os.chdir(cwd)
    [command] = re.findall(r"^hyperstep lr-find mymodule:build.*$", text, re.M)
    return command


def test_the_readme_lr_find_example_runs_as_written(tmp_path: Path) -> None:
    command = _readme_module(tmp_path)
    status, out, err, _ = hyperstep_cli(*command.split()[1:], cwd=tmp_path)
    assert status == 0, err
    assert out[-1] == "plot: lr.png" and (tmp_path / "lr.png").stat().st_size > 0
    assert out[0].startswith("suggestion") and err == []


UNFIT = """
import keras, numpy as np
from mymodule import build
def arrays_only():  # (model, x): no targets
    model, (x, y) = build()
    model.compile(optimizer="sgd", loss="mse")
    return model, x
"""


@pytest.mark.parametrize("command", ["doctor", "lr-find"])
def test_an_uncompiled_model_or_missing_targets_name_the_fix_the_same_way(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    # in this process (a fresh one's stderr: test_the_readme_lr_find_example_runs_as_written),
    # standard output and error captured at their file descriptors
    _readme_module(tmp_path)
    (tmp_path / "unfit.py").write_text(UNFIT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the target's folder, for this test
    for name in ("mymodule", "unfit"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    try:
        capfd.readouterr()
        status = main([command, "mymodule:build"])
        out, err = capfd.readouterr()
        assert (status, out, err.splitlines()) == (
            2,
            "",
            [
                f"hyperstep {command}: error: mymodule:build returned a model that is not "
                "compiled; pass --loss NAME (e.g. --loss mse) to compile it, or compile it in "
                "FUNCTION"
            ],
        )
        status = main([command, "unfit:arrays_only"])
        out, err = capfd.readouterr()
        assert (status, out, err.splitlines()) == (
            2,
            "",
            [
                f"hyperstep {command}: error: unfit:arrays_only returned (model, x) with arrays "
                "and no targets; return (model, (x, y)), or a dataset or generator of (x, y) "
                "batches"
            ],
        )
    finally:
        for name in ("mymodule", "unfit"):
            sys.modules.pop(name, None)
