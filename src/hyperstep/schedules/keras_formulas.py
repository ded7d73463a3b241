"""Keras's decay formulas in Keras's own float32 operation order, bitwise.

Each class takes the arguments of the Keras class of its name and computes its float32
operations in Keras's order, so that it gives Keras's own value bit for bit, eagerly and
traced, on every backend; :func:`hyperstep.schedules.from_keras` converts into them
(docs/schedules.md, "Porting bitwise").
"""

from __future__ import annotations

import math
from typing import Any

from hyperstep.schedules._ops import ops
from hyperstep.schedules.base import Schedule, check_number, register
from hyperstep.schedules.checks import check_flag, check_keras_steps
from hyperstep.schedules.exact import as_float32


@register
class ExponentialDecay(Schedule):
    """Keras ``ExponentialDecay``, bitwise.

    ``value(step) = initial_learning_rate * decay_rate ** p, p = step / decay_steps``
    (``floor(p)`` with ``staircase``), each operation in float32 as Keras orders it.

    Args:
        initial_learning_rate: Value at step 0.
        decay_steps: Steps per factor of ``decay_rate``, a positive number.
        decay_rate: Factor per ``decay_steps`` steps.
        staircase: Apply the factor in whole periods; default False.

    Edge cases: as Keras: no clamp, the new value applies AT each staircase boundary.

    Example:
        >>> s = exponential_decay(0.1, 10, 0.5, staircase=True)
        >>> [float(v) for v in s([0, 10, 25])]
        [0.10000000149011612, 0.05000000074505806, 0.02500000037252903]
    """

    keyword = "exponential_decay"
    positional = 3

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: float,
        decay_rate: float,
        staircase: bool = False,
    ) -> None:
        owner = "exponential_decay"
        self.initial_learning_rate = check_number(
            owner, "initial_learning_rate", initial_learning_rate
        )
        self.decay_steps = check_keras_steps(owner, "decay_steps", decay_steps)
        self.decay_rate = check_number(owner, "decay_rate", decay_rate)
        self.staircase = check_flag(owner, "staircase", staircase)

    def value(self, step: Any) -> Any:
        p = step / as_float32(self.decay_steps)
        if self.staircase:
            p = ops.floor(p)
        return ops.multiply(
            as_float32(self.initial_learning_rate), ops.power(as_float32(self.decay_rate), p)
        )


@register
class PolynomialDecay(Schedule):
    """Keras ``PolynomialDecay``, bitwise.

    ``value(step) = (initial - end) * (1 - p) ** power + end, p = min(step, D) / D``; with
    ``cycle``, ``p = step / (D * ceil(step / D))`` (``ceil`` taken as 1 at step 0), each
    operation in float32 as Keras orders it (``D = decay_steps``).

    Args:
        initial_learning_rate: Value at step 0.
        decay_steps: Length of the decay, a positive number of steps.
        end_learning_rate: Value from ``decay_steps`` on; default 0.0001 (Keras's).
        power: Exponent; default 1.0.
        cycle: Keras's cycle rule instead of holding the end value; default False.

    Edge cases: as Keras; with ``cycle`` the value at ``k * D`` is the end value and one
    step later jumps back up, not to the initial value.

    Example:
        >>> s = polynomial_decay(0.1, 10, 0.01)
        >>> [round(float(v), 6) for v in s([0, 5, 30])]
        [0.1, 0.055, 0.01]
    """

    keyword = "polynomial_decay"
    positional = 2

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: float,
        end_learning_rate: float = 0.0001,
        power: float = 1.0,
        cycle: bool = False,
    ) -> None:
        owner = "polynomial_decay"
        self.initial_learning_rate = check_number(
            owner, "initial_learning_rate", initial_learning_rate
        )
        self.decay_steps = check_keras_steps(owner, "decay_steps", decay_steps)
        self.end_learning_rate = check_number(owner, "end_learning_rate", end_learning_rate)
        self.power = check_number(owner, "power", power)
        self.cycle = check_flag(owner, "cycle", cycle)

    def value(self, step: Any) -> Any:
        initial = as_float32(self.initial_learning_rate)
        end = as_float32(self.end_learning_rate)
        decay_steps = as_float32(self.decay_steps)
        if self.cycle:
            multiplier = ops.where(ops.equal(step, 0), 1.0, ops.ceil(step / self.decay_steps))
            decay_steps = ops.multiply(decay_steps, multiplier)
        else:
            step = ops.minimum(step, decay_steps)
        p = ops.divide(step, decay_steps)
        return ops.add(ops.multiply(initial - end, ops.power(1 - p, as_float32(self.power))), end)

    @property
    def natural_steps(self) -> int | float | None:
        return None if self.cycle else self.decay_steps


