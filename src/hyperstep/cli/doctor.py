"""``hyperstep doctor MODULE:FUNCTION [--json]``: run :func:`hyperstep.doctor` from the shell.

``FUNCTION`` (no arguments) returns what to diagnose, in one of three shapes:

* ``(model, batch)``: a model compiled with a loss, and one batch such as ``(x, y)``;
* ``(model, batch, optimizer)`` or ``(model, batch, loss_fn)``: with the optimizer that
  trains it, or with ``loss_fn(model, batch) -> loss`` for a custom loop;
* a dict with the keys ``model`` and ``data`` and, optionally, ``optimizer``, ``loss_fn``
  and ``var_list`` (the arguments of :func:`hyperstep.doctor`).

``MODULE`` is a dotted module name importable from the current directory, or a path to a
``.py`` file. Exit status: 0 when no findings, 1 with findings, 2 on usage errors (a bad
``MODULE:FUNCTION``, an import error, a function that raises or returns something else);
usage errors print one message on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from typing import Any

_KEYS = ("model", "data", "optimizer", "loss_fn", "var_list")
_SHAPES = (
    "(model, batch), (model, batch, optimizer), (model, batch, loss_fn) or a dict with keys "
    "model, data and optionally optimizer, loss_fn, var_list"
)


class UsageError(Exception):
    """A problem with what the user typed or with what their function returned."""


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``doctor`` subcommand to ``subparsers`` and return its parser."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "doctor",
        help="explain why variables do not train",
        description="Explain why each variable of a model does or does not train. FUNCTION "
        "returns " + _SHAPES + ". Exit status: 0 healthy, 1 findings, 2 usage error.",
    )
    parser.add_argument(
        "target", metavar="MODULE:FUNCTION", help="e.g. mypkg.models:make or train.py:setup"
    )
    parser.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    parser.set_defaults(func=run)
    return parser


def load_target(target: str) -> Any:
    """Import ``MODULE:FUNCTION`` and return the function.

    Raises:
        UsageError: the text is not ``MODULE:FUNCTION``, the module cannot be imported, or
            the attribute is missing or not callable.
    """
    module_name, sep, function_name = target.rpartition(":")
    if not sep or not module_name or not function_name:
        raise UsageError(
            f"expected MODULE:FUNCTION, e.g. mypkg.models:make or train.py:setup. "
            f"Received: {target!r}"
        )
    try:
        if module_name.endswith(".py") or os.sep in module_name:
            module = _import_file(module_name)
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
    except UsageError:
        raise
    except BaseException as error:  # SystemExit in a script counts as an import failure
        raise UsageError(
            f"could not import {module_name!r}: {type(error).__name__}: {error}"
        ) from error
    function = getattr(module, function_name, None)
    if function is None:
        raise UsageError(f"module {module_name!r} has no attribute {function_name!r}")
    if not callable(function):
        raise UsageError(
            f"{target!r} is not a function: it is a {type(function).__name__}. It must return "
            + _SHAPES
        )
    return function


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


def arguments(returned: Any, target: str = "FUNCTION") -> dict[str, Any]:
    """Turn what the function returned into keyword arguments of :func:`hyperstep.doctor`.

    Raises:
        UsageError: the value has none of the accepted shapes.
    """
    if isinstance(returned, dict):
        unknown = sorted(set(returned) - set(_KEYS))
        missing = [k for k in ("model", "data") if k not in returned]
        if unknown or missing:
            problem = f"unknown keys {unknown}" if unknown else f"missing keys {missing}"
            raise UsageError(f"{target} returned a dict with {problem}; it must return {_SHAPES}")
        return dict(returned)
    if isinstance(returned, (tuple, list)) and len(returned) in (2, 3):
        found = {"model": returned[0], "data": returned[1]}
        if len(returned) == 3:
            import keras

            third = returned[2]
            if isinstance(third, keras.optimizers.Optimizer):
                found["optimizer"] = third
            elif callable(third):
                found["loss_fn"] = third
            else:
                raise UsageError(
                    f"{target} returned a third item of type {type(third).__name__}; it must "
                    "be a Keras optimizer or a loss function loss_fn(model, batch)"
                )
        return found
    shape = f"{type(returned).__name__} {returned!r}"[:80]
    if isinstance(returned, (tuple, list)):
        shape = f"a {type(returned).__name__} of length {len(returned)}"
    raise UsageError(f"{target} returned {shape}; it must return {_SHAPES}")


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; return the exit status (0 healthy, 1 findings, 2 usage error)."""
    from hyperstep.errors import HyperstepError

    try:
        function = load_target(args.target)
        try:
            returned = function()
        except Exception as error:
            raise UsageError(f"{args.target} raised {type(error).__name__}: {error}") from error
        kwargs = arguments(returned, args.target)
        from hyperstep.doctor import doctor

        model = kwargs.pop("model")
        data = kwargs.pop("data")
        diagnosis = doctor(model, data, **kwargs)
    except (UsageError, HyperstepError) as error:
        print(f"hyperstep doctor: error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(diagnosis.to_dict(), indent=2))
    else:
        print(diagnosis)
    return 0 if diagnosis.ok else 1
