"""Modern LLM schedules: ``wsd`` (warmup-stable-decay), ``inverse_sqrt`` and ``cooldown``.

``wsd`` is the warmup-stable-decay schedule of MiniCPM (arXiv 2404.06395) and of Hagele et
al. (arXiv 2405.18392: a constant rate plus a short cooldown matches cosine, and a 1-sqrt
cooldown beats a linear one), with the phases and shapes of Hugging Face's
``get_wsd_schedule``; ``inverse_sqrt`` is Hugging Face's ``get_inverse_sqrt_schedule``
(from big_vision). :func:`decay_factor` is the shape of a decay; ``cooldown`` is the value
:class:`hyperstep.Cooldown` gives a hyperparameter once started (:func:`cooled_value`).
"""

from __future__ import annotations

from typing import Any

from hyperstep.schedules._ops import ops
from hyperstep.schedules.base import Schedule, check_number, register
from hyperstep.schedules.checks import check_choice, check_steps
from hyperstep.schedules.exact import (
    HALF_PI,
    clipped,
    cosine_weight,
    exact_maximum,
    exact_minimum,
    larger,
    rounded_once,
    sine,
    widened,
)

#: warmup shapes (Hugging Face's ``warmup_type``)
WARMUP_TYPES = ("linear", "cosine", "1-sqrt")
#: decay shapes: Hugging Face's ``decay_type`` plus Megatron's ``exponential`` and
#: ``minus_sqrt`` (the same curve as ``1-sqrt``)
DECAY_TYPES = ("linear", "cosine", "1-sqrt", "exponential", "minus_sqrt")


def decay_factor(shape: str, done: Any, steps: float, cycles: float = 0.5) -> Any:
    """The factor of a decay from 1 to 0 after ``done`` of ``steps`` steps: the shape of
    :func:`cooled_value` from 1 to 0, or for ``cosine`` with other ``cycles``
    ``(1 + cos(2 pi cycles p)) / 2``, ``p = done / steps``.

    Example:
        >>> [round(float(v), 4) for v in decay_factor("1-sqrt", ops.convert_to_tensor(
        ...     [0.0, 25.0, 100.0]), 100)]
        [1.0, 0.5, 0.0]
    """
    if shape == "cosine" and cycles != 0.5:  # cos(pi c p) ** 2 = sin(pi / 2 * (1 - 2 c p)) ** 2
        return cosine_weight(1.0 - 2.0 * cycles * (done / steps))
    return cooled_value(1.0, 0.0, done, steps, shape)


def _warmup_factor(shape: str, step: Any, steps: float) -> Any:
    """The factor of a warmup from 0 to 1: ``p``, ``(1 - cos(pi p)) / 2``, ``1 - sqrt(1 - p)``."""
    if shape == "linear":
        return step / steps
    if shape == "cosine":
        return cosine_weight(step / steps)
    return 1.0 - ops.sqrt((steps - step) / steps)


