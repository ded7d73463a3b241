"""``hyperstep demo``: a short real training run driven by a hyperstep schedule.

Trains a small Keras MLP on scikit-learn's bundled 8x8 digits (nothing is downloaded)
with ``Adam(learning_rate=warmup(cosine(...)))``, prints the validation accuracy and
writes the schedule's plot to ``OUT/schedule.png`` (default ``runs/demo``).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: the validation accuracy the default run reaches
TARGET_ACCURACY = 0.95
PEAK_LEARNING_RATE = 3e-3
BATCH_SIZE = 32


def register(subparsers: Any) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="train a small model with a hyperstep schedule",
        description="Train a small MLP on scikit-learn's 8x8 digits with Adam and a "
        "warmup + cosine learning rate; print the validation accuracy and write the "
        "schedule's plot.",
    )
    parser.add_argument("--out", default="runs/demo", help="output folder (default runs/demo)")
    parser.add_argument("--epochs", type=_positive_int, default=20, help="epochs (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.set_defaults(func=run)


@dataclass
class Data:
    """The digits, scaled to [0, 1] and split 80/20 into training and validation."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray


def load_data(seed: int) -> Data:
    """Return scikit-learn's bundled 8x8 digits (1,797 images), shuffled with ``seed``."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype("float32")
    y = digits.target.astype("int64")
    order = np.random.default_rng(seed).permutation(len(x))
    split = int(0.8 * len(x))
    train, val = order[:split], order[split:]
    return Data(x[train], y[train], x[val], y[val])


def build_model() -> Any:
    """Return the MLP: 64 -> 128 relu -> 64 relu -> 10 softmax."""
    import keras

    return keras.Sequential(
        [
            keras.Input(shape=(64,)),
            keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(10, activation="softmax"),
        ]
    )


def learning_rate(steps_per_epoch: int, epochs: int) -> Any:
    """Return the schedule: one epoch of linear warmup, then cosine decay to 0 at the end."""
    from hyperstep import schedules

    total = steps_per_epoch * epochs
    warm = min(steps_per_epoch, max(1, total // 2))
    return schedules.warmup(schedules.cosine(PEAK_LEARNING_RATE, steps=total - warm), steps=warm)


def train(out: str | Path, epochs: int = 20, seed: int = 0, verbose: int | str = "auto") -> dict:
    """Train the demo model; write ``schedule.png`` and ``metrics.json`` into ``out``.

    Returns:
        The metrics: ``val_accuracy``, ``epochs``, ``steps``, ``seconds`` and ``schedule``
        (the schedule's expression).
    """
    import keras

    from hyperstep.cli.plot import write_png
    from hyperstep.schedules.sample import sample

    started = time.perf_counter()
    keras.utils.set_random_seed(seed)
    data = load_data(seed)
    steps_per_epoch = -(-len(data.x_train) // BATCH_SIZE)
    schedule = learning_rate(steps_per_epoch, epochs)
    model = build_model()
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=schedule),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    print(f"learning rate: {schedule!r}")
    model.fit(
        data.x_train,
        data.y_train,
        batch_size=BATCH_SIZE,
        epochs=epochs,
        validation_data=(data.x_val, data.y_val),
        verbose=verbose,
    )
    _, accuracy = model.evaluate(data.x_val, data.y_val, verbose=0)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    total = steps_per_epoch * epochs
    steps, values = sample(schedule, total)
    write_png(
        [(repr(schedule), steps, values)],
        out / "schedule.png",
        title="learning rate of the demo run",
        steps_per_epoch=steps_per_epoch,
    )
    metrics = {
        "val_accuracy": float(accuracy),
        "epochs": epochs,
        "steps": total,
        "seconds": round(time.perf_counter() - started, 2),
        "schedule": repr(schedule),
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    return metrics


def run(args: argparse.Namespace) -> int:
    """Run the demo from parsed command-line arguments; return the exit status."""
    metrics = train(args.out, epochs=args.epochs, seed=args.seed)
    met = "target met" if metrics["val_accuracy"] >= TARGET_ACCURACY else "below target"
    print(
        f"validation accuracy: {metrics['val_accuracy']:.1%} ({met}: >= {TARGET_ACCURACY:.0%}) "
        f"after {metrics['epochs']} epochs, {metrics['steps']} steps, {metrics['seconds']} s"
    )
    print(f"wrote {Path(args.out) / 'schedule.png'} and {Path(args.out) / 'metrics.json'}")
    return 0


def _positive_int(text: str) -> int:
    from hyperstep.cli.plot import _positive_int as check

    return check(text)
