"""``hyperstep plot EXPR [EXPR ...] --steps N``: draw schedules as a PNG or a text chart.

A PNG is written (to ``--out``, default ``schedule.png``) with matplotlib's Agg renderer;
``--text`` prints a chart in the terminal instead, and so does a machine without
matplotlib (saying so on stderr). Bad expressions exit with status 2 and the parser's
message, caret included, on stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hyperstep.errors import HyperstepError, ScheduleSyntaxError
from hyperstep.schedules.base import Schedule, uses_epoch
from hyperstep.schedules.parse import parse
from hyperstep.schedules.sample import sample

#: one curve: (label, steps, values)
Curve = tuple[str, np.ndarray, np.ndarray]

DEFAULT_OUT = "schedule.png"
#: points sampled per curve for a PNG (every step when there are fewer)
PNG_POINTS = 4000
#: points sampled per curve for a text chart (every step when there are fewer)
TEXT_POINTS = 200_000
_MARKERS = "*o+x#@%&"


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
        type=_positive_int,
        default=None,
        help="plot steps 0 .. N-1 (default: the schedules' natural length, if they have one)",
        metavar="N",
    )
    parser.add_argument("--out", default=None, help=f"PNG file to write (default {DEFAULT_OUT})")
    parser.add_argument("--log", action="store_true", help="logarithmic value axis")
    parser.add_argument("--text", action="store_true", help="print a text chart instead")
    parser.add_argument(
        "--steps-per-epoch",
        type=_positive_int,
        default=None,
        metavar="K",
        help="steps in an epoch, for expressions that use `epoch`",
    )
    parser.add_argument("--width", type=_positive_int, default=72, help="text chart columns")
    parser.add_argument("--height", type=_positive_int, default=16, help="text chart rows")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Parse, sample and draw the expressions of ``args``; return the exit status."""
    schedules: list[Schedule] = []
    for text in args.expressions:
        try:
            schedule = parse(text, steps_per_epoch=args.steps_per_epoch)
        except ScheduleSyntaxError as error:
            print(f"hyperstep plot: error: {error}", file=sys.stderr)
            return 2
        if uses_epoch(schedule):
            print(
                f"hyperstep plot: error: {text!r} uses `epoch`; pass --steps-per-epoch K",
                file=sys.stderr,
            )
            return 2
        schedules.append(schedule)
    if args.steps is None:  # e.g. wsd(...) or warmup(cosine(...)) end at a known step
        lengths = [s.natural_steps for s in schedules if s.natural_steps is not None]
        if not lengths:
            print("hyperstep plot: error: pass --steps N (no natural length)", file=sys.stderr)
            return 2
        args.steps = max(1, math.ceil(max(lengths)))
    text_mode = args.text or not have_matplotlib()
    if not args.text and text_mode:
        print("hyperstep plot: matplotlib is not installed; printing a text chart", file=sys.stderr)
    num = TEXT_POINTS if text_mode else PNG_POINTS
    try:
        curves = [
            (text, *sample(s, args.steps, num=num))
            for text, s in zip(args.expressions, schedules, strict=True)
        ]
    except HyperstepError as error:
        print(f"hyperstep plot: error: {error}", file=sys.stderr)
        return 2
    if text_mode:
        print(text_chart(curves, log=args.log, width=args.width, height=args.height))
        return 0
    out = Path(args.out or DEFAULT_OUT)
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


def have_matplotlib() -> bool:
    """Return whether matplotlib can be imported."""
    return importlib.util.find_spec("matplotlib") is not None