@register
class CosineDecay(Schedule):
    """Keras ``CosineDecay`` (with its optional linear warmup), bitwise.

    ``value(step) = lr * ((1 - alpha) * 0.5 * (1 + cos(pi * s / D)) + alpha)`` with
    ``s = min(step, D)`` and ``lr = initial_learning_rate``; with a ``warmup_target``,
    ``initial + (target - initial) * step / W`` while ``step < W``, then the decay from
    ``target`` at ``s = min(step, W + D) - W``; each operation in float32 as Keras orders it
    (``D = decay_steps``, ``W = warmup_steps``).

    Args:
        initial_learning_rate: Value at step 0.
        decay_steps: Length of the decay, a positive number of steps.
        alpha: End value as a fraction of the decayed-from value; default 0.0.
        warmup_target: Value the warmup reaches at ``warmup_steps``; default None (none).
        warmup_steps: Length of the warmup; default 0.

    Edge cases: as Keras; the total length is ``W + D``, after which the value holds.

    Example:
        >>> s = cosine_decay(1.0, 100, alpha=0.1)
        >>> [round(float(v), 6) for v in s([0, 50, 300])]
        [1.0, 0.55, 0.1]
    """

    keyword = "cosine_decay"
    positional = 2

    def __init__(
        self,
        initial_learning_rate: float,
        decay_steps: float,
        alpha: float = 0.0,
        warmup_target: float | None = None,
        warmup_steps: float = 0,
    ) -> None:
        owner = "cosine_decay"
        self.initial_learning_rate = check_number(
            owner, "initial_learning_rate", initial_learning_rate
        )
        self.decay_steps = check_keras_steps(owner, "decay_steps", decay_steps)
        self.alpha = check_number(owner, "alpha", alpha)
        self.warmup_target = (
            None if warmup_target is None else check_number(owner, "warmup_target", warmup_target)
        )
        self.warmup_steps = check_keras_steps(owner, "warmup_steps", warmup_steps, True)

    def _decay(self, step: Any, decay_steps: Any, decay_from: Any) -> Any:
        completed_fraction = ops.divide(step, decay_steps)
        pi = as_float32(math.pi)
        cosine_decayed = 0.5 * (1.0 + ops.cos(ops.multiply(pi, completed_fraction)))
        # Keras forms 1 - alpha in Python (float64) and rounds it to float32 once
        decayed = (1 - self.alpha) * cosine_decayed + self.alpha
        return ops.multiply(decay_from, decayed)

    def value(self, step: Any) -> Any:
        initial = as_float32(self.initial_learning_rate)
        decay_steps = as_float32(self.decay_steps)
        if self.warmup_target is None:
            return self._decay(ops.minimum(step, decay_steps), decay_steps, initial)
        target = as_float32(self.warmup_target)
        warmup_steps = as_float32(self.warmup_steps)
        step = ops.minimum(step, decay_steps + warmup_steps)

        def warm() -> Any:
            return (target - initial) * (step / warmup_steps) + initial

        def decay() -> Any:
            return self._decay(step - warmup_steps, decay_steps, target)

        if len(ops.shape(step)) == 0:  # Keras's ops.cond, which a graph compiler keeps apart
            return ops.cond(step < warmup_steps, warm, decay)
        return ops.where(step < warmup_steps, warm(), decay())

    @property
    def natural_steps(self) -> int | float | None:
        if self.warmup_target is None:
            return self.decay_steps
        return self.decay_steps + self.warmup_steps


