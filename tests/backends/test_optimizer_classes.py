"""Units of :mod:`hyperstep.backends.optimizer_classes`, in every backend's pass: the class
Keras instantiates for an optimizer class, and the name of its ``keras.optimizers`` base,
checked against what Keras itself makes."""

from __future__ import annotations

import keras
import pytest

from hyperstep.backends.optimizer_classes import keras_base_name, optimizer_class

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

#: the classes Keras's torch backend maps to its own subclasses (its ``OPTIMIZERS`` table)
BUILT_IN = ("Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "Lion", "Nadam", "RMSprop", "SGD")
#: built-in classes with no torch subclass
OTHERS = ("Adafactor", "Ftrl", "LossScaleOptimizer")


class MySGD(keras.optimizers.SGD):
    """A user's subclass of a built-in optimizer."""


class FromScratch(keras.optimizers.Optimizer):
    """A user's optimizer on Keras's base class."""


@pytest.mark.parametrize("name", (*BUILT_IN, "Adafactor", "Ftrl"))
def test_optimizer_class_is_the_class_of_what_keras_instantiates(name: str) -> None:
    cls = getattr(keras.optimizers, name)
    assert optimizer_class(cls) is type(cls())


def test_a_user_subclass_gets_the_class_keras_instantiates_for_it() -> None:
    assert optimizer_class(MySGD) is type(MySGD())
    assert issubclass(optimizer_class(MySGD), MySGD)


@pytest.mark.parametrize("name", BUILT_IN)
def test_only_torch_maps_a_built_in_class_to_a_subclass(name: str) -> None:
    cls = getattr(keras.optimizers, name)
    found = optimizer_class(cls)
    if keras.backend.backend() == "torch":
        assert found is not cls and issubclass(found, cls)
        assert hasattr(found, "_parallel_update_step")  # what Keras's torch classes add
    else:
        assert found is cls


@pytest.mark.parametrize("name", (*BUILT_IN, *OTHERS))
def test_keras_base_name_of_a_built_in_class_and_its_backend_class_is_its_name(
    name: str,
) -> None:
    cls = getattr(keras.optimizers, name)
    assert keras_base_name(cls) == name
    if name != "LossScaleOptimizer":  # wraps an inner optimizer: not built bare
        assert keras_base_name(optimizer_class(cls)) == name


def test_keras_base_name_is_the_nearest_keras_base() -> None:
    assert issubclass(keras.optimizers.AdamW, keras.optimizers.Adam)  # so nearest matters
    assert keras_base_name(keras.optimizers.AdamW) == "AdamW"
    assert keras_base_name(MySGD) == "SGD"
    assert keras_base_name(FromScratch) == "Optimizer"


def test_keras_base_name_is_none_for_a_class_outside_keras_optimizers() -> None:
    assert keras_base_name(int) is None
    assert keras_base_name(keras.layers.Dense) is None