@register
class WarmupStableDecay(Schedule):
    """Warmup-stable-decay: a warmup to ``peak``, ``peak`` for ``stable`` steps, a decay.

    ``value(step) = peak * (min_ratio + (1 - min_ratio) * f(step))`` with
    ``f = warmup_factor(step / warmup)`` for ``step < warmup``, ``1`` for the next
    ``stable`` steps, ``decay_factor((step - warmup - stable) / decay)`` for the next
    ``decay`` steps, and ``0`` after (the value ``min_ratio * peak``).

    Warmup factors: ``linear: p``, ``cosine: (1 - cos(pi p)) / 2``, ``1-sqrt: 1 - sqrt(1 - p)``.
    Decay factors: ``linear: 1 - p``, ``cosine: (1 + cos(2 pi num_cycles p)) / 2``,
    ``1-sqrt: 1 - sqrt(p)`` (Hagele et al.), and Megatron's ``exponential: 2 * 0.5 ** p - 1``
    and ``minus_sqrt`` (= ``1-sqrt``).

    Matches Hugging Face ``get_wsd_schedule(num_warmup_steps=warmup,
    num_stable_steps=stable, num_decay_steps=decay, warmup_type, decay_type,
    min_lr_ratio=min_ratio, num_cycles)`` times ``peak``, at every step.

    Args:
        peak: The value of the stable phase.
        warmup: Steps of the warmup (>= 0).
        stable: Steps at ``peak`` (>= 0).
        decay: Steps of the decay (>= 0).
        warmup_type: ``"linear"`` (default), ``"cosine"`` or ``"1-sqrt"``.
        decay_type: ``"cosine"`` (default), ``"linear"``, ``"1-sqrt"``, ``"exponential"`` or
            ``"minus_sqrt"``.
        min_ratio: The value at step 0 and after the decay, as a fraction of ``peak``.
        num_cycles: Half-waves of the cosine decay are ``2 * num_cycles``; default 0.5.

    Edge cases: ``min_ratio * peak`` at step 0 (with a warmup), ``peak`` from ``warmup`` to
    ``warmup + stable`` (included), ``min_ratio * peak`` from ``warmup + stable + decay`` on.

    Example:
        >>> s = wsd(1.0, warmup=10, stable=80, decay=10, decay_type="linear")
        >>> [round(float(v), 6) for v in s([0, 5, 10, 90, 95, 100, 200])]
        [0.0, 0.5, 1.0, 1.0, 0.5, 0.0, 0.0]
    """

    keyword = "wsd"
    positional = 4

    def __init__(
        self,
        peak: float,
        warmup: float,
        stable: float,
        decay: float,
        warmup_type: str = "linear",
        decay_type: str = "cosine",
        min_ratio: float = 0.0,
        num_cycles: float = 0.5,
    ) -> None:
        self.peak = check_number("wsd", "peak", peak)
        self.warmup = check_steps("wsd", "warmup", warmup, allow_zero=True)
        self.stable = check_steps("wsd", "stable", stable, allow_zero=True)
        self.decay = check_steps("wsd", "decay", decay, allow_zero=True)
        # where the decay starts and ends, added as Python adds numbers (lengths too, exactly)
        self._decay_start = self.warmup + self.stable
        self._end = self._decay_start + self.decay
        self.warmup_type = check_choice("wsd", "warmup_type", warmup_type, WARMUP_TYPES)
        self.decay_type = check_choice("wsd", "decay_type", decay_type, DECAY_TYPES)
        self.min_ratio = check_number("wsd", "min_ratio", min_ratio)
        self.num_cycles = check_number("wsd", "num_cycles", num_cycles)

    @property
    def natural_steps(self) -> int | float | None:
        return self._end

    @rounded_once("warmup", "decay", "_decay_start", "_end")
    def value(self, step: Any) -> Any:
        w, d, decay_start = self.warmup, self.decay, self._decay_start
        up = _warmup_factor(self.warmup_type, clipped(step, 0.0, larger(w, 1)), larger(w, 1))
        done = clipped(step - decay_start, 0.0, larger(d, 1))
        down = decay_factor(self.decay_type, done, larger(d, 1), self.num_cycles)
        factor = ops.where(step < w, up, ops.where(step < decay_start, 1.0, down))
        factor = ops.where(step < self._end, exact_maximum(factor, 0.0), 0.0)
        m = self.min_ratio
        return self.peak * exact_maximum(m + (1.0 - m) * factor, 0.0)


@register
class InverseSqrt(Schedule):
    """A linear warmup to ``peak``, then ``peak / sqrt`` of the normalized step.

    ``value(step) = peak * step / warmup`` for ``step < warmup``, else
    ``peak / sqrt((step - warmup + timescale) / timescale)``

    Matches Hugging Face ``get_inverse_sqrt_schedule(num_warmup_steps=warmup, timescale)``
    times ``peak``; ``timescale=None`` means ``warmup`` (10000 when ``warmup`` is 0), as there.

    Args:
        peak: The value at the end of the warmup.
        warmup: Steps of the warmup (>= 0).
        timescale: Steps over which the value falls by ``sqrt(2)`` after the warmup, > 0;
            default None (see above).

    Edge cases: 0 at step 0 (with a warmup); ``peak`` at ``warmup``; ``peak / sqrt(2)``
    at ``warmup + timescale``; never ends.

    Example:
        >>> s = inverse_sqrt(1.0, warmup=100)
        >>> [round(float(v), 6) for v in s([0, 50, 100, 400])]
        [0.0, 0.5, 1.0, 0.5]
    """

    keyword = "inverse_sqrt"
    positional = 2

    def __init__(self, peak: float, warmup: float, timescale: float | None = None) -> None:
        self.peak = check_number("inverse_sqrt", "peak", peak)
        self.warmup = check_steps("inverse_sqrt", "warmup", warmup, allow_zero=True)
        self.timescale = (
            None if timescale is None else check_steps("inverse_sqrt", "timescale", timescale)
        )
        w, given = self.warmup, self.timescale
        self._scale = given if given is not None else w if not isinstance(w, int) or w else 10_000
        self._shift = self._scale - w  # as Python subtracts numbers (lengths too, exactly)

    @rounded_once("warmup", "_scale", "_shift")
    def value(self, step: Any) -> Any:
        w = self.warmup
        ramp = step / larger(w, 1)
        after = 1.0 / ops.sqrt((exact_maximum(step, w) + self._shift) / self._scale)
        return self.peak * ops.where(step < w, ramp, after)


