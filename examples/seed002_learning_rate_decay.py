"""Seed 002: a learning rate changed at run time, by epoch or by validation loss.

A linear regression (4 features) trained by SGD in epochs of 4 batches (30 epochs as in the
seed for the step decay, 15 for the validation-driven variant)::

    learning_rate(epoch) = 0.1 * 0.9 ** floor(epoch / 5)        (decay every 5 epochs)
    learning_rate <- learning_rate * 0.5 when val_loss has not improved for 2 epochs

Old (TF1 through ``tf.compat.v1``, graph mode in a private ``tf.Graph``): the seed's
non-trainable learning-rate variable handed to ``GradientDescentOptimizer`` and overwritten
from a placeholder by ``tf.assign`` -- ``tf1_step_decay`` every 5 epochs, ``tf1_plateau`` from
the validation loss (the plateau rule of Keras's ``ReduceLROnPlateau``, written out).

New (hyperstep), both in ``fit``:

- ``hs_step_decay``: ``hs.scheduled(SGD(), learning_rate=hs.schedules.exponential(0.1, 0.9,
  every=5 * steps_per_epoch, staircase=True))``, or the same schedule written as the expression
  ``"0.1 * 0.9 ** floor(epoch / 5)"`` on a clock that knows ``steps_per_epoch``.
- ``hs_plateau``: ``hs.ReduceOnPlateau(opt.hyperparameters["learning_rate"], monitor="val_loss",
  factor=0.5, patience=2)`` as a Keras callback.

Each function returns a ``Result``: the learning rate of every epoch and the final weights.
``tests/examples/test_seed002.py`` checks that old and new agree bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from hyperstep.backends import require_tensorflow

require_tensorflow("examples/seed002_learning_rate_decay.py (its tf.compat.v1 recipes)")

import tensorflow as tf  # noqa: E402

FEATURES = 4
BATCH = 16
STEPS_PER_EPOCH = 4
EPOCHS = 30
PLATEAU_EPOCHS = 15  # enough for five reductions
INITIAL_LR = 0.1
DECAY_EPOCHS = 5
DECAY_RATE = 0.9
PLATEAU_FACTOR = 0.5
PLATEAU_PATIENCE = 2


class Data(NamedTuple):
    x: np.ndarray  # (STEPS_PER_EPOCH * BATCH, FEATURES) float32, batched in order
    y: np.ndarray  # (..., 1) float32
    x_val: np.ndarray  # validation set, evaluated as one batch
    y_val: np.ndarray
    kernel: np.ndarray  # (FEATURES, 1) initial weights
    bias: np.ndarray  # (1,) initial bias


class Result(NamedTuple):
    learning_rates: np.ndarray  # (epochs,) float32: the learning rate used in each epoch
    kernel: np.ndarray
    bias: np.ndarray


def make_data(seed: int = 0) -> Data:
    """Fixed train/validation sets of a noisy linear target, and fixed initial weights."""
    rng = np.random.RandomState(seed)
    true_kernel = rng.normal(size=(FEATURES, 1))
    x = rng.normal(size=(STEPS_PER_EPOCH * BATCH + 32, FEATURES))
    y = x @ true_kernel + 0.5 + 0.3 * rng.normal(size=(len(x), 1))
    f32 = np.float32
    n = STEPS_PER_EPOCH * BATCH
    return Data(
        x[:n].astype(f32),
        y[:n].astype(f32),
        x[n:].astype(f32),
        y[n:].astype(f32),
        rng.normal(size=(FEATURES, 1)).astype(f32),
        np.zeros(1, f32),
    )


# ---------------------------------------------------------------------------------------------
# Old: TF1 code, run through tf.compat.v1 in a private graph (eager stays on for the caller).
# ---------------------------------------------------------------------------------------------

v1 = tf.compat.v1


class _TF1Model:
    """The seed's graph: a ``self._lr`` variable assigned from the ``self._new_lr`` placeholder."""

    def __init__(self, data: Data) -> None:
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.x = v1.placeholder(tf.float32, shape=[None, FEATURES])
            self.y = v1.placeholder(tf.float32, shape=[None, 1])
            self.kernel = v1.Variable(data.kernel)
            self.bias = v1.Variable(data.bias)
            prediction = tf.matmul(self.x, self.kernel) + self.bias
            self.loss = tf.reduce_mean(tf.square(prediction - self.y))
            self._lr = v1.Variable(0.0, trainable=False)
            optimizer = v1.train.GradientDescentOptimizer(self._lr)
            self.train_op = optimizer.minimize(self.loss, var_list=[self.kernel, self.bias])
            self._new_lr = v1.placeholder(tf.float32, shape=[], name="new_learning_rate")
            self._lr_update = v1.assign(self._lr, self._new_lr)
            self.init = v1.global_variables_initializer()

    def train(self, data: Data, decide: Any, epochs: int = EPOCHS) -> Result:
        """Runs ``epochs`` epochs; ``decide(sess, epoch, lr)`` returns the next learning rate."""
        learning_rates = []
        with v1.Session(graph=self.graph) as sess:
            sess.run(self.init)
            sess.run(self._lr_update, feed_dict={self._new_lr: INITIAL_LR})
            for epoch in range(epochs):
                learning_rates.append(sess.run(self._lr))
                for b in range(STEPS_PER_EPOCH):
                    batch = slice(b * BATCH, (b + 1) * BATCH)
                    sess.run(self.train_op, {self.x: data.x[batch], self.y: data.y[batch]})
                new_lr = decide(sess, epoch, sess.run(self._lr))
                sess.run(self._lr_update, feed_dict={self._new_lr: new_lr})
            kernel, bias = sess.run([self.kernel, self.bias])
        return Result(np.array(learning_rates, np.float32), kernel, bias)


