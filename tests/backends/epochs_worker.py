"""Fit's epochs on every backend, run by ``test_fit_epochs_backends.py`` once per backend.

``KERAS_BACKEND=jax python tests/backends/epochs_worker.py`` prints one JSON object:

* ``table``: keras-io's epoch-table learning rate (a plain ``SGD(0.1)`` whose rate the
  guide's ``CustomLearningRateScheduler`` sets from fit's epoch index) and
  ``hs.scheduled(SGD(), learning_rate=piecewise(..., unit="epoch"))`` with no callback, both
  over epochs of 5, 5, 5 and 1 steps: the rate of every update, fit's epochs, the final
  weights of each; and the same run saved to ``.keras`` after fit's epoch 3 and resumed
  (``initial_epoch=4``): the saved clock's state, the rates and the final weights;
* ``beta``: a functional model whose layer reads a free ``hs.Hyperparameter("min(epoch /
  10, 1)")`` (no clock) while Keras builds it and in every step: the value each forward
  pass read, fit's epoch of each step, and whether the hyperparameter moved onto the
  optimizer's clock.

This file asserts nothing itself. Importing it (pytest's doctest collection does) runs
nothing.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from typing import Any

import keras
import numpy as np

SAMPLES, BATCH, STEPS_PER_EPOCH, EPOCHS = 1000, 64, 5, 8
LR_SCHEDULE = [(3, 0.05), (6, 0.01), (9, 0.005), (12, 0.001)]  # keras-io's table


def lr_schedule(epoch: int, lr: Any) -> Any:  # keras-io's function, verbatim
    if epoch < LR_SCHEDULE[0][0] or epoch > LR_SCHEDULE[-1][0]:
        return lr
    for i in range(len(LR_SCHEDULE)):
        if epoch == LR_SCHEDULE[i][0]:
            return LR_SCHEDULE[i][1]
    return lr


class CustomLearningRateScheduler(keras.callbacks.Callback):  # keras-io's, without print
    def __init__(self, schedule: Any) -> None:
        super().__init__()
        self.schedule = schedule

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        lr = self.model.optimizer.learning_rate
        self.model.optimizer.learning_rate = self.schedule(epoch, lr)


class Rates(keras.callbacks.Callback):
    """The learning rate each update uses, and fit's epoch of each update."""

    def __init__(self) -> None:
        super().__init__()
        self.rates: list[float] = []
        self.epochs: list[int] = []
        self.epoch = -1

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self.epoch = epoch

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self.rates.append(float(np.asarray(self.model.optimizer.learning_rate)))
        self.epochs.append(self.epoch)


def data() -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(SAMPLES, 4)).astype("float32")
    return x, (x @ np.array([[0.5], [-1.0], [2.0], [0.3]], "float32") - 0.1)


def fit(model: Any, callbacks: list[Any], **kwargs: Any) -> None:
    x, y = data()
    kwargs.setdefault("epochs", EPOCHS)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Your input ran out of data")
        model.fit(x, y, batch_size=BATCH, steps_per_epoch=STEPS_PER_EPOCH, shuffle=False,
                  verbose=0, callbacks=callbacks, **kwargs)  # fmt: skip


def numbers(value: Any) -> Any:
    import keras

    return keras.ops.convert_to_numpy(value).tolist()


def check_table() -> dict[str, Any]:
    import keras

    import hyperstep as hs

    def model() -> Any:
        keras.utils.set_random_seed(1)
        return keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])

    reference, ours = model(), model()
    reference.compile(keras.optimizers.SGD(learning_rate=0.1), "mse")
    table = hs.schedules.piecewise([3, 6, 9, 12], [0.1, 0.05, 0.01, 0.005, 0.001], unit="epoch")
    ours.compile(hs.scheduled(keras.optimizers.SGD(), learning_rate=table), "mse")
    theirs, mine = Rates(), Rates()
    fit(reference, [CustomLearningRateScheduler(lr_schedule), theirs])
    fit(ours, [mine])
    # interrupted after one pass over the data (fit's epochs 0-3), saved to .keras, resumed
    first, second = model(), Rates()
    first.compile(hs.scheduled(keras.optimizers.SGD(), learning_rate=table), "mse")
    fit(first, [second], epochs=4)
    path = os.path.join(tempfile.mkdtemp(), "m.keras")
    first.save(path)
    resumed = keras.models.load_model(path)
    clock = resumed.optimizer.clock
    state = [int(numbers(v)) for v in (clock.step, *clock.epoch_variables)]
    fit(resumed, [second], initial_epoch=4)
    return {
        "reference": {"rates": theirs.rates, "epochs": theirs.epochs},
        "ours": {"rates": mine.rates, "epochs": mine.epochs},
        "resumed": {"rates": second.rates, "epochs": second.epochs, "state": state},
        "weights": [[numbers(w) for w in m.weights] for m in (reference, ours, resumed)],
    }


def check_beta() -> dict[str, Any]:
    import keras
    import numpy as np

    import hyperstep as hs

    class KLTerm(keras.layers.Layer):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.beta = hs.Hyperparameter("min(epoch / 10, 1)", name="kl_beta")
            self.seen = self.add_weight(shape=(), initializer="zeros", trainable=False)

        def call(self, z: Any) -> Any:
            beta = self.beta.value
            self.seen.assign(beta)
            self.add_loss(beta * keras.ops.mean(keras.ops.square(z)))
            return z

    class Seen(keras.callbacks.Callback):
        def __init__(self, layer: Any) -> None:
            super().__init__()
            self.layer, self.values, self.epochs = layer, [], []

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.epoch = epoch

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            _ = self.model  # on JAX: the training state back into the variables
            self.values.append(float(np.asarray(self.layer.seen)))
            self.epochs.append(self.epoch)

    keras.utils.set_random_seed(2)
    inputs = keras.Input((4,))
    kl = KLTerm()
    net = keras.Model(inputs, keras.layers.Dense(1)(kl(keras.layers.Dense(3)(inputs))))
    before = float(numbers(kl.beta.value))
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate="0.01 * 0.9 ** epoch")
    net.compile(optimizer, "mse")
    seen = Seen(kl)
    fit(net, [seen])
    return {
        "before": before,
        "values": seen.values,
        "epochs": seen.epochs,
        "moved": kl.beta.clock is optimizer.clock,
        "step": int(numbers(optimizer.clock.step)),
    }


def main() -> None:
    from worker_io import report  # beside this script (run as one; also imported by tests)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import keras

        result: dict[str, Any] = {"backend": keras.backend.backend()}
        result["table"] = check_table()
        result["beta"] = check_beta()
    report(result, caught)


if __name__ == "__main__":
    main()
