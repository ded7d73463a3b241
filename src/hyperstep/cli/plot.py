"""``hyperstep plot EXPR [EXPR ...] --steps N [--total N]``: draw schedules as PNG or text.

Runs without Keras: the schedules evaluate with NumPy (the same float32 values), so the
command starts in a fraction of a second. Bad expressions exit with status 2 and the
parser's message, caret included, on stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

from hyperstep.cli.arguments import UsageError, positive_int

DEFAULT_OUT = "schedule.png"
#: points sampled per curve for a PNG (every step when there are fewer)
PNG_POINTS = 4000
#: points sampled per curve for a text chart (every step when there are fewer)
TEXT_POINTS = 200_000


def register(subparsers: Any) -> None:
    """Add the ``plot`` subcommand."""
    parser = subparsers.add_parser(
        "plot",
        help="draw schedules given as expressions",
        description="Draw one or more schedules, e.g. "
        "hyperstep plot 'warmup(cosine(1e-3, steps=9000), steps=1000)' --steps 10000. "
        f"Writes a PNG (--out, default {DEFAULT_OUT}) unless --text is given or matplotlib "
        "is missing, in which case a text chart is printed.",
    )
    parser.add_argument("expressions", nargs="+", metavar="EXPR", help="a schedule expression")
    parser.add_argument(
        "--steps",
        type=positive_int,
        default=None,
        help="plot steps 0 .. N-1 (default: the schedules' natural length, if they have one)",
        metavar="N",
    )
    parser.add_argument("--out", default=DEFAULT_OUT, help="PNG file to write")
    parser.add_argument("--log", action="store_true", help="logarithmic value axis")
    parser.add_argument("--text", action="store_true", help="print a text chart instead")
    parser.add_argument(
        "--steps-per-epoch",
        type=positive_int,
        default=None,
        metavar="K",
        help="steps in an epoch, for expressions that use `epoch`",
    )
    parser.add_argument(
        "--total",
        type=positive_int,
        default=None,
        metavar="N",
        help="the run's length, for expressions that use `total` or `progress`",
    )
    parser.add_argument("--width", type=positive_int, default=72, help="text chart columns")
    parser.add_argument("--height", type=positive_int, default=16, help="text chart rows")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Parse, sample and draw the expressions of ``args``; return the exit status."""
    from hyperstep.backends import numpy_ops

    numpy_ops.request()  # before the schedules are imported: no Keras in this process
    import numpy as np

    from hyperstep.errors import HyperstepError
    from hyperstep.schedules.chart import text_chart, write_png
    from hyperstep.schedules.expressions import bind_total, uses_epoch, uses_total
    from hyperstep.schedules.language import parse
    from hyperstep.schedules.sample import sample

    text_mode = args.text or importlib.util.find_spec("matplotlib") is None
    num = TEXT_POINTS if text_mode else PNG_POINTS
    schedules, curves = [], []
    try:  # an error is hyperstep.cli.main's to print (`hyperstep plot: error: ...`, status 2)
        for text in args.expressions:
            schedule = parse(text, steps_per_epoch=args.steps_per_epoch)
            if uses_epoch(schedule):
                raise HyperstepError(f"{text!r} uses `epoch`; pass --steps-per-epoch K")
            if uses_total(schedule):
                if args.total is None:
                    raise HyperstepError(f"{text!r} uses `total`, the run's length; pass --total N")
                schedule = bind_total(schedule, args.total)
            schedules.append(schedule)
        if args.steps is None:  # e.g. wsd(...) or warmup(cosine(...)) end at a known step
            lengths = [s.natural_steps for s in schedules if s.natural_steps is not None]
            if not lengths:
                raise HyperstepError("pass --steps N (no natural length)")
            args.steps = max(1, math.ceil(max(lengths)))
        for text, schedule in zip(args.expressions, schedules, strict=True):
            with np.errstate(all="ignore"):  # like Keras: inf and nan, drawn as gaps
                curves.append((text, *sample(schedule, args.steps, num=num)))
    except (ArithmeticError, ValueError) as error:
        raise UsageError(str(error)) from None
    if not args.text and text_mode:
        print("hyperstep plot: matplotlib is not installed; printing a text chart", file=sys.stderr)
    if text_mode:
        print(text_chart(curves, log=args.log, width=args.width, height=args.height))
        return 0
    out = Path(args.out)
    try:
        write_png(curves, out, log=args.log, steps_per_epoch=args.steps_per_epoch)
    except OSError as error:
        print(f"hyperstep plot: error: cannot write {out}: {error}", file=sys.stderr)
        return 1
    print(
        f"wrote {out} ({len(curves)} schedule{'s' if len(curves) > 1 else ''}, "
        f"steps 0..{args.steps - 1})"
    )
    return 0
