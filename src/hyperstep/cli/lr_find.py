"""``hyperstep lr-find MODULE:FUNCTION``: run :func:`hyperstep.find_lr` from the shell.

``FUNCTION`` returns ``(model, data)`` (or a dict with the keys ``model`` and ``data``);
what it prints, writes and refuses, and with which exit status: docs/cli.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from hyperstep.cli.arguments import (
    LOSS_HELP,
    UsageError,
    call_target,
    check_loss_names,
    check_targets,
    compile_with_loss,
    positive_float,
    positive_int,
    quiet_stderr,
)

DEFAULT_OUT = "lr.png"
DEFAULT_OPTIMIZER = "sgd"
#: what ``--out`` may end with (the image formats matplotlib writes without extra packages)
PLOT_FORMATS = (".png", ".pdf", ".svg", ".jpg", ".jpeg", ".eps", ".ps", ".tif", ".tiff", ".webp")
_SHAPE = "(model, data) or a dict with keys model and data"


def register(subparsers: Any) -> None:
    """Add the ``lr-find`` subcommand."""
    parser = subparsers.add_parser(
        "lr-find",
        help="find a learning rate with a range test",
        description="Train a few batches at learning rates rising from --min-lr to --max-lr, "
        "then restore the model exactly; print the suggested learning rates and plot loss "
        f"against learning rate. FUNCTION takes no arguments and returns {_SHAPE} (a model "
        "compiled with an optimizer, or uncompiled with --loss). Exit status: 0 done, 2 usage "
        "error.",
    )
    parser.add_argument(
        "target", metavar="MODULE:FUNCTION", help="e.g. mypkg.models:make or train.py:setup"
    )
    parser.add_argument("--min-lr", type=positive_float, default=1e-8, help="first learning rate")
    parser.add_argument("--max-lr", type=positive_float, default=1.0, help="last learning rate")
    parser.add_argument("--steps", type=ramp_steps, default=100, help="batches (learning rates)")
    parser.add_argument(
        "--mode", choices=("exponential", "linear"), default="exponential", help="the ramp"
    )
    parser.add_argument(
        "--out", default=DEFAULT_OUT, help=f"the plot, a {'/'.join(PLOT_FORMATS)} file"
    )
    parser.add_argument("--json", action="store_true", help="print the finding as JSON")
    parser.add_argument("--loss", metavar="NAME", default=None, help=LOSS_HELP)
    parser.add_argument(
        "--optimizer",
        metavar="NAME",
        default=DEFAULT_OPTIMIZER,
        help="the Keras optimizer an uncompiled model is compiled with (with --loss)",
    )
    parser.set_defaults(func=run)


def ramp_steps(text: str) -> int:
    """An argparse type: the range test's steps, an integer >= 2 (one per learning rate)."""
    steps = positive_int(text)
    if steps < 2:
        raise argparse.ArgumentTypeError(
            f"the range test needs at least 2 steps (one per learning rate; 100 is usual), "
            f"got {text!r}"
        )
    return steps


def check_arguments(args: argparse.Namespace) -> None:
    """Raise UsageError for what the parser alone cannot see; nothing is imported."""
    if not args.max_lr > args.min_lr:
        raise UsageError(
            "--max-lr must be larger than --min-lr. Received: "
            f"--min-lr {args.min_lr:g} --max-lr {args.max_lr:g}"
        )
    check_loss_names(args.loss, args.optimizer)
    if os.path.isdir(args.out):
        raise UsageError(
            f"--out is a folder; give a file such as {DEFAULT_OUT}. Received: {args.out}"
        )
    if os.path.splitext(args.out)[1].lower() not in PLOT_FORMATS:
        raise UsageError(
            f"--out must end with an image extension ({', '.join(PLOT_FORMATS)}). "
            f"Received: --out {args.out}"
        )


def model_and_data(returned: Any, target: str) -> tuple[Any, Any, Any]:
    """``(model, x, y)`` from what the function returned (``y`` is ``None`` unless the data
    is an ``(x, y)`` pair).

    Raises:
        UsageError: For any other shape.
    """
    if isinstance(returned, dict) and {"model", "data"} <= set(returned):
        returned = (returned["model"], returned["data"])
    if not isinstance(returned, (tuple, list)) or len(returned) != 2:
        shown = f"{type(returned).__name__} {returned!r}"[:80]
        raise UsageError(f"{target} returned {shown}; it must return {_SHAPE}")
    model, data = returned
    if isinstance(data, (tuple, list)) and len(data) == 2:
        return model, data[0], data[1]
    return model, data, None


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; return the exit status (0 done; a usage error raises, for
    :func:`hyperstep.cli.main.main`'s exit status 2)."""
    from hyperstep.errors import HyperstepError

    check_arguments(args)
    model, x, y = model_and_data(call_target(args.target), args.target)
    model = compile_with_loss(model, args.loss, args.target, args.optimizer)
    check_data(model, x, y, args.target)
    with quiet_stderr():
        from hyperstep.tune.lr_find import find_lr

    bar = not args.json and sys.stdout.isatty()
    try:
        finding = find_lr(
            model, x, y, min_lr=args.min_lr, max_lr=args.max_lr, steps=args.steps,
            mode=args.mode, verbose="auto" if bar else 0,
        )  # fmt: skip
    except (ValueError, TypeError) as error:
        if isinstance(error, HyperstepError):
            raise
        first = (str(error).strip().splitlines() or [""])[0]
        raise UsageError(
            f"the data {args.target} returned does not fit the model: "
            f"{type(error).__name__}: {first}"
        ) from None
    from hyperstep.tune.finding import FACTOR

    plot: str | None = args.out
    try:
        finding.plot(args.out)
    except ImportError as error:
        print(f"hyperstep lr-find: no plot: {error}", file=sys.stderr)
        plot = None
    if args.json:
        print(json.dumps({**finding.to_dict(), "plot": plot}, indent=2))
        return 0
    rule = f"the centred loss's minimum / {FACTOR:g}"
    print(f"suggestion: {_number(finding.suggestion())} ({rule})")
    if finding.warning is not None:
        print(f"warning: {finding.warning}")
    print(f"steepest: {_number(finding.steepest())}, valley: {_number(finding.valley())}")
    taken = len(finding.learning_rates)
    ended = ", stopped early: the loss diverged" if finding.stopped_early else ""
    print(f"steps: {taken} of {finding.steps}{ended}")
    if plot is not None:
        print(f"plot: {plot}")
    return 0


def check_data(model: Any, x: Any, y: Any, target: str) -> None:
    """Raise UsageError for arrays without targets, or arrays whose shape the model's
    input does not take (when the model knows its input shape)."""
    if y is None:
        check_targets(x, target)
    inputs = getattr(model, "inputs", None) or []  # none known: a subclassed model
    if not hasattr(x, "shape") or not getattr(model, "built", False) or len(inputs) != 1:
        return
    expected = tuple(inputs[0].shape)
    found = tuple(x.shape)
    fits = len(found) == len(expected) and all(
        e is None or e == f for e, f in zip(expected[1:], found[1:], strict=True)
    )
    if not fits:
        shown = ", ".join(["batch", *(str(e) for e in expected[1:])])
        raise UsageError(
            f"the inputs {target} returned have shape {found}; the model takes ({shown})"
        )


def _number(value: float | None) -> str:
    return "none (too few points; raise --steps)" if value is None else f"{value:.3g}"
