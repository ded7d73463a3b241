"""The model the overhead benchmarks train: MLP 784-256-256-10 (ReLU), seeded."""

from __future__ import annotations

from typing import Any


def mlp() -> Any:
    """Return the benchmark MLP, built with seed 0 on the current Keras backend."""
    import keras

    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [
            keras.Input((784,)),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(256, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
