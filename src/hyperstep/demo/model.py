"""The demo's data, model, schedules and optimizer (see :mod:`hyperstep.demo`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

#: the validation accuracy the default run must reach
TARGET_ACCURACY = 0.95
PEAK_LEARNING_RATE = 3e-3
TEMPERATURE_LEARNING_RATE = 0.02
FINAL_WEIGHT_DECAY = 0.05
BATCH_SIZE = 32
DEFAULT_EPOCHS = 20


@dataclass
class Data:
    """The digits, scaled to [0, 1] and split 80/20 into training and validation."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray


def load_data(seed: int, train_size: int | None = None) -> Data:
    """Return scikit-learn's bundled 8x8 digits (1,797 images), split with ``seed``.

    ``train_size`` keeps only the first images of the training split (for fast tests).
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target.astype("int64")
    order = np.random.default_rng(seed).permutation(len(x))
    split = int(0.8 * len(x))
    train, val = order[:split][:train_size], order[split:]
    return Data(x[train], y[train], x[val], y[val])


def epoch_order(seed: int, epoch: int, size: int) -> np.ndarray:
    """Return the training order of ``epoch``: a permutation that depends only on
    ``(seed, epoch)``, so a resumed run sees the same batches."""
    return np.random.default_rng([seed, epoch]).permutation(size)


def training_batches(data: Data, seed: int, first_epoch: int, epochs: int) -> Any:
    """Return a ``tf.data.Dataset`` of the batches of epochs ``first_epoch .. epochs - 1``."""
    import tensorflow as tf

    orders = [epoch_order(seed, e, len(data.x_train)) for e in range(first_epoch, epochs)]
    x = np.stack([data.x_train[o] for o in orders])
    y = np.stack([data.y_train[o] for o in orders])
    return tf.data.Dataset.from_tensor_slices((x, y)).flat_map(
        lambda xe, ye: tf.data.Dataset.from_tensor_slices((xe, ye)).batch(BATCH_SIZE)
    )


def build_model() -> Any:
    """Return the MLP 64 -> 128 relu -> 64 relu -> 10 logits, divided by a temperature."""
    import keras

    class Temperature(keras.layers.Layer):
        """``logits / temperature``, with a trainable scalar ``temperature`` (initially 1)."""

        def build(self, input_shape: Any) -> None:
            self.temperature = self.add_weight(shape=(), initializer="ones", name="temperature")

        def call(self, logits: Any) -> Any:
            return logits / self.temperature

    return keras.Sequential(
        [
            keras.Input(shape=(64,)),
            keras.layers.Dense(128, activation="relu", name="hidden_1"),
            keras.layers.Dense(64, activation="relu", name="hidden_2"),
            keras.layers.Dense(10, name="logits"),
            Temperature(name="temperature"),
        ],
        name="digits",
    )


def schedules(steps_per_epoch: int, epochs: int) -> dict[str, Any]:
    """Return the three schedules, by hyperparameter name.

    ``learning_rate``: one epoch of linear warmup from 1% of the peak (at most half the
    run), then cosine decay to 1% of the peak; ``weight_decay``: linear from 0 to 0.05;
    ``temperature/learning_rate``: cosine from 0.02 to 0.
    """
    from hyperstep import schedules as s

    total = steps_per_epoch * epochs
    warm = min(steps_per_epoch, max(1, total // 2))
    peak = PEAK_LEARNING_RATE
    return {
        "learning_rate": s.warmup(
            s.cosine(peak, steps=total - warm, end=peak / 100), steps=warm, start=peak / 100
        ),
        "weight_decay": s.linear(0.0, FINAL_WEIGHT_DECAY, steps=total),
        "temperature/learning_rate": s.cosine(TEMPERATURE_LEARNING_RATE, steps=total),
    }


def build_training(
    steps_per_epoch: int, epochs: int, plateau_min_delta: float | None = None
) -> tuple[Any, Any, Any]:
    """Return ``(model, optimizer, plateau)``, compiled, the optimizer built.

    ``plateau_min_delta`` (default: the controller's 1e-4) is for the resume test.
    """
    import keras

    import hyperstep as hs

    planned = schedules(steps_per_epoch, epochs)
    model = build_model()
    clock = hs.Clock(steps_per_epoch=steps_per_epoch)
    temperature = hs.Group(
        "temperature",
        match="*/temperature/temperature",
        learning_rate=planned["temperature/learning_rate"],
        weight_decay=0.0,  # decaying a divisor towards 0 would sharpen the logits
    )
    optimizer = hs.StepOptimizer(
        "adamw",
        groups=[temperature],
        clock=clock,
        learning_rate=planned["learning_rate"],
        weight_decay=planned["weight_decay"],
    )
    plateau = hs.ReduceOnPlateau(
        optimizer.hyperparameters["learning_rate"],
        monitor="val_loss",
        factor=0.5,
        patience=2,
        cooldown=1,
        min_delta=plateau_min_delta,
        min_value=1e-5,
    )  # its reductions are printed after their epoch's line (demo.train)
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    optimizer.build(model.trainable_variables)
    return model, optimizer, plateau
