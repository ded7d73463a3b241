"""Seed 001: a custom variable that trains together with the weights and biases.

The model multiplies a dense layer's output by a custom scalar variable ``var``::

    y = dense(x) * var

Old (the seed's Keras code on Keras 3): ``self.var = tf.Variable(...)`` in a ``keras.Model``.
Keras 3 tracks only ``keras.Variable`` attributes, so the raw ``tf.Variable`` is silently
untracked: not in ``model.trainable_variables``, never trained by ``fit`` or by a tape over
``model.trainable_variables``, and dropped by ``save_weights`` -- with no warning
(``untracked_*`` below).

``hs.doctor(model, data=...)`` names the cause (finding ``untracked``) and the fix (``diagnose``).

Fixed: create it with ``self.add_weight(...)`` (a ``keras.Variable``); it then trains with
``fit`` and with a ``GradientTape`` loop alike (``fixed_fit``, ``fixed_tape``).

Its own learning rate (10x the rest): Keras 3 has no parameter groups, so the Keras way is two
optimizers over a hand split of the variables (``keras_two_optimizers``); with hyperstep it is
one optimizer with an ``hs.Group`` (``hs_group``), on one clock.

Each function returns a ``Result``: ``var`` after every step and the final weights.
``tests/examples/test_seed001.py`` checks them.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any, NamedTuple

import keras
import numpy as np

from hyperstep.backends import require_tensorflow

require_tensorflow("examples/seed001_custom_variable.py (its tf.compat.v1 recipes)")

import tensorflow as tf  # noqa: E402

import hyperstep as hs  # noqa: E402

FEATURES = 4
BATCH = 16
STEPS = 40
LEARNING_RATE = 0.01
VAR_LEARNING_RATE = 0.1  # the custom variable's own rate: 10x
INITIAL_VAR = 0.5


class Data(NamedTuple):
    x: np.ndarray  # (STEPS * BATCH, FEATURES) float32, batched in order
    y: np.ndarray  # (STEPS * BATCH, 1) float32
    kernel: np.ndarray  # (FEATURES, 1) initial dense kernel


class Result(NamedTuple):
    var: np.ndarray  # (STEPS,) float32: var after each step
    weights: list[np.ndarray]  # kernel, bias, var after the last step


def make_data(seed: int = 0) -> Data:
    """Fixed batches of a target 3x larger than the initial model can fit without ``var``."""
    rng = np.random.RandomState(seed)
    true_kernel = rng.normal(size=(FEATURES, 1))
    x = rng.normal(size=(STEPS * BATCH, FEATURES))
    y = 1.5 * (x @ true_kernel) + 0.1 * rng.normal(size=(len(x), 1))
    kernel = true_kernel + 0.3 * rng.normal(size=(FEATURES, 1))
    return Data(x.astype(np.float32), y.astype(np.float32), kernel.astype(np.float32))


class SeedModel(keras.Model):
    """The seed's model, as written: ``self.var = tf.Variable(...)`` (untracked by Keras 3)."""

    def __init__(self, kernel: np.ndarray) -> None:
        super().__init__()
        self.dense = keras.layers.Dense(1, kernel_initializer=keras.initializers.Constant(kernel))
        self.var = tf.Variable(tf.constant([INITIAL_VAR]), trainable=True)

    def call(self, inputs: Any) -> Any:
        return self.dense(inputs) * self.var


class FixedModel(keras.Model):
    """The fix: ``self.add_weight`` makes ``var`` a tracked, trainable ``keras.Variable``."""

    def __init__(self, kernel: np.ndarray) -> None:
        super().__init__()
        self.dense = keras.layers.Dense(1, kernel_initializer=keras.initializers.Constant(kernel))
        self.var = self.add_weight(
            shape=(1,), initializer=keras.initializers.Constant(INITIAL_VAR), name="var"
        )

    def call(self, inputs: Any) -> Any:
        return self.dense(inputs) * self.var


def _numpy(variable: Any) -> np.ndarray:
    return np.asarray(keras.ops.convert_to_numpy(variable))


def _weights(model: keras.Model) -> list[np.ndarray]:
    return [_numpy(model.dense.kernel), _numpy(model.dense.bias), _numpy(model.var)]


class _RecordVar(keras.callbacks.Callback):
    def __init__(self, var: Any) -> None:
        super().__init__()
        self.var, self.values = var, []

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.values.append(float(_numpy(self.var)[0]))


def _fit(model: keras.Model, data: Data, optimizer: Any) -> Result:
    model.compile(optimizer=optimizer, loss="mse")
    record = _RecordVar(model.var)
    model.fit(
        data.x, data.y, batch_size=BATCH, epochs=1, shuffle=False, verbose=0, callbacks=[record]
    )
    return Result(np.array(record.values, np.float32), _weights(model))


def _batches(data: Data) -> Any:
    for t in range(STEPS):
        yield data.x[t * BATCH : (t + 1) * BATCH], data.y[t * BATCH : (t + 1) * BATCH]


# --- old: the seed's model on Keras 3 --------------------------------------------------------


def untracked_fit(data: Data) -> tuple[SeedModel, Result]:
    """The seed's model trained by ``fit``: ``var`` is never updated."""
    model = SeedModel(data.kernel)
    return model, _fit(model, data, keras.optimizers.SGD(LEARNING_RATE))


