"""Optimizer facts: the variables an optimizer or a cached ``train_function`` holds, and the
learning rate at the current and the next step.

:mod:`hyperstep.diagnosis.probe` reads them into its :class:`~hyperstep.diagnosis.probe.Facts`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import keras
import numpy as np


def optimizer_variables(optimizer: Any) -> list[Any] | None:
    """The variables a built optimizer updates, or ``None`` when it is not built yet."""
    inner = getattr(optimizer, "inner_optimizer", None)
    if inner is not None:
        optimizer = inner
    if optimizer is None or not getattr(optimizer, "built", False):
        return None
    found = getattr(optimizer, "_trainable_variables", None)
    return None if found is None else list(found)


def train_function_variables(model: Any) -> list[Any]:
    """The variables captured by the graphs of a cached ``model.train_function`` (on
    TensorFlow; JAX's and torch's trainers read the model's variables at each call)."""
    function = getattr(model, "train_function", None)
    found: dict[int, Any] = {}
    stack: list[tuple[Any, int]] = [(function, 0)]
    visited: set[int] = set()
    while stack:
        obj, depth = stack.pop()
        if obj is None or id(obj) in visited or depth > 4:
            continue
        visited.add(id(obj))
        concrete = getattr(obj, "_list_all_concrete_functions", None)
        if concrete is not None:
            for cf in concrete():
                for variable in getattr(cf, "variables", ()):
                    found[id(variable)] = variable
        for cell in getattr(obj, "__closure__", None) or ():
            try:
                stack.append((cell.cell_contents, depth + 1))
            except ValueError:
                continue
        wrapped = getattr(obj, "__wrapped__", None) or getattr(obj, "_python_function", None)
        if wrapped is not None:
            stack.append((wrapped, depth + 1))
    return list(found.values())


@dataclasses.dataclass(frozen=True)
class LearningRate:
    """An optimizer's learning rate now and at the next step (``None`` when not a schedule)."""

    path: str
    step: int
    current: float
    following: float | None


def learning_rates(optimizer: Any) -> list[LearningRate]:
    """Every learning rate of ``optimizer``: its own and each parameter group's.

    For a hyperstep optimizer (``opt.hyperparameters`` holding ``learning_rate`` and
    ``"<group>/learning_rate"``) each is read now and at the next step of its clock; for any
    other optimizer, ``optimizer.learning_rate`` (see :func:`learning_rate`).
    """
    hyperparameters = getattr(optimizer, "hyperparameters", None)
    if not isinstance(hyperparameters, dict):
        rate = learning_rate(optimizer)
        return [] if rate is None else [rate]
    found = []
    for key, hp in hyperparameters.items():
        if key != "learning_rate" and not key.endswith("/learning_rate"):
            continue
        try:
            step = int(keras.ops.convert_to_numpy(hp.clock.step))
            current = float(np.asarray(keras.ops.convert_to_numpy(hp.value)))
            following: float | None = float(np.asarray(keras.ops.convert_to_numpy(hp.at(step + 1))))
        except Exception:
            continue
        if bool(keras.ops.convert_to_numpy(hp.is_set)):
            following = None  # an override holds until cleared: no schedule to look ahead on
        found.append(LearningRate(f"{optimizer.name}/{key}", step, current, following))
    return found


def learning_rate(optimizer: Any) -> LearningRate | None:
    """Read ``optimizer.learning_rate`` at its current iteration (no state is changed)."""
    if optimizer is None:
        return None
    try:
        current = float(np.asarray(keras.ops.convert_to_numpy(optimizer.learning_rate)))
        step = int(keras.ops.convert_to_numpy(optimizer.iterations))
    except Exception:
        return None
    inner = getattr(optimizer, "inner_optimizer", None) or optimizer
    schedule = getattr(inner, "_learning_rate", None)
    following = None
    if isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule):
        following = float(np.asarray(keras.ops.convert_to_numpy(schedule(step + 1))))
    path = (
        getattr(schedule, "path", None)
        or f"{getattr(optimizer, 'name', 'optimizer')}/learning_rate"
    )
    return LearningRate(str(path), step, current, following)
