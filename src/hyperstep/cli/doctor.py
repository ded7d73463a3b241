"""``hyperstep doctor MODULE:FUNCTION [--loss NAME] [--json]``: :func:`hyperstep.doctor`.

``FUNCTION`` (no arguments) returns what to diagnose in one of the shapes of
:data:`SHAPES`; the exit status is 0 when no findings, 1 with findings (docs/cli.md).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from hyperstep.cli.arguments import (
    LOSS_HELP,
    UsageError,
    call_target,
    check_loss_names,
    check_targets,
    compile_with_loss,
    quiet_stderr,
)

_KEYS = ("model", "data", "optimizer", "loss_fn", "var_list")
SHAPES = (
    "(model, batch), (model, batch, optimizer), (model, batch, loss_fn) or a dict with keys "
    "model, data and optionally optimizer, loss_fn, var_list"
)


def register(subparsers: Any) -> None:
    """Add the ``doctor`` subcommand."""
    parser = subparsers.add_parser(
        "doctor",
        help="explain why variables do not train",
        description="Explain why each variable of a model does or does not train. FUNCTION "
        f"takes no arguments and returns {SHAPES}; the model must be compiled with a loss, "
        "or pass --loss, or return a loss_fn. Exit status: 0 healthy, 1 findings, 2 usage "
        "error.",
    )
    parser.add_argument(
        "target", metavar="MODULE:FUNCTION", help="e.g. mypkg.models:make or train.py:setup"
    )
    parser.add_argument("--loss", metavar="NAME", default=None, help=LOSS_HELP)
    parser.add_argument("--json", action="store_true", help="print the diagnosis as JSON")
    parser.set_defaults(func=run)


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
            raise UsageError(f"{target} returned a dict with {problem}; it must return {SHAPES}")
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
    raise UsageError(f"{target} returned {shape}; it must return {SHAPES}")


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; return the exit status (0 healthy, 1 findings; a usage error
    raises, for :func:`hyperstep.cli.main.main`'s exit status 2)."""
    check_loss_names(args.loss)
    with quiet_stderr():
        kwargs = arguments(call_target(args.target), args.target)
        from hyperstep.diagnosis.diagnose import doctor

        custom = "loss_fn" in kwargs  # loss_fn(model, batch) takes any batch
        if not custom:
            check_targets(kwargs["data"], args.target)
        model = compile_with_loss(
            kwargs.pop("model"), args.loss, args.target, needs_loss=not custom
        )
        diagnosis = doctor(model, kwargs.pop("data"), **kwargs)
    print(json.dumps(diagnosis.to_dict(), indent=2) if args.json else diagnosis)
    return 0 if diagnosis.ok else 1