def untracked_save_weights(data: Data) -> float:
    """Save a seed model whose ``var`` was set to 2.0, load into a fresh one: returns its var."""
    model, fresh = SeedModel(data.kernel), SeedModel(data.kernel)
    model(data.x[:1]), fresh(data.x[:1])  # build
    model.var.assign([2.0])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "seed.weights.h5")
        model.save_weights(path)
        fresh.load_weights(path)
    return float(_numpy(fresh.var)[0])


# --- fixed: add_weight, trained by fit and by a tape -----------------------------------------


def fixed_fit(data: Data) -> Result:
    """The fixed model trained by ``fit``."""
    return _fit(FixedModel(data.kernel), data, keras.optimizers.SGD(LEARNING_RATE))


def fixed_tape(data: Data) -> Result:
    """The fixed model trained by the seed's ``GradientTape`` loop."""
    model = FixedModel(data.kernel)
    optimizer = keras.optimizers.SGD(LEARNING_RATE)
    loss_fn = keras.losses.MeanSquaredError()
    values = []
    for x, y in _batches(data):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        gradients = tape.gradient(loss, model.trainable_weights)
        optimizer.apply_gradients(zip(gradients, model.trainable_weights, strict=True))
        values.append(float(_numpy(model.var)[0]))
    return Result(np.array(values, np.float32), _weights(model))


def keras_two_optimizers(data: Data, var_learning_rate: Any = VAR_LEARNING_RATE) -> Result:
    """Keras 3's way to give ``var`` its own learning rate: two optimizers, split by hand.

    ``var_learning_rate`` is a number or a Keras schedule (on the second optimizer's own
    ``iterations``, which match the first one's only because both step every time).
    """
    model = FixedModel(data.kernel)
    model(data.x[:1])
    rest = [v for v in model.trainable_weights if v is not model.var]
    optimizer, var_optimizer = (
        keras.optimizers.SGD(LEARNING_RATE),
        keras.optimizers.SGD(var_learning_rate),
    )
    loss_fn = keras.losses.MeanSquaredError()
    values = []
    for x, y in _batches(data):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        gradients = tape.gradient(loss, [*rest, model.var])
        optimizer.apply_gradients(zip(gradients[:-1], rest, strict=True))
        var_optimizer.apply_gradients([(gradients[-1], model.var)])
        values.append(float(_numpy(model.var)[0]))
    return Result(np.array(values, np.float32), _weights(model))


# --- new: be told why a variable does not train ---------------------------------------------


def diagnose(model_class: type, data: Data) -> Any:
    """``hs.doctor`` on a compiled model of ``model_class``: the seed's model gets `untracked`."""
    model = model_class(data.kernel)
    model.compile(optimizer=keras.optimizers.SGD(LEARNING_RATE), loss="mse")
    return hs.doctor(model, data=(data.x[:BATCH], data.y[:BATCH]))


# --- new: one optimizer, var in its own group ------------------------------------------------


def hs_optimizer(var_learning_rate: Any = VAR_LEARNING_RATE) -> Any:
    """SGD with ``var`` in its own group (10x the rate by default): one optimizer, one clock.

    ``var_learning_rate`` may be a number, a schedule or an expression of ``step``.
    """
    return hs.StepOptimizer(
        "sgd",
        groups=[hs.Group("var", match="*/var", learning_rate=var_learning_rate)],
        learning_rate=LEARNING_RATE,
    )


def hs_group_fit(data: Data, var_learning_rate: Any = VAR_LEARNING_RATE) -> Result:
    """The fixed model trained by ``fit`` with :func:`hs_optimizer`."""
    return _fit(FixedModel(data.kernel), data, hs_optimizer(var_learning_rate))


def hs_group_tape(data: Data, var_learning_rate: Any = VAR_LEARNING_RATE) -> Result:
    """The fixed model trained by the seed's tape loop with :func:`hs_optimizer`."""
    model = FixedModel(data.kernel)
    optimizer = hs_optimizer(var_learning_rate)
    loss_fn = keras.losses.MeanSquaredError()
    values = []
    for x, y in _batches(data):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        gradients = tape.gradient(loss, model.trainable_weights)
        optimizer.apply_gradients(zip(gradients, model.trainable_weights, strict=True))
        values.append(float(_numpy(model.var)[0]))
    return Result(np.array(values, np.float32), _weights(model))


if __name__ == "__main__":
    data = make_data()
    model, old = untracked_fit(data)
    in_list = any(v is model.var for v in model.trainable_variables)
    print(f"seed model: var in trainable_variables: {in_list}; var after fit: {old.var[-1]}")
    print(f"seed model: var after save_weights(2.0) + load_weights: {untracked_save_weights(data)}")
    print(diagnose(SeedModel, data))
    fit, tape = fixed_fit(data), fixed_tape(data)
    same = all(np.array_equal(a, b) for a, b in zip(fit.weights, tape.weights, strict=True))
    print(f"add_weight: var after fit {fit.var[-1]:.6f}, after a tape {tape.var[-1]:.6f}")
    print(f"add_weight: fit and tape give the same weights bit for bit: {same}")
    split, group = keras_two_optimizers(data), hs_group_fit(data)
    same = all(np.array_equal(a, b) for a, b in zip(split.weights, group.weights, strict=True))
    print(f"var at 10x: two Keras optimizers {split.var[-1]:.6f}, hs.Group {group.var[-1]:.6f}")
    print(f"two Keras optimizers and one with an hs.Group agree bit for bit: {same}")
