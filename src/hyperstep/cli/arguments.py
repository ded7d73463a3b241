"""What the commands share: argument types, ``MODULE:FUNCTION`` targets, ``--loss``, and
keeping TensorFlow's banners off the terminal."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import importlib.util
import math
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

from hyperstep.control.verbs import MAX_STEP

#: what ``--loss`` says in every command's help
LOSS_HELP = (
    "a Keras loss name (e.g. mse, sparse_categorical_crossentropy, binary_crossentropy) for "
    "a model FUNCTION returns uncompiled; it is compiled with this loss"
)
#: the names ``keras.losses.get`` takes (checked before Keras is imported; a test compares
#: them with the installed Keras)
LOSSES = (
    "binary_crossentropy", "binary_focal_crossentropy", "categorical_crossentropy",
    "categorical_focal_crossentropy", "categorical_hinge", "circle", "cosine_similarity",
    "ctc", "dice", "hinge", "huber", "kl_divergence", "log_cosh", "mean_absolute_error",
    "mean_absolute_percentage_error", "mean_squared_error", "mean_squared_logarithmic_error",
    "poisson", "sparse_categorical_crossentropy", "squared_hinge", "tversky",
    "bce", "kld", "mae", "mape", "mse", "msle", "BCE", "KLD", "MAE", "MAPE", "MSE", "MSLE",
    "BinaryCrossentropy", "BinaryFocalCrossentropy", "CTC", "CategoricalCrossentropy",
    "CategoricalFocalCrossentropy", "CategoricalHinge", "Circle", "CosineSimilarity", "Dice",
    "Hinge", "Huber", "KLDivergence", "LogCosh", "MeanAbsoluteError",
    "MeanAbsolutePercentageError", "MeanSquaredError", "MeanSquaredLogarithmicError",
    "Poisson", "SparseCategoricalCrossentropy", "SquaredHinge", "Tversky",
)  # fmt: skip
#: the names ``keras.optimizers.get`` takes (any case), checked the same way
OPTIMIZERS = (
    "adadelta", "adafactor", "adagrad", "adam", "adamax", "adamw", "ftrl", "lion", "muon",
    "nadam", "rmsprop", "schedulefreeadamw", "sgd",
)  # fmt: skip


class UsageError(Exception):
    """A problem with what the user typed or with what their function returned."""


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that ends each option that has a default with ``(default: VALUE)``, one way
    for every command (flags and options without a default say nothing)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False or action.default == argparse.SUPPRESS:
            return action.help
        return f"{action.help} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr, exit status 2, and
    whose help shows defaults one way (its subcommands' parsers are of this class too)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:  # argparse's is `NoReturn`; so is this
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def check_name(flag: str, name: str | None, names: tuple[str, ...], what: str) -> None:
    """Raise UsageError unless ``name`` is one of ``names`` (``None`` passes), with the
    closest name as "did you mean"; optimizer names compare in any case, as Keras's do.

    Example:
        >>> try:
        ...     check_name("--loss", "msee", LOSSES, "a Keras loss such as mse")
        ... except UsageError as error:
        ...     print(str(error).split("; ")[1])
        did you mean mse? Received: --loss msee
    """
    if name is None:
        return
    fold = names is OPTIMIZERS
    if (name.lower() if fold else name) in names:
        return
    close = difflib.get_close_matches(name.lower() if fold else name, names, n=1)
    hint = f"; did you mean {close[0]}?" if close else "."
    raise UsageError(f"{flag} must name {what}{hint} Received: {flag} {name}")


def positive_float(text: str) -> float:
    """An argparse type: a positive finite number."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: an integer from 1 to 2**53."""
    value = int(text) if re.fullmatch(r"\s*[+-]?\d+\s*", text) else 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    if value > MAX_STEP:
        raise argparse.ArgumentTypeError(f"expected at most 2**53 = {MAX_STEP}, got {text!r}")
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


def call_target(target: str) -> Any:
    """Import ``MODULE:FUNCTION`` (a dotted module or a ``.py`` path) and return what the
    function returns, called with no arguments.

    Raises UsageError on a bad text, a failed import, a missing or uncallable attribute, or
    anything the function raises (even SystemExit).
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
    try:
        with quiet_stderr():
            return function()
    except BaseException as error:
        raise UsageError(f"{target} raised {_describe(error)}") from None


def check_loss_names(loss: str | None, optimizer: str | None = None) -> None:
    """Raise UsageError unless ``--loss`` and ``--optimizer`` name what Keras has (or are
    not given): before anything is imported."""
    check_name(
        "--loss", loss, LOSSES, "a Keras loss such as mse or sparse_categorical_crossentropy"
    )
    check_name("--optimizer", optimizer, OPTIMIZERS, "a Keras optimizer such as sgd, adam or adamw")


def check_targets(data: Any, target: str) -> None:
    """Raise UsageError if ``data`` is arrays without targets (``(model, x)``)."""
    if hasattr(data, "shape") and hasattr(data, "dtype"):
        raise UsageError(
            f"{target} returned (model, x) with arrays and no targets; return "
            "(model, (x, y)), or a dataset or generator of (x, y) batches"
        )


def compile_with_loss(
    model: Any, loss: str | None, target: str, optimizer_name: str = "sgd", needs_loss: bool = True
) -> Any:
    """Compile ``model`` with the Keras loss named ``loss`` (keeping its optimizer, if any,
    else the Keras optimizer ``optimizer_name``); return it. Behind ``--loss`` of ``doctor``
    and ``lr-find``; ``None`` changes nothing. Raises UsageError if ``model`` is not a Keras
    model, or (``needs_loss``) is not compiled and no ``--loss`` was given.
    """
    if loss is None:
        if needs_loss and not getattr(model, "compiled", False):
            raise UsageError(
                f"{target} returned a model that is not compiled; pass --loss NAME (e.g. --loss "
                "mse) to compile it, or compile it in FUNCTION"
            )
        return model
    import keras

    if not isinstance(model, keras.Model):
        raise UsageError(f"--loss needs a Keras model; {target} returned a {type(model).__name__}")
    optimizer = getattr(model, "optimizer", None) if getattr(model, "compiled", False) else None
    model.compile(optimizer=optimizer or optimizer_name, loss=keras.losses.get(loss))
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
