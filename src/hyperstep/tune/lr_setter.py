"""How ``hs.find_lr`` writes a learning rate into what the compiled train step reads.

A plain Keras optimizer: its ``learning_rate`` variable. ``hs.scheduled`` and
``hs.StepOptimizer``: the hyperparameter's override, each :class:`~hyperstep.Group` at its
ratio to the main value. Through a wrapper (``LossScaleOptimizer``, ``hs.SkipNonFinite``)
the wrapped optimizer's; in a ``MultiOptimizer`` the first sub-optimizer's, and every other
at its current ratio to the first (``lr_i = lr * lr_i(now) / lr_0(now)``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import keras

from hyperstep.control import wrapped
from hyperstep.control.hyperparameter import Hyperparameter
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received


class Setter:
    """Writes a learning rate: ``set(value)``; ``variables``: what it writes."""

    def __init__(
        self, write: Callable[[float], None], variables: list[Any], current: float
    ) -> None:
        self.set = write
        self.variables = variables
        self.current = current  # the value before the test, for the ratios
        self.hyperparameter: Hyperparameter | None = None  # when one was given


def setter(optimizer: Any, hyperparameter: Any) -> Setter:
    """How to set ``hyperparameter`` of ``optimizer`` and of the optimizers it wraps."""
    if isinstance(hyperparameter, Hyperparameter):
        value = float(keras.ops.convert_to_numpy(hyperparameter.value))
        found = Setter(hyperparameter.set, list(hyperparameter.variables), value)
        found.hyperparameter = hyperparameter
        return found
    if not isinstance(hyperparameter, str):
        raise InvalidTypeError(
            "`find_lr(hyperparameter=...)` must be a hyperparameter name such as "
            f"'learning_rate' or an `hs.Hyperparameter`. "
            f"{received('hyperparameter', hyperparameter)}"
        )
    setters = [_leaf(leaf, hyperparameter) for leaf in wrapped.leaf_optimizers(optimizer)]
    if len(setters) == 1:
        return setters[0]
    first = setters[0]
    ratios = [_ratio(s.current, first.current, hyperparameter) for s in setters]

    def write(value: float) -> None:
        for each, ratio in zip(setters, ratios, strict=True):
            each.set(value * ratio)

    return Setter(write, [v for s in setters for v in s.variables], first.current)


def _ratio(value: float, main: float, name: str) -> float:
    if main == 0.0 or not math.isfinite(value / main):
        raise InvalidArgumentError(
            f"`find_lr`: each sub-optimizer keeps its ratio to the first one's {name}, "
            f"which is {main}. Set a nonzero value first. Received: {name}={value} "
            f"against {main}"
        )
    return value / main


def _leaf(optimizer: Any, hyperparameter: str) -> Setter:
    if wrapped.is_hyperstep_optimizer(optimizer):
        return _hyperparameters_setter(optimizer, hyperparameter)
    if hyperparameter != "learning_rate":
        raise InvalidArgumentError(
            f"`find_lr(hyperparameter=...)`: a plain {type(optimizer).__name__} keeps only "
            "its learning rate in a variable. Wrap it with `hs.scheduled(...)` to ramp "
            f"another hyperparameter. {received('hyperparameter', hyperparameter)}"
        )
    if isinstance(optimizer.get_config().get("learning_rate"), dict):
        raise InvalidArgumentError(
            f"`find_lr`: the {type(optimizer).__name__}'s learning rate is a Keras "
            "schedule, which cannot be set while training. Compile with "
            "`hs.scheduled(optimizer, learning_rate=schedule)` (settable, same values) or a "
            "number. Received: learning_rate="
            f"{optimizer.get_config()['learning_rate'].get('class_name')}"
        )

    def write(value: float) -> None:
        optimizer.learning_rate = value

    current = float(keras.ops.convert_to_numpy(optimizer.learning_rate))
    return Setter(write, [], current)


def _hyperparameters_setter(optimizer: Any, name: str) -> Setter:
    """Override ``name`` and, at their current ratio to it, every group's ``name``."""
    found = optimizer.hyperparameters
    if name not in found:
        raise InvalidArgumentError(
            f"`find_lr(hyperparameter=...)` is not a hyperparameter of this "
            f"{type(optimizer).__name__}. Valid: {sorted(k for k in found if '/' not in k)}. "
            f"{received('hyperparameter', name)}"
        )
    main = found[name]
    current = float(keras.ops.convert_to_numpy(main.value))
    targets = [(main, 1.0)]
    for key, group in found.items():
        if key.endswith(f"/{name}"):
            value = float(keras.ops.convert_to_numpy(group.value))
            if current == 0.0 or not math.isfinite(value / current):
                raise InvalidArgumentError(
                    f"`find_lr`: group {key.split('/')[0]!r} keeps its ratio to the main "
                    f"{name}, which is {current} at step {int(optimizer.clock.step.numpy())}. "
                    f"Set a nonzero value first (`optimizer.hyperparameters[{name!r}].set(x)`"
                    f"). Received: {key}={value}, {name}={current}"
                )
            targets.append((group, value / current))

    def write(value: float) -> None:
        for hyperparameter, ratio in targets:
            hyperparameter.set(value * ratio)

    variables = [optimizer.clock.step]
    for hyperparameter in found.values():
        variables.extend(hyperparameter.variables)
    return Setter(write, variables, current)