@register
class CosineDecayRestarts(Schedule):
    """Keras ``CosineDecayRestarts`` (SGDR), bitwise.

    ``value(step) = lr * ((1 - alpha) * 0.5 * m_mul ** i * (1 + cos(pi * f)) + alpha)``
    where ``i`` is the restart index from Keras's float32 ``log`` formula (``floor(c)``
    when ``t_mul == 1``), ``c = step / first_decay_steps`` and ``f`` is the fraction of
    period ``i`` done; each operation in float32 as Keras orders it. (Keras's float32 log
    places a few late restarts one step off; ``cosine_restarts`` places every one exactly.)

    Args:
        initial_learning_rate: Value at step 0.
        first_decay_steps: Length of the first period, a positive number of steps.
        t_mul: Growth of each period; default 2.0.
        m_mul: Factor on the amplitude per restart; default 1.0.
        alpha: End value as a fraction of ``initial_learning_rate``; default 0.0.

    Edge cases: as Keras; ``alpha`` is not scaled by ``m_mul ** i``.

    Example:
        >>> s = cosine_decay_restarts(1.0, 10, m_mul=0.5)
        >>> [round(float(v), 6) for v in s([0, 10, 30])]
        [1.0, 0.5, 0.25]
    """

    keyword = "cosine_decay_restarts"
    positional = 2

    def __init__(
        self,
        initial_learning_rate: float,
        first_decay_steps: float,
        t_mul: float = 2.0,
        m_mul: float = 1.0,
        alpha: float = 0.0,
    ) -> None:
        owner = "cosine_decay_restarts"
        self.initial_learning_rate = check_number(
            owner, "initial_learning_rate", initial_learning_rate
        )
        self.first_decay_steps = check_keras_steps(owner, "first_decay_steps", first_decay_steps)
        self.t_mul = check_number(owner, "t_mul", t_mul)
        self.m_mul = check_number(owner, "m_mul", m_mul)
        self.alpha = check_number(owner, "alpha", alpha)

    def value(self, step: Any) -> Any:
        t_mul = as_float32(self.t_mul)
        alpha = as_float32(self.alpha)
        completed_fraction = step / as_float32(self.first_decay_steps)

        def compute_step(geometric: bool) -> Any:
            if geometric:
                i_restart = ops.floor(
                    ops.log(1.0 - completed_fraction * (1.0 - t_mul)) / ops.log(t_mul)
                )
                sum_r = ops.divide(1.0 - ops.power(t_mul, i_restart), (1.0 - t_mul))
                fraction = ops.divide(
                    ops.subtract(completed_fraction, sum_r), ops.power(t_mul, i_restart)
                )
            else:
                i_restart = ops.floor(completed_fraction)
                fraction = completed_fraction - i_restart
            return i_restart, fraction

        # Keras's ops.cond, kept: on JAX it compiles both branches even eagerly
        i_restart, completed_fraction = ops.cond(
            ops.equal(t_mul, 1.0), lambda: compute_step(False), lambda: compute_step(True)
        )
        m_fac = ops.power(as_float32(self.m_mul), i_restart)
        pi = as_float32(math.pi)
        cosine_decayed = 0.5 * m_fac * (1.0 + ops.cos(ops.multiply(pi, completed_fraction)))
        decayed = ops.add(ops.multiply((1 - alpha), cosine_decayed), alpha)
        return ops.multiply(as_float32(self.initial_learning_rate), decayed)


exponential_decay = ExponentialDecay
polynomial_decay = PolynomialDecay
cosine_decay = CosineDecay
cosine_decay_restarts = CosineDecayRestarts