def tf1_step_decay(data: Data) -> Result:
    """The seed's loop: every ``DECAY_EPOCHS`` epochs, ``lr <- lr * DECAY_RATE`` by assign."""

    def decide(sess: Any, epoch: int, current_lr: np.float32) -> Any:
        if (epoch + 1) % DECAY_EPOCHS == 0:
            return current_lr * DECAY_RATE  # float32 * float: stays float32
        return current_lr

    return _TF1Model(data).train(data, decide)


def tf1_plateau(data: Data, min_delta: float = 0.0) -> Result:
    """Validation-driven: halve lr when val loss has not improved for ``PLATEAU_PATIENCE`` epochs.

    The rule is Keras's ``ReduceLROnPlateau`` (mode "min", no cooldown), written out.
    """
    model = _TF1Model(data)
    state = {"best": np.inf, "wait": 0}

    def decide(sess: Any, epoch: int, current_lr: np.float32) -> Any:
        val_loss = sess.run(model.loss, {model.x: data.x_val, model.y: data.y_val})
        if val_loss < state["best"] - min_delta:
            state["best"], state["wait"] = val_loss, 0
            return current_lr
        state["wait"] += 1
        if state["wait"] >= PLATEAU_PATIENCE:
            state["wait"] = 0
            return current_lr * PLATEAU_FACTOR
        return current_lr

    return model.train(data, decide, PLATEAU_EPOCHS)


# ---------------------------------------------------------------------------------------------
# Keras 3 fit, shared by the hyperstep halves and by the Keras-only peers in the tests.
# ---------------------------------------------------------------------------------------------


