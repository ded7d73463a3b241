"""ReduceOnPlateau's rules: when a metric "improves" and how the scale, wait and cooldown move.

Default rule: improved iff ``x < best - min_delta - rtol * |best|``; after ``patience``
epochs without improvement
``scale <- min(scale, max(scale * factor, min_value / schedule, min_scale))``, then
``cooldown`` epochs of rest. ``compat="keras"``, ``"torch"`` and ``"optax"`` follow those
libraries' rules exactly. :class:`PlateauRules` is a mixin of
:class:`~hyperstep.control.controllers.ReduceOnPlateau`; the helpers check its arguments.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
from keras import ops

from hyperstep import backends
from hyperstep.control.hyperparameter import Hyperparameter
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received

_INCREASING = ("accuracy", "acc", "auc", "precision", "recall", "f1_score", "iou")
# "already at min_value" within float32 rounding of min_value / schedule * schedule
_FLOOR_TOLERANCE = 1.0 + 2.0**-20


def _reduce(value: Any, reduce: str | None, variable: Any) -> Any:
    """``value`` reduced across replicas and workers (TensorFlow); checked elsewhere."""
    if not backends.distributes():
        if reduce not in ("mean", "sum", None):
            raise InvalidArgumentError(
                "`ReduceOnPlateau.update(reduce=...)` must be 'mean', 'sum' or None. "
                f"{received('reduce', reduce)}"
            )
        return value
    from hyperstep.control.distribute import reduce_metric

    return reduce_metric(value, reduce, variable)


def _scope_of(variable: Any) -> Any:
    """The tf.distribute scope ``variable`` was created in, if none is entered (TensorFlow)."""
    if not backends.distributes():
        return contextlib.nullcontext()
    from hyperstep.control.distribute import scope_of

    return scope_of(variable)


def _resolve_target(target: Any, owner: str = "ReduceOnPlateau(target=...)") -> Hyperparameter:
    from hyperstep.control.wrapped import hyperstep_optimizer, hyperstep_optimizers

    inside = hyperstep_optimizers(target)
    if len(inside) > 1:
        raise InvalidTypeError(
            f"`{owner}` names one hyperparameter, but {type(target).__name__} holds "
            f"{len(inside)} hyperstep optimizers ({[o.name for o in inside]}): pass one of "
            "them (`multi.optimizers[i]`) or its `hyperparameters['learning_rate']`. "
            f"Received: target of type {type(target).__name__}"
        )
    target = hyperstep_optimizer(target)  # through LossScaleOptimizer, SkipNonFinite, ...
    hyperparameters = getattr(target, "hyperparameters", None)
    if isinstance(hyperparameters, dict) and "learning_rate" in hyperparameters:
        target = hyperparameters["learning_rate"]
    if not isinstance(target, Hyperparameter):
        raise InvalidTypeError(
            f"`{owner}` must be a hs.Hyperparameter such as "
            "opt.hyperparameters['learning_rate'] (or a hs.scheduled optimizer). "
            f"Received: target of type {type(target).__name__}"
        )
    return target


def _non_negative(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise InvalidArgumentError(
            f"`ReduceOnPlateau({name}=...)` must be a number >= 0. {received(name, value)}"
        )
    if not math.isfinite(value):
        raise InvalidArgumentError(
            f"`ReduceOnPlateau({name}=...)` must be finite. {received(name, value)}"
        )
    return float(value)


def _non_negative_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise InvalidArgumentError(
            f"`ReduceOnPlateau({name}=...)` must be an integer >= 0. {received(name, value)}"
        )
    return int(value)


def _check_compat(
    compat: str | None, mode: str, min_delta: float, rtol: float, min_value: float
) -> None:
    if compat == "keras" and rtol > 0.0:
        raise InvalidArgumentError(
            "Keras's ReduceLROnPlateau has only an absolute threshold: with compat='keras' use "
            f"min_delta and leave rtol=None. {received('rtol', rtol)}"
        )
    if compat == "torch" and rtol > 0.0 and min_delta > 0.0:
        raise InvalidArgumentError(
            "torch's ReduceLROnPlateau has one threshold: with compat='torch' give rtol "
            "(threshold_mode='rel') or min_delta (threshold_mode='abs'), not both. "
            f"Received: rtol={rtol}, min_delta={min_delta}"
        )
    if compat == "optax":
        if mode == "max":
            raise _optax_max_error("", mode)
        if rtol == 0.0 and min_delta == 0.0:
            raise InvalidArgumentError(
                "optax's reduce_on_plateau needs rtol > 0 or min_delta (atol) > 0. "
                f"Received: rtol={rtol}, min_delta={min_delta}"
            )
        if min_value > 0.0:
            raise InvalidArgumentError(
                "optax's reduce_on_plateau floors the scale, not the value: with "
                f"compat='optax' use min_scale=... instead. {received('min_value', min_value)}"
            )


def _optax_max_error(monitor: str, mode: str) -> InvalidArgumentError:
    what = f" monitor={monitor!r} is maximised;" if monitor else ""
    return InvalidArgumentError(
        "optax's reduce_on_plateau minimises only:" + what + " with compat='optax' negate the "
        f"metric and use mode='min'. {received('mode', mode)}"
    )


def _direction_from_name(monitor: str, mode: str) -> float | None:
    if mode != "auto":
        return 1.0 if mode == "min" else -1.0
    name = monitor.removeprefix("val_")
    if name.endswith("loss") or name.endswith("error"):
        return 1.0
    if name.endswith(_INCREASING):
        return -1.0
    return None


def _direction_from_model(model: Any, monitor: str) -> float | None:
    name = monitor.removeprefix("val_")
    for metric in _flat_metrics(getattr(model, "metrics", [])):
        if getattr(metric, "name", None) == name and hasattr(metric, "_direction"):
            return -1.0 if metric._direction == "up" else 1.0
    return None


def _flat_metrics(metrics: Any) -> list[Any]:
    found: list[Any] = []
    for metric in metrics:
        inner = getattr(metric, "metrics", None)
        found.extend(_flat_metrics(inner) if isinstance(inner, list) and inner else [metric])
    return found


def _concrete_float(value: Any) -> float | None:
    """Return ``value`` as a Python float when it is concrete (not symbolic), else None."""
    if isinstance(value, (int, float, np.number, np.ndarray)):
        return float(np.asarray(value).reshape(()))
    if backends.builds_graph():
        return None
    try:
        return float(np.asarray(ops.convert_to_numpy(value)).reshape(()))
    except Exception:  # a tracer or a symbolic tensor: no warning possible
        return None


class PlateauRules:
    """Mixin of :class:`~hyperstep.control.controllers.ReduceOnPlateau`: whether a metric
    improved, and the new ``(scale, wait, cooldown)`` under each ``compat`` rule."""

    compat: Any
    min_delta: Any
    rtol: Any
    patience: Any
    cooldown: Any
    factor: Any
    min_value: Any
    min_scale: Any
    eps: Any
    target: Any
    monitor: Any
    mode: Any
    _sign: Any
    _model: Any

    def _improves(self, x: Any, best: Any, sign: float) -> Any:
        if self.compat == "keras":
            return ops.less(x + self.min_delta, best)
        if self.compat == "torch":
            if self.rtol > 0.0:  # threshold_mode="rel": best * (1 - thr) in min, (1 + thr) in max
                return ops.less(x, best * (1.0 - sign * self.rtol))
            return ops.less(x, best - self.min_delta)
        if self.compat == "optax":
            return ops.less(x, (1.0 - self.rtol) * best - self.min_delta)
        threshold = best - self.min_delta - self.rtol * ops.absolute(best)
        return ops.logical_or(ops.equal(best, math.inf), ops.less(x, threshold))

    def _rule(self, improved: Any, wait: Any, cool: Any, scale: Any) -> tuple[Any, Any, Any]:
        """The default, Keras and torch rules: the new (scale, wait, cooldown)."""
        not_improved = ops.logical_not(improved)
        in_cooldown = ops.greater(cool, 0)
        cool = ops.where(in_cooldown, cool - 1, cool)
        if self.compat == "keras":  # cooldown zeroes wait first; its last update counts
            wait = ops.where(in_cooldown, ops.zeros_like(wait), wait)
            counted = ops.logical_and(not_improved, ops.less_equal(cool, 0))
            wait = ops.where(improved, ops.zeros_like(wait), ops.where(counted, wait + 1, wait))
            fire = ops.logical_and(counted, ops.greater_equal(wait, self.patience))
        elif self.compat == "torch":  # count, then cooldown zeroes the count; num_bad > patience
            wait = ops.where(improved, ops.zeros_like(wait), wait + 1)
            wait = ops.where(in_cooldown, ops.zeros_like(wait), wait)
            fire = ops.greater(wait, self.patience)
        else:
            counted = ops.logical_and(not_improved, ops.logical_not(in_cooldown))
            wait = ops.where(counted, wait + 1, ops.zeros_like(wait))
            fire = ops.logical_and(counted, ops.greater_equal(wait, self.patience))
        schedule = ops.cast(self.target.base_at(self.target.clock.step), "float32")
        positive = ops.greater(schedule, 0.0)
        floor = ops.where(positive, self.min_value / ops.where(positive, schedule, 1.0), 0.0)
        reduced = ops.where(scale * self.factor >= floor, scale * self.factor, floor)
        reduced = ops.maximum(reduced, self.min_scale)
        if self.compat is None:
            apply = fire
            new_scale = ops.where(fire, ops.minimum(scale, reduced), scale)
        else:
            old = schedule * scale
            if self.compat == "keras":  # reduce only above the floor; otherwise nothing happens
                apply = ops.logical_and(fire, ops.greater(old, self.min_value * _FLOOR_TOLERANCE))
                fire = apply
            else:  # torch: applied only when it lowers the value by more than eps
                new = ops.maximum(old * self.factor, self.min_value)
                apply = ops.logical_and(fire, ops.greater(old - new, self.eps))
            new_scale = ops.where(apply, reduced, scale)
        zero = ops.zeros_like(wait)
        return (
            new_scale,
            ops.where(fire, zero, wait),
            ops.where(fire, ops.full_like(cool, self.cooldown), cool),
        )

    def _optax(self, improved: Any, wait: Any, cool: Any, scale: Any) -> tuple[Any, Any, Any]:
        """optax.contrib.reduce_on_plateau's ``_update_scale`` with ``accumulation_size=1``."""
        in_cooldown = ops.greater(cool, 0)
        count = ops.where(improved, ops.zeros_like(wait), wait + 1)
        fire = ops.logical_and(ops.logical_not(in_cooldown), ops.equal(count, self.patience))
        scaled = ops.maximum(ops.where(fire, scale * self.factor, scale), self.min_scale)
        new_cool = ops.where(fire, ops.full_like(cool, self.cooldown), ops.zeros_like(cool))
        return (
            ops.where(in_cooldown, scale, scaled),
            ops.where(ops.logical_or(in_cooldown, fire), ops.zeros_like(wait), count),
            ops.where(in_cooldown, cool - 1, new_cool),
        )

    def _direction(self) -> float:
        if self._sign is None and self._model is not None:
            self._sign = _direction_from_model(self._model, self.monitor)
            if self.compat == "optax" and self._sign == -1.0:
                raise _optax_max_error(self.monitor, self.mode)
        if self._sign is None:
            raise InvalidArgumentError(
                f"ReduceOnPlateau cannot tell whether monitor={self.monitor!r} should go down "
                "or up. Pass mode='min' or mode='max'. Received: mode='auto'"
            )
        return self._sign
