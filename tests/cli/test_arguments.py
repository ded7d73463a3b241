"""Units of :mod:`hyperstep.cli.arguments`: ``positive_int`` as an argparse type,
``MODULE:FUNCTION`` loaded and called with every failure one :class:`UsageError`,
``--loss`` compiling with Keras's own loss, and ``quiet_stderr`` on file descriptor 2."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import keras
import pytest

from hyperstep.cli.arguments import (
    MAX_STEP,
    UsageError,
    call_target,
    check_loss_names,
    compile_with_loss,
    positive_int,
    quiet_stderr,
)


# ---- positive_int -----------------------------------------------------------------------
@pytest.mark.parametrize("text", ["1", " 7 ", "+12", "0003", str(2**53)])
def test_positive_int_reads_what_int_reads(text: str) -> None:
    assert positive_int(text) == int(text)


@pytest.mark.parametrize("text", ["0", "-3", "1.5", "1e3", "abc", "", "0x10", "1_000"])
def test_positive_int_refuses_anything_else_naming_the_text(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="expected a positive integer") as e:
        positive_int(text)
    assert repr(text) in str(e.value)


def test_positive_int_refuses_more_than_a_float64_holds_exactly() -> None:
    assert MAX_STEP == 2**53 and float(MAX_STEP + 1) == float(MAX_STEP)
    text = str(MAX_STEP + 1)
    with pytest.raises(argparse.ArgumentTypeError, match=f"at most 2\\*\\*53 = {MAX_STEP}"):
        positive_int(text)


def test_positive_int_as_an_argparse_type_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = argparse.ArgumentParser(prog="prog")
    parser.add_argument("--steps", type=positive_int)
    assert parser.parse_args(["--steps", "5"]).steps == 5
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["--steps", "-1"])
    assert exit_.value.code == 2
    assert "argument --steps: expected a positive integer, got '-1'" in capsys.readouterr().err


# ---- call_target ------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["nocolon", ":make", "module:", "train.py"])
def test_call_target_refuses_a_text_without_module_and_function(target: str) -> None:
    with pytest.raises(UsageError, match="expected MODULE:FUNCTION") as error:
        call_target(target)
    assert str(error.value).endswith(f"Received: {target!r}")


def test_call_target_imports_a_dotted_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # it may add the working directory
    assert call_target("os:getcwd") == os.getcwd()
    assert call_target("json:JSONDecoder").__class__ is json.JSONDecoder


def _script(tmp_path: Path, text: str, name: str = "setup_target.py") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_call_target_imports_a_py_file(tmp_path: Path) -> None:
    path = _script(tmp_path, "VALUE = 3\ndef make():\n    return VALUE * 2, __name__\n")
    assert call_target(f"{path}:make") == (6, "setup_target")  # named after the file


def test_call_target_names_each_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = str(tmp_path / "missing.py")
    with pytest.raises(UsageError, match=re.escape(f"no such file: {missing!r}")):
        call_target(f"{missing}:make")
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(UsageError, match="could not import 'no_such_module_zz'"):
        call_target("no_such_module_zz:make")
    broken = _script(tmp_path, "raise RuntimeError('boom\\nsecond line')\n", "broken.py")
    with pytest.raises(UsageError) as error:
        call_target(f"{broken}:make")
    assert str(error.value) == f"could not import {broken!r}: RuntimeError: boom"
    exits = _script(tmp_path, "import sys\nsys.exit(3)\n", "exits.py")
    with pytest.raises(UsageError, match=r"could not import .*: SystemExit: 3"):
        call_target(f"{exits}:make")
    path = _script(tmp_path, "NUMBER = 4\n")
    with pytest.raises(UsageError) as error:
        call_target(f"{path}:make")
    assert str(error.value) == f"module {path!r} has no attribute 'make'"
    with pytest.raises(UsageError) as error:
        call_target(f"{path}:NUMBER")
    assert str(error.value) == f"{f'{path}:NUMBER'!r} is not a function: it is a int"


@pytest.mark.parametrize(
    ("raised", "shown"),
    [
        ("ValueError('bad shape\\nmore detail')", "ValueError: bad shape"),
        ("SystemExit(4)", "SystemExit: 4"),
        ("KeyError()", "KeyError"),
    ],
)
def test_call_target_turns_anything_the_function_raises_into_one_usage_error(
    tmp_path: Path, raised: str, shown: str
) -> None:
    path = _script(tmp_path, f"def make():\n    raise {raised}\n", "raising.py")
    with pytest.raises(UsageError) as error:
        call_target(f"{path}:make")
    assert str(error.value) == f"{path}:make raised {shown}"
    assert error.value.__suppress_context__  # `from None`: one message, no chained error


# ---- compile_with_loss ------------------------------------------------------------------
def _model() -> keras.Model:
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])


def test_no_loss_changes_a_compiled_model_or_a_loss_fn_user_s_nothing() -> None:
    model = _model()
    model.compile(optimizer="sgd", loss="mse")
    assert compile_with_loss(model, None, "m:f") is model
    uncompiled = _model()
    assert compile_with_loss(uncompiled, None, "m:f", needs_loss=False) is uncompiled
    assert not uncompiled.compiled


def test_a_loss_compiles_with_keras_loss_and_the_named_optimizer() -> None:
    model = compile_with_loss(_model(), "mse", "m:f", "adam")
    assert model.compiled
    assert model.loss is keras.losses.get("mse")
    assert type(model.optimizer) is type(keras.optimizers.get("adam"))


def test_a_compiled_model_keeps_its_optimizer() -> None:
    model = _model()
    optimizer = keras.optimizers.RMSprop(0.003)
    model.compile(optimizer=optimizer, loss="mae")
    compile_with_loss(model, "binary_crossentropy", "m:f", "adam")
    assert model.optimizer is optimizer
    assert model.loss is keras.losses.get("binary_crossentropy")


def test_compile_with_loss_refusals_name_the_flag_and_value() -> None:
    with pytest.raises(UsageError, match="--loss needs a Keras model; m:f returned a dict"):
        compile_with_loss({}, "mse", "m:f")
    with pytest.raises(UsageError, match="m:f returned a model that is not compiled; pass --loss"):
        compile_with_loss(_model(), None, "m:f")
    with pytest.raises(UsageError) as error:
        check_loss_names("no_such_loss")
    assert str(error.value).endswith(". Received: --loss no_such_loss")
    with pytest.raises(UsageError) as error:
        check_loss_names("mse", "no_such_optimizer")
    assert str(error.value).endswith(". Received: --optimizer no_such_optimizer")


# ---- quiet_stderr -----------------------------------------------------------------------
@contextlib.contextmanager
def stderr_on_fd_2() -> Iterator[None]:
    """``sys.stderr`` writing to file descriptor 2, as in a terminal (``capfd`` gives it a
    file of its own at the start of the test's call; ``capfd`` reads descriptor 2)."""
    saved = sys.stderr
    with open(2, "w", closefd=False) as stream:
        sys.stderr = stream
        try:
            yield
        finally:
            sys.stderr = saved


def test_quiet_stderr_filters_what_reaches_file_descriptor_2(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with stderr_on_fd_2(), quiet_stderr():
        os.write(2, b"I0000 12:34:56.789 cpu_feature_guard.cc] note\n")
        os.write(2, b"W1202 00:00:00.000 warning line\n")
        os.write(2, b"To enable the following instructions: AVX2\n")
        os.write(2, b"an error\n")
        sys.stderr.write("a Python message; I0000 12:34:56 in the middle stays\n")
    err = capfd.readouterr().err
    assert err == "an error\na Python message; I0000 12:34:56 in the middle stays\n"


def test_quiet_stderr_restores_file_descriptor_2_after_an_error(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with stderr_on_fd_2():
        with pytest.raises(RuntimeError), quiet_stderr():
            os.write(2, b"I0000 12:34:56.789 dropped\ninside\n")
            raise RuntimeError("stop")
        os.write(2, b"I0000 12:34:56.789 after, kept\n")
    assert capfd.readouterr().err == "inside\nI0000 12:34:56.789 after, kept\n"


def test_quiet_stderr_with_a_stderr_without_descriptor_hides_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with quiet_stderr():
        print("I0000 12:34:56.789 kept", file=sys.stderr)
    assert capsys.readouterr().err == "I0000 12:34:56.789 kept\n"
