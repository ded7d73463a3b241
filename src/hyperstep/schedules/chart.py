"""Drawing sampled schedules: a PNG with matplotlib, or a text chart (NumPy only).

``hyperstep plot`` draws with these, and so can anything that has ``(label, steps,
values)`` curves, e.g. from :func:`hyperstep.schedules.sample`. Neither needs Keras.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: one curve: (label, steps, values)
Curve = tuple[str, np.ndarray, np.ndarray]

_MARKERS = "*o+x#@%&"


def write_png(
    curves: Sequence[Curve],
    path: str | Path,
    *,
    log: bool = False,
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
    axes.set_title("schedule" if len(curves) == 1 else f"{len(curves)} schedules")
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
