"""Drive the real plateau controllers of Keras, torch and optax on a metric sequence.

Each function returns the effective learning rate after each metric value, so a test can
compare it with ``hs.ReduceOnPlateau`` on the same sequence. ``reference_default`` is an
independent plain-Python statement of hyperstep's default rule (as documented), written
without looking at the implementation's tensor code.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def keras_trajectory(
    values: Sequence[float], base: float, *, monitor: str = "val_loss", **kwargs: object
) -> list[float]:
    """``keras.callbacks.ReduceLROnPlateau`` on a compiled model with a float LR."""
    import keras

    model = _keras_model()
    model.optimizer.learning_rate = base
    callback = keras.callbacks.ReduceLROnPlateau(monitor=monitor, **kwargs)
    callback.set_model(model)
    callback.on_train_begin()
    out = []
    for epoch, value in enumerate(values):
        callback.on_epoch_end(epoch, {monitor: float(value)})
        out.append(float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)))
    return out


@functools.cache
def _keras_model() -> Any:
    import keras

    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=1.0), loss="mse")
    return model


def torch_trajectory(values: Sequence[float], base: float, **kwargs: object) -> list[float]:
    """``torch.optim.lr_scheduler.ReduceLROnPlateau`` on a dummy SGD."""
    import torch

    weight = torch.nn.Parameter(torch.zeros(()))
    optimizer = torch.optim.SGD([weight], lr=base)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, **kwargs)  # type: ignore[arg-type]
    out = []
    for value in values:
        scheduler.step(float(value))
        out.append(float(optimizer.param_groups[0]["lr"]))
    return out


def optax_trajectory(values: Sequence[float], base: float, **kwargs: object) -> list[float]:
    """``optax.contrib.reduce_on_plateau``: ``base * state.scale`` after each update."""
    import jax.numpy as jnp

    init, update = _optax_transform(tuple(sorted(kwargs.items())))
    params = {"w": jnp.zeros((), jnp.float32)}
    state = init(params)
    out = []
    for value in values:
        _, state = update(params, state, value=jnp.float32(value))
        out.append(base * float(state.scale))
    return out


@functools.cache
def _optax_transform(kwargs: tuple[tuple[str, Any], ...]) -> tuple[Any, Any]:
    """One jitted update per configuration (compiling is the slow part)."""
    import jax
    import optax

    transform = optax.contrib.reduce_on_plateau(**dict(kwargs))
    return transform.init, jax.jit(transform.update)


def reference_default(
    values: Sequence[float],
    base: float,
    *,
    factor: float = 0.1,
    patience: int = 10,
    cooldown: int = 0,
    min_delta: float = 1e-4,
    rtol: float = 0.0,
    min_value: float = 0.0,
    mode: str = "min",
) -> list[float]:
    """hyperstep's documented default rule, for a constant schedule ``base``."""
    sign = 1.0 if mode == "min" else -1.0
    best, wait, cool, scale = math.inf, 0, 0, 1.0
    out = []
    for raw in values:
        x = sign * float(raw)
        improved = math.isfinite(x) and (
            best == math.inf or x < best - min_delta - rtol * abs(best)
        )
        in_cooldown = cool > 0
        if in_cooldown:
            cool -= 1
        if improved:
            best, wait = x, 0
        elif in_cooldown:
            wait = 0
        else:
            wait += 1
            if wait >= patience:
                scale = min(scale, max(scale * factor, min_value / base))
                wait, cool = 0, cooldown
        out.append(base * scale)
    return out


def sequences() -> dict[str, list[float]]:
    """Metric sequences: plateaus, improvements in cooldown, long flats to reach floors."""
    rng = np.random.default_rng(3)
    noisy = (1.0 / (1.0 + 0.15 * np.arange(40)) + rng.normal(0.0, 0.02, 40)).tolist()
    return {
        "plateau": [1.0, 0.8, *([0.8] * 14)],
        "cooldown_improvements": [
            *[1.0, 1.0, 1.0, 0.5, 0.6, 0.43, 0.4, 0.6, 0.6, 0.33, 0.7],
            *[0.7, 0.27, 0.31, 0.31, 0.31, 0.26, 0.31, 0.31, 0.31],
        ],
        "floor": [2.0, *([2.5] * 30)],
        "noisy": noisy,
        # steps of 3e-4 near 10: improvements for an absolute 1e-4, not for a relative 1e-4
        "small_steps": [10.0 - 3e-4 * i for i in range(12)] + [9.99] * 6,
        "rising": [0.1 * i for i in range(12)],
    }
