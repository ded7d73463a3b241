"""Plateau rules: pure functions ``rule(state, value, params) -> state`` in ``keras.ops``.

The shape of optax's ``reduce_on_plateau``: a :class:`PlateauState` of tensors goes in with
one metric value, a new one comes out, and nothing else changes. ``value`` is the metric
signed for minimisation (``sign * metric``, float32). :class:`hyperstep.ReduceOnPlateau`
reads its variables into a state, calls the rule its ``compat`` chose once (:data:`RULES`),
and assigns the result.

hyperstep's rule is :func:`default_rule`; :func:`keras_rule`, :func:`torch_rule` and
:func:`optax_rule` follow those libraries' rules exactly. No rule branches on a tensor: each
runs eagerly, inside ``tf.function``, ``jax.jit`` or ``torch.compile``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

from keras import ops

__all__ = [
    "FLOOR_TOLERANCE",
    "RULES",
    "PlateauParams",
    "PlateauState",
    "default_rule",
    "initial_state",
    "keras_rule",
    "optax_rule",
    "torch_rule",
]

#: "already at min_value" within float32 rounding of ``min_value / base * base`` (Keras rule)
FLOOR_TOLERANCE = 1.0 + 2.0**-20


class PlateauState(NamedTuple):
    """A plateau controller's state, every field a scalar tensor.

    Attributes:
        best: Best signed value so far (``+inf`` before any), float32.
        wait: Non-improving updates counted, integer.
        cooldown: Updates of cooldown left, integer.
        scale: The multiplier of the schedule, float32.
        reductions: How many updates lowered ``scale``, integer.
    """

    best: Any
    wait: Any
    cooldown: Any
    scale: Any
    reductions: Any


class PlateauParams(NamedTuple):
    """The rule's constants (Python numbers) and ``base``, the value ``scale`` multiplies.

    Attributes:
        factor: Multiplier of a reduction, ``0 < factor < 1``.
        patience: Non-improving updates before a reduction.
        cooldown: Updates of rest after a reduction.
        min_delta: Absolute improvement threshold.
        rtol: Relative improvement threshold.
        min_value: Floor on ``base * scale`` applied by reductions.
        min_scale: Floor on ``scale``.
        eps: torch's minimal change of the value (:func:`torch_rule`).
        sign: ``1.0`` when the metric is minimised, ``-1.0`` when maximised.
        base: ``schedule(step)`` at this update (a float32 tensor or number).
    """

    factor: float = 0.1
    patience: int = 10
    cooldown: int = 0
    min_delta: float = 1e-4
    rtol: float = 0.0
    min_value: float = 0.0
    min_scale: float = 0.0
    eps: float = 1e-8
    sign: float = 1.0
    base: Any = 1.0


Rule = Callable[[PlateauState, Any, PlateauParams], PlateauState]


def default_rule(state: PlateauState, value: Any, params: PlateauParams) -> PlateauState:
    """hyperstep's rule: a relative and an absolute threshold, floors on value and scale.

    ``improved = value < best - min_delta - rtol * |best|`` (or ``best`` is ``+inf``); an
    update that does not improve, outside cooldown, does ``wait += 1``; at
    ``wait >= patience``: ``scale = min(scale, max(scale * factor, min_value / base,
    min_scale))``, ``wait = 0``, ``cooldown`` starts. Cooldown updates are not counted.

    Example:
        >>> from keras import ops
        >>> state = initial_state()
        >>> for loss in [1.0, 0.5, 0.6, 0.7]:
        ...     state = default_rule(state, ops.convert_to_tensor(loss), PlateauParams(0.5, 1))
        >>> float(state.scale), int(state.reductions), float(state.best)
        (0.25, 2, 0.5)
    """
    best = state.best
    threshold = best - params.min_delta - params.rtol * ops.absolute(best)
    improved = _finite_and(
        value, ops.logical_or(ops.equal(best, math.inf), ops.less(value, threshold))
    )
    in_cooldown, cool = _count_down(state.cooldown)
    counted = ops.logical_and(ops.logical_not(improved), ops.logical_not(in_cooldown))
    wait = ops.where(counted, state.wait + 1, ops.zeros_like(state.wait))
    fire = ops.logical_and(counted, ops.greater_equal(wait, params.patience))
    scale = ops.where(fire, ops.minimum(state.scale, _reduced(state.scale, params)), state.scale)
    return _next(state, value, params, improved, fire, wait, cool, scale)


def keras_rule(state: PlateauState, value: Any, params: PlateauParams) -> PlateauState:
    """``keras.callbacks.ReduceLROnPlateau``'s rule.

    ``improved = value + min_delta < best``; cooldown counts down first and zeroes ``wait``,
    and the update that ends it already counts; at ``wait >= patience`` the scale is reduced
    only if ``base * scale`` is above ``min_value`` (else ``wait`` stays and no cooldown
    starts).
    """
    improved = _finite_and(value, ops.less(value + params.min_delta, state.best))
    in_cooldown, cool = _count_down(state.cooldown)
    wait = ops.where(in_cooldown, ops.zeros_like(state.wait), state.wait)
    counted = ops.logical_and(ops.logical_not(improved), ops.less_equal(cool, 0))
    wait = ops.where(improved, ops.zeros_like(wait), ops.where(counted, wait + 1, wait))
    fire = ops.logical_and(counted, ops.greater_equal(wait, params.patience))
    above = ops.greater(params.base * state.scale, params.min_value * FLOOR_TOLERANCE)
    fire = ops.logical_and(fire, above)  # at the floor nothing happens
    scale = ops.where(fire, _reduced(state.scale, params), state.scale)
    return _next(state, value, params, improved, fire, wait, cool, scale)


def torch_rule(state: PlateauState, value: Any, params: PlateauParams) -> PlateauState:
    """``torch.optim.lr_scheduler.ReduceLROnPlateau``'s rule.

    ``improved = value < best * (1 - sign * rtol)`` (``threshold_mode="rel"``, when
    ``rtol > 0``) or ``value < best - min_delta`` (``"abs"``); count, then cooldown zeroes
    the count; at ``wait > patience`` the count restarts and cooldown starts, and the new
    value ``max(base * scale * factor, min_value)`` applies only if it lowers the value by
    more than ``eps``.
    """
    best = state.best
    if params.rtol > 0.0:  # best * (1 - thr) in min mode, best * (1 + thr) in max
        threshold = best * (1.0 - params.sign * params.rtol)
    else:
        threshold = best - params.min_delta
    improved = _finite_and(value, ops.less(value, threshold))
    in_cooldown, cool = _count_down(state.cooldown)
    wait = ops.where(improved, ops.zeros_like(state.wait), state.wait + 1)
    wait = ops.where(in_cooldown, ops.zeros_like(wait), wait)
    fire = ops.greater(wait, params.patience)
    old = params.base * state.scale
    new = ops.maximum(old * params.factor, params.min_value)
    apply = ops.logical_and(fire, ops.greater(old - new, params.eps))
    scale = ops.where(apply, _reduced(state.scale, params), state.scale)
    return _next(state, value, params, improved, fire, wait, cool, scale)


def optax_rule(state: PlateauState, value: Any, params: PlateauParams) -> PlateauState:
    """``optax.contrib.reduce_on_plateau``'s rule (``accumulation_size=1``).

    ``improved = value < (1 - rtol) * best - min_delta``; during cooldown nothing but the
    count down happens; else reduce when the plateau count reaches ``patience``:
    ``scale = max(scale * factor, min_scale)`` (optax floors the scale, not the value).
    """
    best = state.best
    improved = _finite_and(value, ops.less(value, (1.0 - params.rtol) * best - params.min_delta))
    wait, cool, scale = state.wait, state.cooldown, state.scale
    in_cooldown = ops.greater(cool, 0)
    count = ops.where(improved, ops.zeros_like(wait), wait + 1)
    fire = ops.logical_and(ops.logical_not(in_cooldown), ops.equal(count, params.patience))
    scaled = ops.maximum(ops.where(fire, scale * params.factor, scale), params.min_scale)
    new_cool = ops.where(fire, ops.full_like(cool, params.cooldown), ops.zeros_like(cool))
    new_scale = ops.where(in_cooldown, scale, scaled)
    return PlateauState(
        best=ops.where(improved, value, best),
        wait=ops.where(ops.logical_or(in_cooldown, fire), ops.zeros_like(wait), count),
        cooldown=ops.where(in_cooldown, cool - 1, new_cool),
        scale=new_scale,
        reductions=_counted_reductions(state, new_scale),
    )


#: The rule of each ``compat`` of :class:`hyperstep.ReduceOnPlateau`.
RULES: dict[str | None, Rule] = {
    None: default_rule,
    "keras": keras_rule,
    "torch": torch_rule,
    "optax": optax_rule,
}


def initial_state(scale: float = 1.0) -> PlateauState:
    """A fresh state: ``best = +inf``, nothing counted (float32 and int32 tensors)."""
    return PlateauState(
        best=ops.convert_to_tensor(math.inf, "float32"),
        wait=ops.convert_to_tensor(0, "int32"),
        cooldown=ops.convert_to_tensor(0, "int32"),
        scale=ops.convert_to_tensor(scale, "float32"),
        reductions=ops.convert_to_tensor(0, "int32"),
    )


def _finite_and(value: Any, improves: Any) -> Any:
    """NaN and +-inf never improve (and so never become ``best``)."""
    return ops.logical_and(ops.isfinite(value), improves)


def _count_down(cool: Any) -> tuple[Any, Any]:
    """Whether cooldown runs, and the count one lower if it does."""
    in_cooldown = ops.greater(cool, 0)
    return in_cooldown, ops.where(in_cooldown, cool - 1, cool)


def _reduced(scale: Any, params: PlateauParams) -> Any:
    """``max(scale * factor, min_value / base, min_scale)`` (no floor from a base <= 0)."""
    base = ops.cast(params.base, "float32")
    positive = ops.greater(base, 0.0)
    floor = ops.where(positive, params.min_value / ops.where(positive, base, 1.0), 0.0)
    reduced = ops.where(scale * params.factor >= floor, scale * params.factor, floor)
    return ops.maximum(reduced, params.min_scale)


def _counted_reductions(state: PlateauState, scale: Any) -> Any:
    lowered = ops.less(scale, state.scale)
    return state.reductions + ops.cast(lowered, state.reductions.dtype)


def _next(
    state: PlateauState,
    value: Any,
    params: PlateauParams,
    improved: Any,
    fire: Any,
    wait: Any,
    cool: Any,
    scale: Any,
) -> PlateauState:
    """After a reduction (``fire``) ``wait`` restarts and cooldown starts."""
    return PlateauState(
        best=ops.where(improved, value, state.best),
        wait=ops.where(fire, ops.zeros_like(wait), wait),
        cooldown=ops.where(fire, ops.full_like(cool, params.cooldown), cool),
        scale=scale,
        reductions=_counted_reductions(state, scale),
    )