def write_png(
    curves: Sequence[Curve],
    path: str | Path,
    *,
    log: bool = False,
    title: str | None = None,
    steps_per_epoch: int | None = None,
) -> Path:
    """Draw ``curves`` into a PNG at ``path`` (800 x 450 pixels); return the path.

    Uses matplotlib's Agg canvas directly (no pyplot, no global backend state). With
    ``steps_per_epoch`` a second axis on top counts epochs.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    for label, steps, values in curves:
        shown = label if len(label) <= 70 else label[:67] + "..."
        axes.plot(steps, values, label=shown, linewidth=1.6)
    if log:
        axes.set_yscale("log")
    axes.set_xlabel("step")
    axes.set_ylabel("value (log scale)" if log else "value")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best", fontsize="small")
    axes.set_title(title or ("schedule" if len(curves) == 1 else f"{len(curves)} schedules"))
    if steps_per_epoch:
        spe = float(steps_per_epoch)

        def to_epoch(s: Any) -> Any:
            return s / spe

        def to_step(e: Any) -> Any:
            return e * spe

        top = axes.secondary_xaxis("top", functions=(to_epoch, to_step))
        top.set_xlabel("epoch")
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png")
    return path


def text_chart(
    curves: Sequence[Curve], *, log: bool = False, width: int = 72, height: int = 16
) -> str:
    """Return a text chart of ``curves``: ``height`` rows by ``width`` columns, ASCII only.

    Each column shows the range of values in its share of the steps, so jumps are drawn
    as vertical strokes. With ``log``, values <= 0 are left out.

    Example:
        >>> steps = np.arange(10)
        >>> chart = text_chart([("step", steps, steps.astype("float32"))], width=10, height=3)
        >>> print(chart)
                 9 |       ***
                   |   ****
                 0 |***
                   +----------
                    0        9 step
        * step
    """
    transform = (lambda v: np.log10(v)) if log else (lambda v: v)
    columns: list[list[tuple[float, float] | None]] = []
    for _label, steps, values in curves:
        values = np.asarray(values, dtype=np.float64)
        keep = np.isfinite(values) & ((values > 0) if log else True)
        ys = np.full(values.shape, np.nan)
        ys[keep] = transform(values[keep])
        cuts = np.searchsorted(steps, np.linspace(steps[0], steps[-1] + 1, width + 1))
        spans: list[tuple[float, float] | None] = []
        for c in range(width):
            chunk = ys[cuts[c] : cuts[c + 1]]
            chunk = chunk[np.isfinite(chunk)]
            spans.append((float(chunk.min()), float(chunk.max())) if chunk.size else None)
        columns.append(spans)
    finite = [v for spans in columns for span in spans if span for v in span]
    if not finite:
        return "(nothing to draw: no finite" + (" positive" if log else "") + " values)"
    low, high = min(finite), max(finite)
    if high == low:
        pad = abs(low) * 0.5 or 1.0
        low, high = low - pad, high + pad

    def row_of(y: float) -> int:
        return round((high - y) / (high - low) * (height - 1))

    grid = [[" "] * width for _ in range(height)]
    for index, spans in enumerate(columns):
        marker = _MARKERS[index % len(_MARKERS)]
        for c, span in enumerate(spans):
            if span is not None:
                for r in range(row_of(span[1]), row_of(span[0]) + 1):
                    grid[r][c] = marker

    def label(y: float) -> str:
        return _number(10**y if log else y)

    labels = {0: label(high), height - 1: label(low)}
    if height >= 5:
        labels[(height - 1) // 2] = label(high - (high - low) * ((height - 1) // 2) / (height - 1))
    lines = [f"{labels.get(r, ''):>10} |{''.join(grid[r])}".rstrip() for r in range(height)]
    last = int(curves[0][1][-1]) if len(curves[0][1]) else 0
    right = str(last)
    lines.append(" " * 11 + "+" + "-" * width)
    lines.append(" " * 12 + "0" + " " * max(1, width - 1 - len(right)) + right + " step")
    for index, (name, _steps, _values) in enumerate(curves):
        lines.append(f"{_MARKERS[index % len(_MARKERS)]} {name}")
    if log:
        lines.append("(log scale)")
    return "\n".join(lines)


def _number(value: float) -> str:
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    return f"{value:.3g}"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value
