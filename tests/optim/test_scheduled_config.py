"""The units of hyperstep.optim.scheduled_config: the wrapped optimizer serialized as Keras
serializes an instance, found again as Keras finds a class, and the errors for a config
that names none."""

import keras
import pytest

from hyperstep.errors import InvalidArgumentError
from hyperstep.optim.scheduled_config import inner_config, serialized, wrapped_class

K = keras.optimizers


@keras.saving.register_keras_serializable(package="test_scheduled_config")
class Halved(K.SGD):
    """A registered optimizer class of a user's."""


class Unregistered(K.SGD):
    pass


def test_a_builtin_is_serialized_under_its_public_name_as_keras_does() -> None:
    found = serialized(K.Adam, {"beta_1": 0.8})
    expected = keras.saving.serialize_keras_object(K.Adam(beta_1=0.8))
    assert {k: found[k] for k in ("module", "class_name", "registered_name")} == {
        k: expected[k] for k in ("module", "class_name", "registered_name")
    }
    assert found["config"] == {"beta_1": 0.8}
    # Keras's backend class (e.g. TensorFlow's Adam) is written as the public one
    backend_class = type(K.Adam())
    assert serialized(backend_class, {})["class_name"] == "Adam"


def test_a_registered_class_is_serialized_by_module_and_registered_name() -> None:
    found = serialized(Halved, {})
    assert found["module"] == Halved.__module__ and found["class_name"] == "Halved"
    assert found["registered_name"] == "test_scheduled_config>Halved"


def test_wrapped_class_finds_builtins_registered_and_custom_classes() -> None:
    assert wrapped_class(serialized(K.Adam, {}), None) is K.Adam
    assert wrapped_class(serialized(Halved, {}), None) is Halved
    nested = serialized(Unregistered, {})
    assert wrapped_class(nested, {"Unregistered": Unregistered}) is Unregistered
    with pytest.raises(InvalidArgumentError, match=r"'Unregistered'.*register it.*custom_objects"):
        wrapped_class(nested, None)
    with pytest.raises(InvalidArgumentError, match=r"module, class_name.*optimizer='Adam'"):
        wrapped_class("Adam", None)
    with pytest.raises(InvalidArgumentError, match=r"Cannot find the optimizer class 'Dense'"):
        wrapped_class({"module": "keras.optimizers", "class_name": "Dense"}, None)


def test_inner_config_is_the_nested_dict() -> None:
    assert inner_config({"config": {"beta_1": 0.8}}) == {"beta_1": 0.8}
    assert inner_config({}) == {}
    with pytest.raises(InvalidArgumentError, match=r"must be a dict\. Received: config=\[1\]"):
        inner_config({"config": [1]})
