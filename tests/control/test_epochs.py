"""Units of hyperstep.control.epochs: ``fit_began``, ``epoch_began`` and ``FollowEpochs``,
called directly (no ``fit``)."""

from __future__ import annotations

import warnings

import keras
import pytest

import hyperstep as hs
from hyperstep.control.epochs import FollowEpochs, epoch_began, fit_began
from hyperstep.errors import InvalidTypeError


class _Reads(keras.layers.Layer):
    def __init__(self, hp: hs.Hyperparameter) -> None:
        super().__init__()
        self.hp = hp

    def call(self, x):
        return x * self.hp.value


def _model(hp: hs.Hyperparameter | None = None, optimizer=None) -> keras.Model:
    layers = [keras.Input((1,)), keras.layers.Dense(1)]
    if hp is not None:
        layers.append(_Reads(hp))
    model = keras.Sequential(layers)
    model.compile(optimizer or hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1), "mse")
    return model


def test_fit_began_gives_every_clock_fit_epoch_length() -> None:
    model = _model()
    extra = hs.Clock(steps_per_epoch=9)
    fit_began(model, {"steps": 5}, [extra])
    clock = model.optimizer.clock
    assert clock.steps_per_epoch == 5 and int(clock.epoch_length.numpy()) == 5
    assert clock.follows_fit
    assert extra.steps_per_epoch == 9  # kept: it had one
    assert int(extra.epoch_length.numpy()) == 5 and extra.follows_fit
    fit_began(model, {"steps": 3})  # a later fit's length, steps_per_epoch kept
    assert clock.steps_per_epoch == 5 and int(clock.epoch_length.numpy()) == 3


@pytest.mark.parametrize("params", [None, {}, {"steps": None}, {"steps": True}, {"steps": 0}])
def test_fit_began_without_a_known_length_sets_none(params) -> None:
    model = _model()
    fit_began(model, params)
    assert model.optimizer.clock.steps_per_epoch is None
    assert model.optimizer.clock.follows_fit


def test_fit_began_moves_a_clockless_hyperparameter_onto_the_optimizer_clock() -> None:
    hp = hs.Hyperparameter("1 - step / 10", name="gate")
    model = _model(hp)
    assert hp.clock is not model.optimizer.clock
    fit_began(model, {"steps": 2})
    assert hp.clock is model.optimizer.clock


def test_fit_began_warns_of_a_moving_hyperparameter_no_optimizer_advances() -> None:
    hp = hs.Hyperparameter("1 - step / 10", name="gate")
    model = _model(hp, optimizer=keras.optimizers.SGD())
    with pytest.warns(UserWarning, match=r"'gate' is read in the model.*SGD"):
        fit_began(model, {"steps": 2})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit_began(model, {"steps": 2})  # said once


def test_epoch_began_starts_the_epoch_at_the_current_step() -> None:
    model = _model()
    extra = hs.Clock()
    clock = model.optimizer.clock
    clock.step.assign(12)
    epoch_began(model, 3, [extra])
    assert int(clock.epoch_index.numpy()) == 3 and int(clock.epoch_start.numpy()) == 12
    assert int(extra.epoch_index.numpy()) == 3 and int(extra.epoch_start.numpy()) == 0


def test_follow_epochs_takes_a_clock_a_list_or_none() -> None:
    a, b = hs.Clock(), hs.Clock()
    assert FollowEpochs(a).clocks == [a]
    assert FollowEpochs([a, b]).clocks == [a, b]
    assert FollowEpochs().clocks == []
    assert repr(FollowEpochs([a])) == f"FollowEpochs([{a!r}])"


@pytest.mark.parametrize("bad", ["clock", 3, [hs.Clock(), "x"]])
def test_follow_epochs_refuses_anything_else(bad) -> None:
    with pytest.raises(InvalidTypeError, match=r"`FollowEpochs\(clocks=...\)`.*Received: clocks="):
        FollowEpochs(bad)


def test_follow_epochs_callbacks_drive_its_clocks() -> None:
    clock = hs.Clock()
    callback = FollowEpochs(clock)
    callback.set_model(_model())
    callback.set_params({"steps": 4})
    callback.on_train_begin()
    assert clock.steps_per_epoch == 4 and clock.follows_fit
    clock.step.assign(8)
    callback.on_epoch_begin(2)
    assert int(clock.epoch_index.numpy()) == 2 and int(clock.epoch_start.numpy()) == 8