def cooled_value(value: Any, end: Any, done: Any, steps: Any, shape: str) -> Any:
    """``end + (value - end) * f`` with ``f`` the decay factor of ``shape`` (see
    :func:`decay_factor`) after ``done`` of ``steps`` steps, in the dtype of ``done`` (a
    tensor in ``[0, steps]``; ``steps`` a tensor of that dtype).

    With ``r = 1 / steps`` and ``c = value - end``: ``linear: end + (c * r) * (steps -
    done)``, ``cosine: end + c * sin((steps - done) * (pi / 2 * r)) ** 2``, ``1-sqrt: end +
    c * (1 - sqrt(done * r))``, ``exponential: end + c * (2 * 0.5 ** (done * r) - 1)``. Each
    product has at most one factor a compiler can know when ``steps``, ``value`` and ``end``
    are constants (XLA and Grappler fold ``x / k`` into ``x * (1 / k)`` and ``(x * k1) * k2``
    into ``x * (k1 * k2)``), so a step that reads them from variables computes the same
    bits. :class:`Cooldown` and :class:`hyperstep.Cooldown` compute it in float64 and round
    to float32 once.
    """
    inverse = 1.0 / steps
    change = value - end
    if shape == "linear":
        return end + (change * inverse) * (steps - done)
    if shape == "cosine":
        return end + change * ops.square(sine((steps - done) * (HALF_PI * inverse)))
    if shape in ("1-sqrt", "minus_sqrt"):
        return end + change * (1.0 - ops.sqrt(done * inverse))
    if shape == "exponential":
        return end + change * (2.0 * ops.power(0.5, done * inverse) - 1.0)
    raise ValueError(f"unknown decay shape {shape!r}")  # pragma: no cover - validated before


@register
class Cooldown(Schedule):
    """A cooldown from ``value`` at step ``start`` to ``end`` in ``steps`` steps.

    ``value(step) = end + (value - end) * f(clip(step - start, 0, steps) / steps)`` with ``f``
    the decay shape (:func:`cooled_value`): ``value`` up to ``start``, ``end`` from
    ``start + steps`` on. At every step and on every read path it is the value a
    hyperparameter had while :class:`hyperstep.Cooldown` cooled it from ``value`` (its value
    at ``start``): :meth:`hyperstep.Remote.replay` writes a journaled ``cooldown`` command
    as one.

    Args:
        value: The value at ``start`` (and before it).
        start: The step the cooldown starts (>= 0).
        steps: Steps from ``value`` to ``end`` (> 0).
        shape: ``"1-sqrt"`` (default), ``"linear"``, ``"cosine"``, ``"exponential"`` or
            ``"minus_sqrt"``.
        end: The value after the cooldown; default 0.

    Edge cases: ``value`` at ``start`` and before it, ``end`` at ``start + steps`` and after.

    Example:
        >>> s = cooldown(1.0, start=10, steps=10, shape="linear")
        >>> [round(float(v), 6) for v in s([0, 10, 15, 20, 30])]
        [1.0, 1.0, 0.5, 0.0, 0.0]
    """

    keyword = "cooldown"
    positional = 3

    def __init__(
        self, value: float, start: float, steps: float, shape: str = "1-sqrt", end: float = 0.0
    ) -> None:
        self.value_ = check_number("cooldown", "value", value)
        self.start = check_steps("cooldown", "start", start, allow_zero=True)
        self.steps = check_steps("cooldown", "steps", steps)
        self.shape = check_choice("cooldown", "shape", shape, DECAY_TYPES)
        self.end = check_number("cooldown", "end", end)

    @property
    def natural_steps(self) -> int | float | None:
        return self.start + self.steps

    @rounded_once("start", "steps", hidden=False)
    def value(self, step: Any) -> Any:
        steps = widened(self.steps)  # a number of steps: an int, a float or a length
        done = exact_minimum(exact_maximum(step - widened(self.start), 0.0), steps)
        return cooled_value(
            widened(float(self.value_)), widened(float(self.end)), done, steps, self.shape
        )


wsd = WarmupStableDecay
inverse_sqrt = InverseSqrt
cooldown = Cooldown

__all__ = [
    "Cooldown",
    "InverseSqrt",
    "WarmupStableDecay",
    "cooldown",
    "cooled_value",
    "decay_factor",
    "inverse_sqrt",
    "wsd",
]
