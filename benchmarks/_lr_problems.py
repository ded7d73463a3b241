"""The small problems of ``benchmarks/lr_find_quality.py``: a model, its data, its optimizer.

Each problem's data is fixed (made in-process, or scikit-learn's bundled digits: nothing is
downloaded); each seed draws the model's initial weights and the training order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Problem:
    """A model maker (``make(seed)``: built, not compiled), training data, loss, optimizer."""

    name: str
    make: Callable[[], Any]
    x: np.ndarray
    y: np.ndarray
    loss: str
    optimizer: Callable[[], Any]


def _regression() -> tuple[np.ndarray, np.ndarray]:
    """2,048 samples of 16 features; the target a random tanh network's output plus noise."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2048, 16)).astype("float32")
    w1, w2 = rng.normal(size=(16, 32)) / 4.0, rng.normal(size=(32, 1)) / 2.0
    y = np.tanh(x @ w1) @ w2 + 0.1 * rng.normal(size=(2048, 1))
    return x, y.astype("float32")


def _digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 8x8 digits (bundled with it), scaled to [0, 1]: 1,797 images."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    return (digits.data / 16.0).astype("float32"), digits.target.astype("int64")


def _text() -> tuple[np.ndarray, np.ndarray]:
    """2,048 sequences of 16 tokens of 50; the class: whether the tokens' hidden scores
    sum above zero (a bag-of-words sentiment)."""
    rng = np.random.default_rng(1)
    tokens = rng.integers(0, 50, size=(2048, 16))
    scores = rng.normal(size=50)
    return tokens.astype("int32"), (scores[tokens].sum(axis=1) > 0).astype("int64")


def _mlp(inputs: int, outputs: int) -> Any:
    import keras

    return keras.Sequential(
        [
            keras.Input((inputs,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(outputs),
        ]
    )


def _cnn() -> Any:
    import keras

    return keras.Sequential(
        [
            keras.Input((8, 8, 1)),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
            keras.layers.MaxPooling2D(2),
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ]
    )


def _embedding() -> Any:
    import keras

    return keras.Sequential(
        [
            keras.Input((16,), dtype="int32"),
            keras.layers.Embedding(50, 16),
            keras.layers.Flatten(),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(2),
        ]
    )


def _adam() -> Any:
    import keras

    return keras.optimizers.Adam()


def _adamw() -> Any:
    import keras

    return keras.optimizers.AdamW()


def _momentum() -> Any:
    import keras

    return keras.optimizers.SGD(momentum=0.9)


def problems() -> list[Problem]:
    """The benchmark's problems: four models, each with SGD with momentum and Adam(W)."""
    regression, digits, text = _regression(), _digits(), _text()
    images = digits[0].reshape(-1, 8, 8, 1), digits[1]
    classes = "sparse_categorical_crossentropy_logits"
    found = []
    for optimizer_name, optimizer, adaptive in (
        ("sgd-momentum", _momentum, None),
        ("adam", _adam, _adamw),
    ):
        adamw = adaptive or optimizer
        name_w = "adamw" if adaptive else optimizer_name
        found += [
            Problem(f"mlp-regression/{optimizer_name}", lambda: _mlp(16, 1), *regression,
                    "mse", optimizer),
            Problem(f"digits-mlp/{name_w}", lambda: _mlp(64, 10), *digits, classes, adamw),
            Problem(f"digits-cnn/{optimizer_name}", _cnn, *images, classes, optimizer),
            Problem(f"text-embedding/{name_w}", _embedding, *text, classes, adamw),
        ]  # fmt: skip
    return found


def loss_function(name: str) -> Any:
    """The Keras loss of a problem's ``loss`` name."""
    import keras

    if name == "mse":
        return keras.losses.MeanSquaredError()
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
