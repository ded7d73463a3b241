"""Units of hyperstep.backends.updates: the form each backend hands Keras's optimizer code
(``keras_number``), ``keras_base_name``, ``in_dtype``, ``scalar_tensor`` and ``after``."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from hyperstep.backends.fast_paths import native_variable
from hyperstep.backends.optimizer_classes import keras_base_name
from hyperstep.backends.updates import (
    after,
    in_dtype,
    keras_number,
    scalar_tensor,
    trains_statelessly,
)

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


def _number(name: str, cls: type, value: float, static: float | None):
    return keras_number(
        name,
        cls,
        lambda: ops.convert_to_tensor(value, "float32"),
        lambda: ops.convert_to_tensor(value, "float64"),
        static,
    )


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_constant_rounds_once_to_the_dtype_it_meets(dtype: str) -> None:
    beta = _number("beta_2", keras.optimizers.Adam, 0.999, 0.999)
    assert scalar_tensor(beta) is not None
    got = ops.convert_to_numpy(in_dtype(beta, dtype))
    if keras.backend.backend() == "jax":  # the float32 value, rounded again
        expected = np.asarray(np.float32(0.999), dtype)
    else:  # the float64 constant, rounded once
        expected = np.asarray(0.999, dtype)
    assert got.dtype == np.dtype(dtype) and got == expected


def test_python_checks_see_the_static_number() -> None:
    momentum = _number("momentum", keras.optimizers.SGD, 0.0, 0.0)
    if keras.backend.backend() == "torch":  # eager on the CPU: torch reads tensors
        assert float(ops.convert_to_numpy(momentum)) == 0.0
    else:
        assert not bool(momentum != 0)
        assert bool(_number("momentum", keras.optimizers.SGD, 0.5, None) != 0)  # a schedule


def test_the_learning_rate_is_the_float32_value() -> None:
    rate = keras_number(
        "learning_rate",
        keras.optimizers.Adam,
        lambda: ops.convert_to_tensor(0.1, "float32"),
        None,
        None,
    )
    tensor = ops.convert_to_numpy(scalar_tensor(rate))
    assert tensor.dtype == np.float32 and tensor == np.float32(0.1)


def test_in_dtype_of_python_numbers_and_tensors() -> None:
    assert ops.convert_to_numpy(in_dtype(0.1, "float16")) == np.float16(0.1)
    x = ops.convert_to_tensor(np.float32(0.1))
    assert ops.convert_to_numpy(in_dtype(x, "float16")) == np.float16(np.float32(0.1))


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
