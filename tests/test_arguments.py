"""Public functions and config fields check their arguments: a hyperstep error naming the
argument and the value received, never an AttributeError or a backend error from deep
inside; unknown config fields are errors."""

from __future__ import annotations

import json

import keras
import pytest

import hyperstep as hs
from hyperstep.errors import HyperstepError, InvalidArgumentError, InvalidTypeError


def sgd_config(**changes):
    config = keras.saving.serialize_keras_object(hs.scheduled(keras.optimizers.SGD()))
    config = json.loads(json.dumps(config))
    config["config"].update(changes)
    return config


@pytest.mark.parametrize(
    ("change", "error", "received"),
    [
        # was: AttributeError: 'Dense' object has no attribute 'claim'
        (
            {"clock": keras.saving.serialize_keras_object(keras.layers.Dense(1))},
            InvalidArgumentError,
            "Received: clock=<Dense",
        ),
        ({"advance": "yes"}, InvalidArgumentError, "Received: advance='yes'"),  # was accepted
        # was ignored silently
        ({"hyperparameters": {"learning_rat": 0.1}}, InvalidArgumentError, "'learning_rat'"),
        ({"groups": 5}, InvalidArgumentError, "Received: groups=5"),
    ],
    ids=["clock-is-a-layer", "advance-yes", "unknown-hyperparameter", "groups-int"],
)
def test_bad_optimizer_config_fields_are_named(change, error, received):
    with pytest.raises(error, match=received):
        keras.saving.deserialize_keras_object(sgd_config(**change))


def test_scheduled_groups_must_be_a_list():
    # was: TypeError: 'int' object is not iterable
    with pytest.raises(InvalidTypeError, match="Received: groups=5"):
        hs.scheduled(keras.optimizers.SGD(), groups=5)


def test_plateau_update_names_a_non_numeric_value():
    # was: TensorFlow's UnimplementedError
    plateau = hs.ReduceOnPlateau(hs.Hyperparameter(0.1), monitor="loss")
    with pytest.raises(InvalidTypeError, match="Received: value='abc'"):
        plateau.update("abc")


@pytest.mark.parametrize("step", ["x", None, True])
def test_hyperparameter_at_and_schedules_name_a_non_numeric_step(step):
    # was: TensorFlow's UnimplementedError
    with pytest.raises(InvalidTypeError, match=f"Received: step={step!r}"):
        hs.Hyperparameter(0.1).at(step)
    with pytest.raises(InvalidTypeError, match=f"Received: step={step!r}"):
        hs.schedules.cosine(1.0, 10)(step)


def test_unknown_schedule_config_fields_are_errors():
    config = json.loads(
        json.dumps(keras.saving.serialize_keras_object(hs.schedules.cosine(1.0, 10)))
    )
    config["config"]["stepz"] = 3
    with pytest.raises(InvalidArgumentError, match=r"unknown fields \['stepz'\]"):
        keras.saving.deserialize_keras_object(config)


def test_every_error_here_is_a_hyperstep_error():
    assert issubclass(InvalidTypeError, HyperstepError) and issubclass(InvalidTypeError, TypeError)
    assert issubclass(InvalidArgumentError, ValueError)
