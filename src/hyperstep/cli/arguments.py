"""What the commands share: argument types, ``MODULE:FUNCTION`` targets, ``--loss``, and
keeping TensorFlow's banners off the terminal."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

#: the largest step count a float64 holds exactly
MAX_STEPS = 2**53
#: what ``--loss`` says in every command's help
LOSS_HELP = (
    "a Keras loss name (e.g. mse, sparse_categorical_crossentropy, binary_crossentropy) for "
    "a model FUNCTION returns uncompiled; it is compiled with this loss"
)


class UsageError(Exception):
    """A problem with what the user typed or with what their function returned."""


def positive_int(text: str) -> int:
    """An argparse type: an integer from 1 to 2**53."""
    value = int(text) if re.fullmatch(r"\s*[+-]?\d+\s*", text) else 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    if value > MAX_STEPS:
        raise argparse.ArgumentTypeError(f"expected at most 2**53 = {MAX_STEPS}, got {text!r}")
    return value


#: what TensorFlow's C++ logging writes unasked: absl's notice, INFO/WARNING lines and the
#: CPU feature note (errors, and everything else, still reach the terminal)
_BANNER = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\)|[IW]\d{4} \d\d:\d\d:\d\d"
    r"|To enable the following instructions:"
)


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Keep TensorFlow's banners off the terminal while inside: stderr goes to a file, and
    at the end every line of it but the banners is written back."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a captured stderr: nothing to hide
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            sink.seek(0)
            lines = sink.read().decode(errors="replace").splitlines(keepends=True)
            sys.stderr.write("".join(x for x in lines if not _BANNER.match(x)))
            sys.stderr.flush()


def load_target(target: str) -> Callable[[], Any]:
    """Import ``MODULE:FUNCTION`` (a dotted module or a ``.py`` path); return the function.

    Raises UsageError on a bad text, a failed import, or a missing or uncallable attribute.
    """
    module_name, sep, function_name = target.rpartition(":")
    if not sep or not module_name or not function_name:
        raise UsageError(
            f"expected MODULE:FUNCTION, e.g. mypkg.models:make or train.py:setup. "
            f"Received: {target!r}"
        )
    try:
        with quiet_stderr():
            if module_name.endswith(".py") or os.sep in module_name:
                module = _import_file(module_name)
            else:
                if "" not in sys.path and os.getcwd() not in sys.path:
                    sys.path.insert(0, os.getcwd())
                module = importlib.import_module(module_name)
    except UsageError:
        raise
    except BaseException as error:  # SystemExit or Ctrl-C in a script: a failed import
        raise UsageError(f"could not import {module_name!r}: {_describe(error)}") from None
    function = getattr(module, function_name, None)
    if function is None:
        raise UsageError(f"module {module_name!r} has no attribute {function_name!r}")
    if not callable(function):
        raise UsageError(f"{target!r} is not a function: it is a {type(function).__name__}")
    return function  # type: ignore[no-any-return]


def call_target(function: Callable[[], Any], target: str) -> Any:
    """Call ``function()``; anything it raises (even SystemExit) becomes a UsageError."""
    try:
        with quiet_stderr():
            return function()
    except BaseException as error:
        raise UsageError(f"{target} raised {_describe(error)}") from None


def compile_with_loss(model: Any, loss: str | None, optimizer_name: str = "sgd") -> Any:
    """Compile ``model`` with the Keras loss named ``loss`` (keeping its optimizer, if any,
    else the Keras optimizer ``optimizer_name``); return it. Behind ``--loss`` of ``doctor``
    and ``lr-find``; ``None`` changes nothing. Raises UsageError if ``loss`` is not a Keras
    loss name, ``optimizer_name`` not a Keras optimizer name or ``model`` not a Keras model.
    """
    if loss is None:
        return model
    import keras

    if not isinstance(model, keras.Model):
        raise UsageError(f"--loss needs a Keras model; FUNCTION returned a {type(model).__name__}")
    try:
        function = keras.losses.get(loss)
    except (ValueError, TypeError):
        raise UsageError(
            f"--loss must name a Keras loss such as mse or sparse_categorical_crossentropy. "
            f"Received: --loss {loss}"
        ) from None
    optimizer = getattr(model, "optimizer", None) if getattr(model, "compiled", False) else None
    if optimizer is None:
        try:
            optimizer = keras.optimizers.get(optimizer_name)
        except (ValueError, TypeError):
            raise UsageError(
                "--optimizer must name a Keras optimizer such as sgd, adam or adamw. "
                f"Received: --optimizer {optimizer_name}"
            ) from None
    model.compile(optimizer=optimizer, loss=function)
    return model


def _import_file(path: str) -> Any:
    if not os.path.isfile(path):
        raise UsageError(f"no such file: {path!r}")
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return type(error).__name__ + (f": {text[0]}" if text else "")
