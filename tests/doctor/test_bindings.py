"""The units of hyperstep.diagnosis.bindings (TensorFlow's pass: raw ``tf.Variable`` and
``tf.Module``; torch's: a ``torch.nn.Parameter``): every variable reachable from a layer's
attributes, named ``<layer.path>/<attribute>``, where it was found, and the dtype helpers."""

import types

import keras
import numpy as np
import pytest
import tensorflow as tf

from hyperstep.diagnosis import bindings as b


class Holder(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.scale = self.add_weight(shape=(), initializer="ones", name="scale")
        self.raw = tf.Variable(2.0)
        self.box = tf.Module()
        self.box.inner = tf.Variable(3.0)
        self.spaces = types.SimpleNamespace(offset=keras.Variable(4.0))
        self.named = {"a": keras.Variable(np.zeros(2, "float32"))}
        self.pair = (keras.Variable(1.0), 7)
        self.count = keras.Variable(0, dtype="int32", trainable=False)

    def call(self, x):
        return x * self.scale


def test_every_variable_is_found_with_its_path_and_container() -> None:
    model = keras.Sequential([keras.Input((1,)), Holder(name="holder")], name="m")
    found = {binding.path: binding for binding in b.bindings(model)}
    expected = {
        "m/holder/scale": "attribute",
        "m/holder/raw": "attribute",
        "m/holder/box/inner": "module",
        "m/holder/spaces/offset": "module",
        "m/holder/named/a": "dict",
        "m/holder/pair/0": "list",
        "m/holder/count": "attribute",
    }
    assert {path: binding.container for path, binding in found.items()} == expected
    layer = model.layers[0]
    assert found["m/holder/raw"].variable is layer.raw and found["m/holder/raw"].owner is layer
    assert found["m/holder/box/inner"].attribute == "box/inner"
    assert b.describe_owner(found["m/holder/raw"]) == "Holder `m/holder`"


def test_put_holds_a_value_where_the_variable_was_found() -> None:
    layer = Holder(name="holder")
    found = {binding.path: binding for binding in b.bindings(layer)}
    found["holder/raw"].put("traced")
    found["holder/named/a"].put("in the dict")
    found["holder/box/inner"].put("in the module")
    assert layer.raw == "traced" and layer.named["a"] == "in the dict"
    assert layer.box.inner == "in the module"


def test_dtype_helpers_and_identity() -> None:
    v = keras.Variable(np.ones(2, "float32"))
    assert b.dtype_name(v) == "float32" and b.is_float(v)
    assert b.dtype_name(keras.Variable(1, dtype="int32")) == "int32"
    assert not b.is_float(keras.Variable(1, dtype="int32"))
    assert b.is_float(tf.Variable(np.float16(1.0)))
    assert isinstance(b.underlying(v), tf.Variable)  # TensorFlow: the tf.Variable behind it
    assert b.underlying(v) is b.underlying(v)
    assert b.key(v) == b.key(v) and b.key(v) != b.key(keras.Variable(1.0))


def test_layers_of_and_keras_classes() -> None:
    dense = keras.layers.Dense(1, name="d")
    model = keras.Sequential([keras.Input((2,)), dense], name="seq")
    found = b.layers_of(model)
    assert found[0] is model and found[-1] is dense and len(found) == 3  # and the InputLayer
    assert b.layer_path(dense) == "seq/d" and b.layers_of(dense) == [dense]
    assert b.is_keras_class(dense) and not b.is_keras_class(Holder())


@pytest.mark.backend("torch")
def test_a_torch_parameter_on_a_layer_is_found_in_its_parameters() -> None:
    import torch

    class Raw(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.scale = torch.nn.Parameter(torch.ones(2))

    layer = Raw(name="raw")
    found = {binding.path: binding for binding in b.bindings(layer)}
    assert found["raw/scale"].variable is layer.scale
    assert found["raw/scale"].container == "attribute" and b.is_float(layer.scale)
    assert b.underlying(layer.scale) is layer.scale  # torch: the Parameter itself
