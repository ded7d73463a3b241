"""The units of hyperstep.tune.lr_state: a ``Snapshot`` puts back every variable a few
training steps change (the model's, the optimizer's, the clock's and the hyperparameters'),
the clocks' epoch settings and the global random state."""

import random

import keras
import numpy as np

import hyperstep as hs
from hyperstep.tune.lr_setter import setter
from hyperstep.tune.lr_state import Snapshot


def _model() -> keras.Model:
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.Dense(1)])
    optimizer = hs.scheduled(keras.optimizers.Adam(), learning_rate="1e-2 * (1 + step)")
    model.compile(optimizer=optimizer, loss="mse", metrics=["mae"], run_eagerly=True)
    return model


def _values(variables) -> list[np.ndarray]:
    return [np.array(keras.ops.convert_to_numpy(v), copy=True) for v in variables]


def test_restore_puts_back_what_training_changed_bit_for_bit() -> None:
    model = _model()
    x, y = np.ones((4, 3), "float32"), np.zeros((4, 1), "float32")
    model.train_on_batch(x, y)  # builds the optimizer and the metrics
    found = setter(model.optimizer, "learning_rate")
    snapshot = Snapshot(model, found)
    variables = snapshot.variables()
    clock = model.optimizer.clock
    assert any(v is clock.step for v in variables)
    assert len({id(v) for v in variables}) == len(variables)  # each once
    before = _values(variables)
    found.set(0.5)
    for _ in range(3):
        model.train_on_batch(x, y)
    assert not all(np.array_equal(a, b) for a, b in zip(before, _values(variables), strict=True))
    snapshot.restore()
    for a, b in zip(before, _values(variables), strict=True):
        np.testing.assert_array_equal(a, b)
    assert int(keras.ops.convert_to_numpy(clock.step)) == 1


def test_variables_made_after_the_snapshot_are_copied_when_asked() -> None:
    model = _model()
    model.build((None, 3))
    snapshot = Snapshot(model, setter(model.optimizer, "learning_rate"))
    copied = len(snapshot.saved)
    x, y = np.ones((4, 3), "float32"), np.zeros((4, 1), "float32")
    model.optimizer.build(model.trainable_variables)
    snapshot.copy_variables()
    assert len(snapshot.saved) > copied
    fresh = _values(model.optimizer.variables)
    model.train_on_batch(x, y)
    snapshot.restore()
    for a, b in zip(fresh, _values(model.optimizer.variables), strict=True):
        np.testing.assert_array_equal(a, b)


def test_restore_puts_back_the_random_state_and_the_clock_settings() -> None:
    model = _model()
    model.build((None, 3))
    snapshot = Snapshot(model, setter(model.optimizer, "learning_rate"))
    expected = (random.random(), np.random.rand(), keras.random.uniform(()).numpy())
    clock = model.optimizer.clock
    clock.steps_per_epoch, clock.follows_fit = 7, True
    snapshot.restore()
    assert clock.steps_per_epoch is None and clock.follows_fit is False
    assert (random.random(), np.random.rand(), keras.random.uniform(()).numpy()) == expected
