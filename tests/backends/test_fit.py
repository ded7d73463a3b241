"""Units of hyperstep.backends.fit: handlers every ``CallbackList`` calls first, the wrapped
train step, ``write_through``/``held_state`` off JAX and ``layers_of``."""

from __future__ import annotations

import copy

import keras
import numpy as np
import pytest

from hyperstep.backends import fit
from hyperstep.backends.fit import (
    follow_epoch_ends,
    follow_fit,
    held_state,
    layers_of,
    readable_in_fit,
    write_through,
)


@pytest.fixture
def calls():
    seen: list = []

    def began(model, params):
        seen.append(("train", model, params))

    def epoch(model, index):
        seen.append(("epoch", model, index))

    follow_fit(began, epoch)
    follow_fit(began, epoch)  # registered once
    assert fit._HANDLERS.count((began, epoch)) == 1
    yield seen
    fit._HANDLERS.remove((began, epoch))


def _model() -> keras.Model:
    return keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])


def test_a_callback_list_calls_the_handlers_before_the_callbacks(calls) -> None:
    order: list = []

    class Probe(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            order.append(len(calls))

        def on_epoch_begin(self, epoch, logs=None):
            order.append(len(calls))

    model = _model()
    callbacks = keras.callbacks.CallbackList([Probe()], model=model, steps=3)
    callbacks.on_train_begin()
    callbacks.on_epoch_begin(4)
    assert [c[0] for c in calls] == ["train", "epoch"]
    assert calls[0][1] is model and calls[0][2]["steps"] == 3
    assert calls[1][1:] == (model, 4)
    assert order == [1, 2]  # each handler ran before the callback


@pytest.fixture
def epoch_ends():
    seen: list = []
    rates: dict = {}

    def end(model, epoch, logs, callbacks):
        seen.append((model, epoch, dict(logs), callbacks))
        logs["noted"] = 1.0

    follow_epoch_ends(end, rates.get)
    follow_epoch_ends(end, rates.get)  # registered once
    assert fit._EPOCH_ENDS.count((end, rates.get)) == 1
    yield seen, rates
    fit._EPOCH_ENDS.remove((end, rates.get))


def test_a_callback_list_calls_the_epoch_end_handlers_before_the_callbacks(epoch_ends) -> None:
    seen, _ = epoch_ends
    logged: list = []

    class Probe(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logged.append(dict(logs))

    model, probe = _model(), Probe()
    callbacks = keras.callbacks.CallbackList([probe], model=model)
    callbacks.on_epoch_end(2, {"loss": 0.5})
    assert seen[0][:3] == (model, 2, {"loss": 0.5}) and probe in seen[0][3]
    assert logged == [{"loss": 0.5, "noted": 1.0}]  # what the handler wrote, the callback read


def test_tensorboard_logs_the_learning_rate_the_handlers_give(epoch_ends, tmp_path) -> None:
    _, rates = epoch_ends
    model = _model()
    model.compile(keras.optimizers.SGD(learning_rate=0.25), "mse")
    board = keras.callbacks.TensorBoard(str(tmp_path))
    board.set_model(model)
    assert board._collect_learning_rate({}) == {"learning_rate": 0.25}  # no value given
    rates[model.optimizer] = 0.5
    assert board._collect_learning_rate({}) == {"learning_rate": 0.5}


def test_write_through_and_held_state_off_jax() -> None:
    variable = keras.Variable(1.0)
    write_through(variable, 4.0)
    assert float(variable.numpy()) == 4.0
    assert held_state([variable]) is None
    readable_in_fit([variable])  # nothing to do where no fit purges a variable
    assert variable._initializer is None


def test_layers_of_is_the_model_and_every_nested_layer() -> None:
    inner = keras.Sequential([keras.Input((2,)), keras.layers.Dense(2, name="a")], name="inner")
    outer = keras.Sequential([keras.Input((2,)), inner, keras.layers.Dense(1, name="b")])
    found = layers_of(outer)
    assert found[0] is outer
    for layer in (inner, inner.get_layer("a"), outer.get_layer("b")):
        assert sum(x is layer for x in found) == 1, layer.name
    dense = [x.name for x in found if isinstance(x, keras.layers.Dense)]
    assert sorted(dense) == ["a", "b"]


def test_the_train_step_is_wrapped_and_a_copy_gets_its_own() -> None:
    import hyperstep.iteration  # registers its wrap at import

    assert fit._TRAIN_STEP_WRAPS == [hyperstep.iteration.fit_iteration]
    model = _model()
    model.compile("sgd", "mse")
    model.fit(np.ones((2, 1)), np.ones((2, 1)), verbose=0)
    step = model.__dict__["train_step"]
    assert isinstance(step, fit._TrainStep) and step.model is model
    clone = copy.deepcopy(step)
    assert clone.model is not model and isinstance(clone.model, keras.Model)
