"""Schedule-free rules: the step inside the update, as Defazio et al. define it.

"The Road Less Scheduled" (arXiv 2405.15682) replaces the learning-rate decay by an average
of the iterates weighted by the step. Three sequences per variable: ``z`` takes the
gradient steps, ``x`` is their running weighted average (the weights to evaluate), and the
gradient is taken at ``y``, an interpolation of the two::

    lr_t    = learning_rate * min((t + 1) / warmup_steps, 1)        (t = step)
    lr_max  = max(lr_max, lr_t)
    c_t     = (t + 1)**r * lr_max**weight_lr_power / weight_sum,
              weight_sum += (t + 1)**r * lr_max**weight_lr_power
    z       = z - lr_t * d_t                      (d_t: the base optimizer's direction at y)
    x       = (1 - c_t) * x + c_t * z
    y       = beta_1 * x + (1 - beta_1) * z       (momentum instead of beta_1 for SGD)

The variable holds ``y`` while training; :func:`hyperstep.averaged_weights` swaps ``x`` in
for evaluation and saving. The rules compute the reference implementations
(``schedulefree.AdamWScheduleFreeReference`` and ``SGDScheduleFreeReference``, Meta's
``schedule_free`` repository) to float32 rounding, with fewer full-size operations:
``z``, ``x`` and the second moment are slots; the weight sum and the maximum learning rate
seen are scalar slots, saved and restored with the optimizer.

Example:
    >>> import hyperstep as hs, keras
    >>> opt = hs.StepOptimizer(hs.rules.ScheduleFreeSGDRule(), learning_rate=0.1, momentum=0.5)
    >>> w = keras.Variable([1.0])
    >>> opt.apply([keras.ops.ones(1)], [w])   # z = 0.9, x = z (first weight is all), y = 0.9
    >>> round(float(w.numpy()[0]), 4)
    0.9
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from keras import ops

from hyperstep import backends
from hyperstep.optim.rules import (
    BUILTIN,
    PACKAGE,
    Rule,
    Values,
    register_rule,
)
from hyperstep.schedules.checks import check_flag

__all__ = ["ScheduleFreeAdamWRule", "ScheduleFreeSGDRule"]

_COMMON = {"warmup_steps": 0.0, "r": 0.0, "weight_lr_power": 2.0}


def bias_correction(beta: Any, n: Any) -> Any:
    """``1 - beta ** n``, accurate to float32 rounding for a ``beta`` near 1.

    In float32, ``1 - beta ** n`` cancels: at ``beta = 0.999, n = 5`` the rounding of
    ``beta ** n`` (6e-8) is a relative error of 1e-5. Written ``-expm1(n * log1p(-(1 -
    beta)))`` with ``1 - beta`` exact in float32 (Sterbenz), it keeps float32 accuracy, for
    the same float32 ``beta`` the moment's ``(1 - beta)`` uses, so the two stay consistent.
    """
    beta = ops.cast(beta, "float32")
    return -ops.expm1(ops.cast(n, "float32") * ops.log1p(-(1.0 - beta)))


def _average_weight(slots: Values, hp: Values, step: Any) -> tuple[Any, Any]:
    """Advance the scalar state; return ``(lr_t, c_t)`` in the variable's dtype."""
    dtype = step.dtype
    t = ops.cast(step, "float32")
    lr = ops.cast(hp.learning_rate, "float32")
    warmup = ops.cast(hp.warmup_steps, "float32")
    lr = lr * ops.where(t < warmup, (t + 1.0) / warmup, 1.0)
    lr_max = ops.maximum(lr, slots.lr_max)
    slots.lr_max.assign(lr_max)
    power = ops.cast(hp.weight_lr_power, "float32")
    weight = (t + 1.0) ** ops.cast(hp.r, "float32") * lr_max**power
    weight_sum = slots.weight_sum + weight
    slots.weight_sum.assign(weight_sum)
    ckp1 = ops.divide_no_nan(weight, weight_sum)  # the reference's ZeroDivisionError -> 0
    return ops.cast(lr, dtype), ops.cast(ckp1, dtype)


class _ScheduleFree(Rule):
    """Base of the schedule-free rules: state, the ``memory_efficient`` option, the swap."""

    def __init__(self, memory_efficient: bool = False) -> None:
        self.memory_efficient = check_flag(
            type(self).__name__, "memory_efficient", memory_efficient
        )
        # `swapped`: 1 while `averaged_weights` holds x in the variable
        scalars = {"weight_sum": 0.0, "lr_max": -1.0, "swapped": 0.0}
        if memory_efficient:
            self.slots = tuple(key for key in self.slots if key != "x")
            self.copied_slots = ("z",)
            self.scalar_slots = {**scalars, "beta": 0.0}  # type: ignore[misc]
        else:
            self.copied_slots = ("z", "x")  # both start at the initial weights, as the reference
            self.scalar_slots = scalars  # type: ignore[misc]
            self.averaged_slot = "x"  # type: ignore[misc]

    def _descend(
        self, variable: Any, slots: Values, move_z: Callable[[], Any], ckp1: Any, beta: Any
    ) -> None:
        """``move_z()`` takes ``z``'s step (``z' = z - descent``), then, in place,
        ``x = x + c (z' - x)`` and ``y = z' + beta (x - z')``.

        ``y`` reads the new ``x``: written from the old one (``y = z - beta (1 - c)(z - x)``,
        one full-size operation fewer without XLA), XLA copies ``x`` before updating it in
        place (two passes more).

        ``memory_efficient``: ``x`` eliminated (``schedulefree.AdamWScheduleFree``'s form),
        ``y' = (1 - c) y + c z - (1 - beta (1 - c)) descent``, written with
        ``descent = z - z'`` as ``(1 - c) y - (1 - beta)(1 - c) z + (1 - beta (1 - c)) z'``;
        ``beta`` is kept so that ``x = (y - (1 - beta) z) / beta`` later.
        """
        z = slots.z
        if not self.memory_efficient:
            move_z()
            x = slots.x
            x.assign_add((z - x) * ckp1)
            variable.assign(z + (x - z) * beta)
            return
        keep = 1 - ckp1
        y_part = variable * keep - z * ((1 - beta) * keep)  # the old y and z
        move_z()
        variable.assign(y_part + z * (1 - beta * keep))  # the new z
        slots.beta.assign(ops.cast(beta, "float32"))

    def to_averaged(self, y: Any, slots: Values) -> Any:
        """``x`` from ``y`` and ``z`` (``memory_efficient`` form only)."""
        beta = ops.cast(slots.beta, y.dtype)
        return (y - slots.z * (1 - beta)) / beta

    def from_averaged(self, x: Any, slots: Values) -> Any:
        """``y`` from ``x`` and ``z`` (``memory_efficient`` form only)."""
        beta = ops.cast(slots.beta, x.dtype)
        return x * beta + slots.z * (1 - beta)

    def get_config(self) -> dict[str, Any]:
        return {"memory_efficient": self.memory_efficient}


