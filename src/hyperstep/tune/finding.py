"""The result of a learning-rate range test: :class:`LRFinding` and the ramp it follows.

NumPy (and matplotlib for :meth:`LRFinding.plot`); the ramp's arguments are checked as the
schedules' are.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np

from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.schedules.checks import check_choice, check_positive

MODES = ("exponential", "linear")
#: the headline's smoothing: a centred Gaussian this many steps wide (its sigma)
WIDTH = 3.0
#: the headline is the rate of the centred loss's minimum divided by this
FACTOR = 4.0
#: the raw losses are capped at this many times the highest of the first tenth
CAP = 2.0
#: a fall to the minimum under this many times the noise is too noisy to suggest from
CONFIDENT_FALL = 2.0


def ramp(min_lr: float, max_lr: float, steps: int, mode: str = "exponential") -> np.ndarray:
    """The learning rates of a range test: ``steps`` values from ``min_lr`` to ``max_lr``.

    ``exponential: lr(k) = min_lr * (max_lr / min_lr) ** (k / (steps - 1))``
    ``linear:      lr(k) = min_lr + (max_lr - min_lr) * k / (steps - 1)``,
    for ``k = 0 .. steps - 1``: both ends included, evenly spaced in log space or linearly.

    Args:
        min_lr: The first learning rate (> 0).
        max_lr: The last learning rate (> ``min_lr``).
        steps: How many learning rates (an integer >= 2).
        mode: ``"exponential"`` or ``"linear"``.

    Returns:
        A float64 array of ``steps`` learning rates.

    Raises:
        ValueError: For a rate that is not positive and finite, ``max_lr <= min_lr``,
            ``steps < 2`` or another mode.
        TypeError: For a rate that is not a number or ``steps`` that is not an integer.

    Example:
        >>> [round(float(v), 12) for v in ramp(1e-3, 1.0, steps=4)]
        [0.001, 0.01, 0.1, 1.0]
        >>> [float(v) for v in ramp(0.1, 0.4, steps=4, mode="linear")]
        [0.1, 0.2, 0.30000000000000004, 0.4]
    """
    for name, value in (("min_lr", min_lr), ("max_lr", max_lr)):
        check_positive("find_lr", name, value)
    if not max_lr > min_lr:
        raise InvalidArgumentError(
            f"`find_lr(max_lr=...)` must be larger than min_lr={min_lr!r}. "
            f"{received('max_lr', max_lr)}"
        )
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise InvalidTypeError(
            f"`find_lr(steps=...)` must be an integer. {received('steps', steps)}"
        )
    if steps < 2:
        raise InvalidArgumentError(
            f"`find_lr(steps=...)` needs at least 2 steps (one per learning rate; 100 is "
            f"usual). {received('steps', steps)}"
        )
    check_choice("find_lr", "mode", mode, MODES)
    k = np.arange(steps, dtype="float64") / (steps - 1)
    if mode == "exponential":
        rates = min_lr * (max_lr / min_lr) ** k
    else:
        rates = min_lr + (max_lr - min_lr) * k
    rates[-1] = max_lr  # exact, whatever the rounding of the power
    return rates


def _tenth(count: int) -> int:
    """How many points the first tenth of ``count`` has: at least 3."""
    return max(3, count // 10)


@dataclass(eq=False)  # arrays: compare the fields yourself
class LRFinding:
    """What a learning-rate range test measured (returned by :func:`hyperstep.find_lr`).

    Step ``k`` trained one batch at ``learning_rates[k]`` and gave ``raw_losses[k]``;
    ``losses`` is the bias-corrected exponential moving average of the raw losses,
    ``avg(k) = smoothing * avg(k - 1) + (1 - smoothing) * raw(k)``, ``avg(-1) = 0``,
    ``losses[k] = avg(k) / (1 - smoothing ** (k + 1))``.

    Attributes:
        learning_rates: The learning rate of each step taken (float64).
        losses: The smoothed losses (float64).
        raw_losses: The loss of each step's batch (float64).
        steps: The steps asked for (more than were taken when the test stopped early).
        mode: ``"exponential"`` or ``"linear"``.
        stopped_early: Whether the smoothed loss diverged (or was not finite) and ended it.

    The rules: :meth:`suggestion` (the headline), :meth:`steepest` (Lightning's) and
    :meth:`valley` (fastai's); :attr:`warning` says when the curve is too noisy to trust.

    Example:
        >>> lrs = np.geomspace(1e-4, 1.0, 30)
        >>> x = np.log10(lrs)
        >>> losses = 2 - np.tanh(x + 2) + 2 * np.maximum(x + 1, 0) ** 2  # diverges past 0.1
        >>> finding = LRFinding(lrs, losses, losses, steps=30)
        >>> print(f"{finding.suggestion():.3g} = {finding.suggestion() * FACTOR:.3g} / {FACTOR}")
        0.0197 = 0.0788 / 4.0
        >>> rules = finding.steepest(), finding.steepest(compat="lightning"), finding.valley()
        >>> print(" ".join(f"{rate:.3g}" for rate in rules))
        0.00853 0.0024 0.00329
        >>> finding
        LRFinding(steps=30 of 30, suggestion=0.0197, valley=0.00329)
    """

    learning_rates: np.ndarray
    losses: np.ndarray
    raw_losses: np.ndarray
    steps: int
    mode: str = "exponential"
    stopped_early: bool = False

    def __post_init__(self) -> None:
        self.learning_rates = np.asarray(self.learning_rates, dtype="float64")
        self.losses = np.asarray(self.losses, dtype="float64")
        self.raw_losses = np.asarray(self.raw_losses, dtype="float64")
        if not len(self.learning_rates) == len(self.losses) == len(self.raw_losses):
            raise InvalidArgumentError(
                "`LRFinding` needs one loss and one raw loss per learning rate. Received: "
                f"{len(self.learning_rates)} learning rates, {len(self.losses)} losses and "
                f"{len(self.raw_losses)} raw losses."
            )

    def suggestion(self, factor: float = FACTOR) -> float | None:
        """The headline learning rate: the minimum of the centred smoothed loss, / ``factor``.

        ``suggestion = learning_rates[argmin(centred)] / factor``, ``centred`` the raw
        losses up to the first non-finite one, each replaced by its Gaussian-weighted mean
        over its neighbours, ``sigma = WIDTH`` steps (:meth:`centred`). Centred, unlike
        :attr:`losses`, it does not lag behind the ramp, so its minimum is where training
        stopped gaining, and a rate ``factor`` times lower trains well for longer
        (``benchmarks/lr_find_quality.py`` chose both constants). See :attr:`warning` for
        a curve too noisy to tell.

        Args:
            factor: What the rate of the minimum is divided by (> 0).

        Returns:
            A learning rate, or ``None`` when no loss is finite.

        Raises:
            ValueError: For a ``factor`` that is not positive.
            TypeError: For a ``factor`` that is not a number.
        """
        check_positive("LRFinding.suggestion", "factor", factor)
        centred = self.centred()
        if len(centred) == 0:
            return None
        return float(self.learning_rates[int(np.argmin(centred))]) / factor

    def centred(self) -> np.ndarray:
        """The raw losses up to the first non-finite one, capped and smoothed without lag.

        ``centred[k] = sum_j w(k, j) capped[j] / sum_j w(k, j)``,
        ``w(k, j) = exp(-((k - j) / WIDTH) ** 2 / 2)``, ``capped[j] = min(raw[j], cap)``,
        ``cap = CAP * max(raw[:tenth])``, the first tenth being at least 3 losses: how far
        a diverging loss shoots up says nothing, and would pull its neighbours up with it,
        but a loss that rises to twice its start after the minimum moves the minimum
        lower, as training there would be worse.

        Example:
            >>> raw = [1.0, 4.0, 1.0, np.nan]  # ends at the nan
            >>> LRFinding([1e-3, 1e-2, 0.1, 1.0], raw, raw, steps=4).centred().round(3)
            array([2.033, 2.037, 2.033])
        """
        finite = np.isfinite(self.raw_losses)
        end = len(finite) if finite.all() else int(np.argmin(finite))
        if end == 0:
            return np.zeros(0)
        capped = np.minimum(self.raw_losses[:end], CAP * np.max(self.raw_losses[: _tenth(end)]))
        k = np.arange(end, dtype="float64")
        weights = np.exp(-0.5 * ((k[:, None] - k[None, :]) / WIDTH) ** 2)
        return weights @ capped / weights.sum(axis=1)

    @property
    def warning(self) -> str | None:
        """One line when the curve is too noisy to suggest with confidence, else ``None``.

        Noisy: after the first tenth of the steps, the centred loss falls below the median
        of that tenth's raw losses by less than ``CONFIDENT_FALL`` times their noise (the
        median absolute deviation of ``raw - centred``, scaled by 1.4826 to a standard
        deviation), or not at all.

        Example:
            >>> lrs = np.geomspace(1e-6, 1.0, 50)
            >>> flat = 2 + np.random.default_rng(0).normal(0, 0.1, 50)
            >>> print(LRFinding(lrs, flat, flat, steps=50).warning)  # doctest: +ELLIPSIS
            the loss falls by 0.08, under 2x its noise (0.074): too noisy to suggest with ...
        """
        centred = self.centred()
        tenth = _tenth(len(centred))
        if len(centred) <= tenth:
            return "too few finite losses to suggest a learning rate; raise --steps or steps="
        fall = float(np.median(self.raw_losses[:tenth]) - np.min(centred[tenth:]))
        residuals = self.raw_losses[: len(centred)] - centred
        noise = 1.4826 * float(np.median(np.abs(residuals - np.median(residuals))))
        if fall > CONFIDENT_FALL * noise:
            return None
        return (
            f"the loss falls by {max(fall, 0.0):.2g}, under {CONFIDENT_FALL:g}x its noise "
            f"({noise:.2g}): too noisy to suggest with confidence (larger batches, more steps "
            "or a wider range may help)"
        )

    def steepest(
        self, skip_begin: int = 10, skip_end: int = 1, compat: str | None = None
    ) -> float | None:
        """The learning rate where the smoothed loss falls fastest (PyTorch Lightning's rule).

        ``argmin over k of d losses / d x``, ``x = log(learning_rates)`` for an exponential
        ramp and ``x = learning_rates`` for a linear one (the axis the rates are evenly
        spaced on; second-order central differences, as ``numpy.gradient``), over the
        points left after dropping ``skip_begin`` at the start, ``skip_end`` at the end and
        the non-finite losses. ``compat="lightning"``: by the learning rate in both modes, as
        Lightning 2.5.3+ (docs/lr_find.md, "The suggestion and the other rules").

        Args:
            skip_begin: Points dropped at the start (the first losses are noisy).
            skip_end: Points dropped at the end (the divergence).
            compat: ``None``, or ``"lightning"`` to differentiate by the learning rate in
                both modes.

        Returns:
            A learning rate of :attr:`learning_rates`, or ``None`` when fewer than 2
            points are left.

        Raises:
            ValueError: For another ``compat``.
        """
        if compat not in (None, "lightning"):
            raise InvalidArgumentError(
                "`LRFinding.steepest(compat=...)` must be None or 'lightning'. "
                f"{received('compat', compat)}"
            )
        log = self.mode == "exponential" and compat is None
        kept = np.arange(len(self.losses))[skip_begin : max(len(self.losses) - skip_end, 0)]
        kept = kept[np.isfinite(self.losses[kept])]
        if len(kept) < 2:
            return None
        x = self.learning_rates[kept]
        slopes = np.gradient(self.losses[kept], np.log(x) if log else x)
        return float(self.learning_rates[kept[int(np.argmin(slopes))]])

    def valley(self, skip_begin: int | None = None, skip_end: int = 5) -> float | None:
        """The learning rate two thirds down the longest valley of the loss (fastai's rule).

        The points left after dropping ``skip_begin`` (default ``steps // 10``) at the start,
        ``skip_end`` at the end, and everything from the first nan on; in them, the longest
        strictly decreasing subsequence of losses ends at ``end`` (the first longest) and
        has ``n`` points, ``start = end - n`` (0 when no loss falls); the suggestion is the point
        ``start + int((end - start) / 3) + int((end - start) / 6)`` (fastai's integer
        divisions; like fastai's Python indexing, -1 means the last point).

        Returns:
            A learning rate of :attr:`learning_rates`, or ``None`` when no point is left.
        """
        skip_begin = self.steps // 10 if skip_begin is None else skip_begin
        losses = self.losses[skip_begin : max(len(self.losses) - skip_end, 0)]
        nans = np.flatnonzero(np.isnan(losses))
        if len(nans):
            losses = losses[: nans[0]]
        if len(losses) == 0:
            return None
        # depth[i]: length of the longest strictly decreasing run of losses ending at i
        depth = np.ones(len(losses), dtype=int)
        for i in range(1, len(losses)):
            higher = depth[:i][losses[:i] > losses[i]]
            if len(higher):
                depth[i] = higher.max() + 1
        end = int(np.argmax(depth))  # the first of the longest
        start = end - int(depth[end]) if end > 0 else 0  # fastai's start, one before the run
        sections = (end - start) / 3
        index = start + int(sections) + int(sections / 2)
        # fastai's -1 (a 2-point run at 0): the last
        return float(self.learning_rates[skip_begin + index % len(losses)])

    # ---- output -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the series (non-finite values as ``None``), every rule's learning
        rate (``suggestion``, ``steepest``, ``lightning``, ``valley``), ``warning``, flags."""

        def clean(values: np.ndarray) -> list[float | None]:
            return [float(v) if math.isfinite(v) else None for v in values]

        return {
            "learning_rates": clean(self.learning_rates),
            "losses": clean(self.losses),
            "raw_losses": clean(self.raw_losses),
            "steps": self.steps,
            "steps_taken": len(self.learning_rates),
            "mode": self.mode,
            "stopped_early": self.stopped_early,
            "suggestion": self.suggestion(),
            "warning": self.warning,
            "steepest": self.steepest(),
            "lightning": self.steepest(compat="lightning"),
            "valley": self.valley(),
        }

    def plot(self, path: str | None = None, ax: Any = None) -> Any:
        """Plot the smoothed loss against the learning rate, both suggestions marked.

        Args:
            path: Where to write the figure (a PNG for ``.png``); ``None`` writes nothing.
            ax: A matplotlib ``Axes`` to draw on; ``None`` makes a new figure.

        Returns:
            The matplotlib ``Figure``.

        Raises:
            ImportError: Without matplotlib (``pip install 'hyperstep[plot]'``).
        """
        try:
            from matplotlib.figure import Figure
        except ImportError as error:
            raise ImportError(
                "`LRFinding.plot` needs matplotlib: pip install 'hyperstep[plot]'"
            ) from error
        if ax is None:
            figure = Figure(figsize=(7, 4.2), layout="constrained")
            ax = figure.add_subplot()
        else:
            figure = ax.figure
        centred = self.centred()
        ax.plot(self.learning_rates, self.raw_losses, color="0.8", lw=0.8, label="loss (raw)")
        ax.plot(self.learning_rates, self.losses, color="C0", lw=1.2, label="loss (average)")
        rates = self.learning_rates[: len(centred)]
        ax.plot(rates, centred, color="C1", lw=1.8, label="loss (centred)")
        suggestion = self.suggestion()
        if suggestion is not None:
            lowest = int(np.argmin(centred))
            ax.plot(rates[lowest], centred[lowest], "v", color="C1", ms=7, label="minimum")
            ax.axvline(suggestion, color="C3", lw=1.5, label=f"suggestion: {suggestion:.3g}")
        marks = ((self.steepest(), "C4", "o", "steepest"), (self.valley(), "C2", "D", "valley"))
        for lr, color, marker, name in marks:
            if lr is not None:
                index = int(np.flatnonzero(self.learning_rates == lr)[0])
                ax.plot(
                    lr, self.losses[index], marker, color=color, ms=6, label=f"{name}: {lr:.3g}"
                )
        if self.mode == "exponential":
            ax.set_xscale("log")
        both = np.concatenate([self.losses, self.raw_losses])
        both = both[np.isfinite(both)]
        if len(both):  # from the lowest loss to a bit over the start: divergence is clipped
            start = centred[: int(np.argmin(centred)) + 1] if len(centred) else self.losses[:1]
            low, first = float(both.min()), float(np.nanmax(start))
            high = max(first, low) + 0.25 * abs(first - low) + 1e-12
            ax.set_ylim(low - 0.05 * (high - low), high)
        ax.set_xlabel("learning rate")
        ax.set_ylabel("loss")
        warning = self.warning
        title = f"learning-rate range test ({len(self.learning_rates)} steps)"
        ax.set_title(title, pad=28 if warning else 6)
        if warning is not None:  # in red between the title and the axes
            ax.text(0.5, 1.015, textwrap.fill(warning, 100), transform=ax.transAxes,
                    ha="center", va="bottom", color="C3", fontsize="small")  # fmt: skip
        ax.grid(True, which="major", alpha=0.4)
        ax.legend(loc="best", fontsize="small")
        if path is not None:
            figure.savefig(path, dpi=120)
        return figure

    def __repr__(self) -> str:
        rules = {"suggestion": self.suggestion(), "valley": self.valley()}
        shown = [f"steps={len(self.learning_rates)} of {self.steps}"]
        shown += [f"{k}={v:.3g}" if v is not None else f"{k}=None" for k, v in rules.items()]
        if self.stopped_early:
            shown.append("stopped_early=True")
        if self.warning is not None:
            shown.append("noisy=True")
        return f"LRFinding({', '.join(shown)})"
