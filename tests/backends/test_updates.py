"""Units of hyperstep.backends.updates: ``keras_base_name``, ``trains_statelessly`` and
``after`` (the form of a value: test_keras_forms.py)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from hyperstep.backends.fast_paths import native_variable
from hyperstep.backends.keras_forms import keras_base_name
from hyperstep.backends.updates import after, trains_statelessly

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")


def test_keras_base_name_is_the_nearest_keras_optimizer() -> None:
    class Mine(keras.optimizers.AdamW):
        pass

    class Other:
        pass

    assert keras_base_name(keras.optimizers.Adam) == "Adam"
    assert keras_base_name(Mine) == "AdamW"
    assert keras_base_name(Other) is None


def test_trains_statelessly_only_on_jax() -> None:
    assert trains_statelessly() is (keras.backend.backend() == "jax")


def test_after_and_native_variable_eagerly() -> None:
    tensors = [ops.ones((2,)), None]
    assert after([ops.ones(())], tensors) is tensors
    variable = keras.Variable(1.0)
    native = native_variable(variable)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        assert isinstance(native, tf.Variable) and native is variable.value
    else:
        assert native is variable


@pytest.mark.backend("tensorflow")
def test_after_gates_dense_tensors_on_the_scalars_in_a_graph() -> None:
    import tensorflow as tf

    @tf.function
    def step(x, s):
        scalar = s * 2.0
        (gated, sparse) = after([scalar, 1.0], [x + 1.0, None])
        assert sparse is None
        return gated, scalar

    graph = step.get_concrete_function(tf.TensorSpec((2,)), tf.TensorSpec(())).graph
    (identity,) = [op for op in graph.get_operations() if op.type == "IdentityN"]
    assert any(dep.type == "Mul" for dep in identity.control_inputs)
    out, _ = step(tf.ones((2,)), tf.constant(1.0))
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0])