@register_rule(package=PACKAGE)
class ScheduleFreeAdamWRule(_ScheduleFree):
    """Schedule-free AdamW (``schedulefree.AdamWScheduleFreeReference``).

    ``z = z - lr_t * weight_decay * y``; ``v = beta_2 * v + (1 - beta_2) * g**2``;
    ``z = z - lr_t * g / (sqrt(v / (1 - beta_2**(t + 1))) + epsilon)``; then ``x`` and
    ``y = beta_1 * x + (1 - beta_1) * z`` as in the module docstring. There is no first
    moment: ``beta_1`` is the interpolation between ``x`` and ``z``.

    Slots: ``z``, ``velocity``, ``x``; scalar slots ``weight_sum``, ``lr_max``. By default
    (``fuses_by_default``), on TensorFlow outside XLA the ``velocity`` and ``z`` steps are
    one ``ResourceApplyAdam`` pass with a scratch buffer ``adam_scratch`` (not saved), equal
    to the rule's operations to float32 rounding.

    Args:
        memory_efficient: Drop the ``x`` slot (``schedulefree.AdamWScheduleFree``'s form):
            two slots as Keras's AdamW, ``x`` recomputed from ``y`` and ``z`` for
            evaluation (equal to rounding, not bit for bit).

    Example:
        >>> ScheduleFreeAdamWRule().hyperparameters["learning_rate"]
        0.0025
    """

    hyperparameters: ClassVar[Mapping[str, float]] = {
        "learning_rate": 0.0025,
        "beta_1": 0.9,
        "beta_2": 0.999,
        "epsilon": 1e-8,
        "weight_decay": 0.0,
        **_COMMON,
    }
    slots = ("z", "velocity", "x")
    fused_slots = ("adam_scratch",)  # ResourceApplyAdam's first moment (set to g each step)
    fuses_by_default = True

    def update(self, variable: Any, gradient: Any, slots: Values, hp: Values, step: Any) -> Any:
        lr, ckp1 = _average_weight(slots, hp, step)
        # g / (sqrt(v / b) + eps) = g * sqrt(b) / (sqrt(v) + eps * sqrt(b)): one op fewer
        root = ops.sqrt(bias_correction(hp.beta_2, step + 1))
        decay = variable * (lr * hp.weight_decay)
        kernel = backends.adam_pass() if "adam_scratch" in slots else None

        def move_z() -> None:
            if kernel is not None and kernel(  # fused=True on TensorFlow: z and v in one pass
                slots.z,
                slots.adam_scratch,
                slots.velocity,
                gradient,
                learning_rate=lr * root,
                beta_2=hp.beta_2,
                epsilon=hp.epsilon * root,
            ):
                slots.z.assign_sub(decay)
                return
            v = slots.velocity
            v.assign_add((gradient * gradient - v) * (1 - hp.beta_2))  # in place
            slots.z.assign_sub(gradient / (ops.sqrt(v) + hp.epsilon * root) * (lr * root) + decay)

        self._descend(variable, slots, move_z, ckp1, hp.beta_1)


@register_rule(package=PACKAGE)
class ScheduleFreeSGDRule(_ScheduleFree):
    """Schedule-free SGD (``schedulefree.SGDScheduleFreeReference``).

    ``z = z - lr_t * (g + weight_decay * y)``; then ``x`` and
    ``y = momentum * x + (1 - momentum) * z`` as in the module docstring.

    Slots: ``z``, ``x``; scalar slots ``weight_sum``, ``lr_max``.

    Args:
        memory_efficient: Drop the ``x`` slot, as for :class:`ScheduleFreeAdamWRule`.

    Example:
        >>> ScheduleFreeSGDRule().hyperparameters["momentum"]
        0.9
    """

    hyperparameters: ClassVar[Mapping[str, float]] = {
        "learning_rate": 1.0,
        "momentum": 0.9,
        "weight_decay": 0.0,
        **_COMMON,
    }
    slots = ("z", "x")

    def update(self, variable: Any, gradient: Any, slots: Values, hp: Values, step: Any) -> Any:
        lr, ckp1 = _average_weight(slots, hp, step)
        descent = (gradient + variable * hp.weight_decay) * lr
        self._descend(variable, slots, lambda: slots.z.assign_sub(descent), ckp1, hp.momentum)


BUILTIN.update(schedulefreeadamw=ScheduleFreeAdamWRule, schedulefreesgd=ScheduleFreeSGDRule)