def keras_fit(
    data: Data,
    optimizer: Any,
    callbacks: Sequence[Any] = (),
    read_learning_rate: Callable[[], Any] | None = None,
    epochs: int = EPOCHS,
) -> Result:
    """Trains the same linear model with ``fit``; validates each epoch when given callbacks.

    ``read_learning_rate`` reads the rate in use (default: ``optimizer.learning_rate``); it
    is called at the start of every epoch, before any callback can change it.
    """
    import keras

    read = read_learning_rate or (lambda: optimizer.learning_rate)
    learning_rates: list[float] = []

    class Record(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            learning_rates.append(np.float32(keras.ops.convert_to_numpy(read())))

    dense = keras.layers.Dense(
        1,
        kernel_initializer=keras.initializers.Constant(data.kernel),
        bias_initializer=keras.initializers.Constant(data.bias),
    )
    model = keras.Sequential([keras.Input((FEATURES,)), dense])
    model.compile(optimizer=optimizer, loss="mse")
    # tf.data batches in order (as fit's arrays with shuffle=False), at a third of the cost
    train = tf.data.Dataset.from_tensor_slices((data.x, data.y)).batch(BATCH)
    validation = tf.data.Dataset.from_tensors((data.x_val, data.y_val)) if callbacks else None
    model.fit(
        train,
        epochs=epochs,
        shuffle=False,
        verbose=0,
        validation_data=validation,
        callbacks=[Record(), *callbacks],
    )
    kernel, bias = (np.asarray(keras.ops.convert_to_numpy(v)) for v in (dense.kernel, dense.bias))
    return Result(np.array(learning_rates, np.float32), kernel, bias)


# ---------------------------------------------------------------------------------------------
# New: hyperstep, in fit.
# ---------------------------------------------------------------------------------------------

EXPRESSION = "0.1 * 0.9 ** floor(epoch / 5)"


def hs_step_decay(data: Data, form: str = "schedule") -> Result:
    """Decay every 5 epochs by 0.9: a schedule (``form="schedule"``) or an expression."""
    import keras

    import hyperstep as hs

    if form == "schedule":
        schedule = hs.schedules.exponential(
            INITIAL_LR, DECAY_RATE, every=DECAY_EPOCHS * STEPS_PER_EPOCH, staircase=True
        )
        optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=schedule)
    else:
        clock = hs.Clock(steps_per_epoch=STEPS_PER_EPOCH)
        optimizer = hs.scheduled(keras.optimizers.SGD(), clock=clock, learning_rate=EXPRESSION)
    learning_rate = optimizer.hyperparameters["learning_rate"]
    return keras_fit(data, optimizer, read_learning_rate=lambda: learning_rate.value)


def hs_plateau(data: Data) -> Result:
    """Validation-driven: ``hs.ReduceOnPlateau`` scales the learning rate by 0.5."""
    import keras

    import hyperstep as hs

    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=INITIAL_LR)
    learning_rate = optimizer.hyperparameters["learning_rate"]
    plateau = hs.ReduceOnPlateau(
        learning_rate,
        monitor="val_loss",
        factor=PLATEAU_FACTOR,
        patience=PLATEAU_PATIENCE,
        min_delta=0.0,
    )
    read = lambda: learning_rate.value  # noqa: E731
    return keras_fit(data, optimizer, [plateau], read, epochs=PLATEAU_EPOCHS)


def _same(a: Result, b: Result) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


if __name__ == "__main__":
    data = make_data()
    old = tf1_step_decay(data)
    print(f"step decay, learning rates by epoch: {np.unique(old.learning_rates)[::-1]}")
    expression, schedule = hs_step_decay(data, "expression"), hs_step_decay(data, "schedule")
    print(f"  TF1 == hs expression {EXPRESSION!r}, bit for bit: {_same(old, expression)}")
    gap = np.max(np.abs(schedule.kernel - old.kernel) / np.abs(old.kernel))
    print(f"  TF1 vs hs.schedules.exponential: kernel relative difference {gap:.1e}")
    old, new = tf1_plateau(data), hs_plateau(data)
    print(f"plateau, learning rates by epoch: {np.unique(old.learning_rates)[::-1]}")
    print(f"  TF1 == hs.ReduceOnPlateau, bit for bit: {_same(old, new)}")
