"""Units of hyperstep.backends.scopes: where a value is being computed (a stateless scope, a
symbolic build, a graph or a jit trace), in each backend's pass."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from hyperstep.backends.scopes import (
    building_model,
    builds_graph,
    compiling,
    concrete,
    current_backend,
    graph_key_function,
    in_stateless_scope,
    unmapped_in_jit,
    xla_computes,
)

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")


def test_current_backend_is_the_pass() -> None:
    import os

    assert current_backend() == os.environ["KERAS_BACKEND"] == keras.backend.backend()


def test_in_stateless_scope_and_concrete() -> None:
    assert not in_stateless_scope()
    assert concrete(3) and concrete(ops.convert_to_tensor(1.0))
    with keras.StatelessScope():
        assert in_stateless_scope()
        assert not concrete(1.0)


def test_building_model_is_true_only_in_symbolic_shape_inference() -> None:
    seen: list[bool] = []

    class Probe(keras.layers.Layer):
        def call(self, x):
            seen.append(building_model())
            return x

    model = keras.Sequential([keras.Input((2,)), Probe()])  # built symbolically
    assert seen and all(seen)
    seen.clear()
    model(np.ones((1, 2), "float32"))
    assert seen == [False]
    assert not building_model()


def test_eager_code_is_not_compiling_nor_a_graph() -> None:
    assert not compiling()
    assert not builds_graph()
    assert xla_computes() == (keras.backend.backend() == "jax")  # JAX's eager ops are XLA's
    assert unmapped_in_jit([keras.Variable(1.0, trainable=False)]) == []


@pytest.mark.backend("tensorflow")
def test_tensorflow_graphs() -> None:
    import tensorflow as tf

    assert graph_key_function()() is tf.compat.v1.get_default_graph()
    found = {}

    @tf.function
    def traced(x):
        found["key"] = graph_key_function()()
        found["graph"], found["concrete"] = builds_graph(), concrete(x)
        return x

    traced(tf.constant(1.0))
    assert found["key"] is not graph_key_function()()  # the function's graph
    assert found["graph"] and not found["concrete"]
    seen = {}
    for jit_compile in (False, True):  # a graph is not XLA; jit_compile=True is
        tf.function(
            lambda x, j=jit_compile: seen.setdefault(j, xla_computes()) and x,
            jit_compile=jit_compile,
        )(tf.constant(1.0))
    assert seen == {False: False, True: True}


@pytest.mark.backend("jax")
def test_jax_jit_reports_the_unmapped_variables() -> None:
    import jax

    mapped, unmapped = keras.Variable(1.0, trainable=False), keras.Variable(2.0, trainable=False)
    found = {}

    def step(value):
        with keras.StatelessScope(state_mapping=[(mapped, value)]):
            found["unmapped"] = unmapped_in_jit([mapped, unmapped])
            found["concrete"] = concrete(value)
        found["xla"] = xla_computes()
        return value

    jax.jit(step)(np.float32(3.0))
    assert found["unmapped"] == [unmapped] and not found["concrete"] and found["xla"]
    assert graph_key_function()() is None


@pytest.mark.backend("torch")
def test_torch_has_no_graph_key() -> None:
    assert graph_key_function()() is None
