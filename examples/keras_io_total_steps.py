"""Three keras-io examples that compute their schedule's length by hand, ported to ``total``.

Each keras-io example below writes, before ``fit``::

    total_steps = int((len(x_train) / BATCH_SIZE) * EPOCHS)
    warmup_steps = int(total_steps * WARMUP_FRACTION)
    WarmUpCosine(learning_rate_base=LR, total_steps=total_steps,
                 warmup_learning_rate=0.0, warmup_steps=warmup_steps)

(a linear warmup from 0 to ``LR`` over ``warmup_steps``, then ``LR * (1 + cos(pi * (step -
warmup_steps) / (total_steps - warmup_steps))) / 2``, and 0 after ``total_steps``). But
``fit`` runs ``EPOCHS * ceil(trained / BATCH_SIZE)`` steps, ``trained`` being the rows left
after ``validation_split``: the hand-made figure is not what ``fit`` runs.

======================  ==================  ==========  ==================  ==========
example                 data, batch, epochs hand        fit runs            difference
======================  ==================  ==========  ==================  ==========
masked_image_modeling   40000 rows, 256,    15625       157 x 100 = 15700   +75: the last 75
(MAE pretraining)       100 epochs                                          steps train at 0
vit_small_ds            50000 rows, 256,    9765        176 x 50 = 8800     -965: the cosine
(ViT, small datasets)   50 epochs,                                          stops at 0.03 * LR
                        validation_split=0.1                                (never its end)
patch_convnet           40000 rows, 128,    15625       313 x 50 = 15650    +25: the last 25
(aggregated attention)  50 epochs                                           steps train at 0
======================  ==================  ==========  ==================  ==========

(``vit_small_ds`` also builds its ``WarmUpCosine`` and then compiles ``AdamW`` with the
constant ``LEARNING_RATE``: the schedule is never used. The port uses it.)

The port replaces the figure with the run's own length::

    hs.scheduled(keras.optimizers.AdamW(weight_decay=WD), learning_rate=
        "warmup(cosine(LR, steps=total - floor(0.15 * total)), steps=floor(0.15 * total))")

``fit`` binds ``total`` to the steps it runs, whatever ``validation_split``, the batch size or
the data. The functions here run each example's data pipeline and ``fit`` call on tiny
generated arrays (the same shapes of split and batching, a small dense model) and count the
steps ``fit`` ran; ``tests/examples/test_keras_io_total_steps.py`` checks the claims.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import keras
import numpy as np

import hyperstep as hs


class Port(NamedTuple):
    """One keras-io example's figures, at its own sizes or shrunk."""

    name: str
    rows: int  # len(x_train) as the example computes total_steps from it
    batch_size: int
    epochs: int
    validation_split: float  # 0.0: the example splits its data off itself
    warmup_fraction: float
    learning_rate: float


#: the three examples at their keras-io sizes
KERAS_IO = (
    Port("masked_image_modeling", 40000, 256, 100, 0.0, 0.15, 5e-3),
    Port("vit_small_ds", 50000, 256, 50, 0.1, 0.10, 1e-3),
    Port("patch_convnet", 40000, 128, 50, 0.0, 0.15, 1e-3),
)


def shrunk(port: Port) -> Port:
    """``port`` on tiny data: the batch size kept, rows and epochs shrunk so that a partial
    last batch remains (the source of the difference)."""
    return port._replace(rows=port.rows // 100, epochs=10)


def hand_total(port: Port) -> int:
    """The keras-io figure: ``int((len(x_train) / BATCH_SIZE) * EPOCHS)``."""
    return int((port.rows / port.batch_size) * port.epochs)


def keras_steps(port: Port) -> int:
    """The steps ``fit`` runs, by Keras's rule: ``validation_split`` keeps
    ``int(rows * (1 - split))`` rows, each epoch ``ceil(rows / batch_size)`` batches."""
    trained = int(port.rows * (1 - port.validation_split))
    return port.epochs * math.ceil(trained / port.batch_size)


def warmup_cosine(port: Port, total_steps: int, step: np.ndarray) -> np.ndarray:
    """keras-io's ``WarmUpCosine`` at ``step`` (float64), the old half: 0 after
    ``total_steps``."""
    warmup = int(total_steps * port.warmup_fraction)
    base = port.learning_rate
    cosine = 0.5 * base * (1 + np.cos(np.pi * (step - warmup) / float(total_steps - warmup)))
    ramp = base / warmup * step
    return np.where(step > total_steps, 0.0, np.where(step < warmup, ramp, cosine))


def schedule(port: Port) -> str:
    """The port: the same warmup and cosine in the run's length."""
    warmup = f"floor({port.warmup_fraction!r} * total)"
    return f"warmup(cosine({port.learning_rate!r}, steps=total - {warmup}), steps={warmup})"


class Run(NamedTuple):
    hand: int  # the keras-io figure
    ran: int  # training steps fit ran (counted by a callback)
    total: int | None  # clock.total as fit bound it
    rates: np.ndarray  # the learning rate of each step (float32)


class _Rates(keras.callbacks.Callback):
    def __init__(self, optimizer: Any) -> None:
        super().__init__()
        self.optimizer, self.rates = optimizer, []

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self.rates.append(np.float32(keras.ops.convert_to_numpy(self.optimizer.learning_rate)))


def run(port: Port, seed: int = 0) -> Run:
    """Train the port on generated data as the example feeds its own: the rows it trains on
    (``validation_split`` where it uses one), batched by ``batch_size``, for ``epochs``."""
    rng = np.random.default_rng(seed)
    x = rng.random((port.rows, 12), dtype=np.float32)  # a tiny stand-in for the images
    y = rng.integers(0, 10, port.rows)
    optimizer = hs.scheduled(
        keras.optimizers.AdamW(weight_decay=1e-4), learning_rate=schedule(port)
    )
    model = keras.Sequential([keras.Input((12,)), keras.layers.Dense(10)])
    model.compile(optimizer, keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rates = _Rates(optimizer)
    model.fit(
        x,
        y,
        batch_size=port.batch_size,
        epochs=port.epochs,
        validation_split=port.validation_split,
        verbose=0,
        callbacks=[rates],
    )
    return Run(hand_total(port), len(rates.rates), optimizer.clock.total, np.array(rates.rates))


if __name__ == "__main__":
    for port in KERAS_IO:
        print(
            f"{port.name}: keras-io computes {hand_total(port)} steps, fit runs "
            f"{keras_steps(port)} ({keras_steps(port) - hand_total(port):+d})"
        )
        small = run(shrunk(port))
        print(f"  shrunk: hand {small.hand}, fit ran {small.ran}, total bound {small.total}")
