"""Units of hyperstep.backends.tensorflow that stay whatever moves around them: ``ExactScalar``
(a Python float's semantics for a float64 tensor), ``KerasRate`` (the learning rate as
Keras's variable), ``adam_pass`` against its closed form and ``under_xla``."""

from __future__ import annotations

import math

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from hyperstep.backends.tensorflow import ExactScalar, KerasRate, adam_pass, under_xla


def test_exact_scalar_rounds_once_to_the_dtype_it_meets() -> None:
    beta = ExactScalar(tf.constant(0.999, tf.float64), static=0.999)
    assert isinstance(beta, float) and beta.dtype is float and float(beta) == 0.999
    half = tf.ones((2,), tf.float16)
    got = ops.multiply(half, beta)
    assert got.dtype == "float16"
    np.testing.assert_array_equal(got.numpy(), np.full(2, np.float16(0.999)))
    assert tf.convert_to_tensor(beta, tf.float32).numpy() == np.float32(0.999)


def test_exact_scalar_comparisons_use_static() -> None:
    assert ExactScalar(tf.constant(0.5, tf.float64), static=0.0) == 0  # its static number
    schedule = ExactScalar(tf.constant(0.0, tf.float64), static=None)  # +inf
    assert schedule > 0 and bool(schedule)


def test_exact_scalar_in_a_graph_is_nan_as_a_float() -> None:
    found = {}

    @tf.function
    def step(x):
        scalar = ExactScalar(x, static=0.9)
        found["float"] = float.__float__(scalar)
        return tf.convert_to_tensor(scalar, tf.float32)

    assert step(tf.constant(0.9, tf.float64)).numpy() == np.float32(0.9)
    assert math.isnan(found["float"])


def test_keras_rate_converts_as_the_variable() -> None:
    rate = KerasRate(tf.constant(0.1, tf.float32))
    assert rate.dtype == tf.float32 and rate.shape == ()
    assert tf.convert_to_tensor(rate) is rate.tensor
    assert tf.convert_to_tensor(rate, tf.float64).dtype == tf.float64
    variable = keras.Variable(0.1)
    update = tf.ones((2,), tf.float16)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(rate * update), ops.convert_to_numpy(variable * update)
    )


def test_adam_pass_is_its_closed_form() -> None:
    variable = keras.Variable(np.array([1.0, -2.0], "float32"))
    scratch = keras.Variable(np.zeros(2, "float32"))
    velocity = keras.Variable(np.array([0.5, 0.25], "float32"))
    g = np.array([0.3, -0.4], "float32")
    lr, beta_2, eps = np.float32(0.1), np.float32(0.9), np.float32(1e-7)
    assert adam_pass(
        variable, scratch, velocity, tf.constant(g), learning_rate=lr, beta_2=beta_2, epsilon=eps
    )
    v = np.array([0.5, 0.25], "float32")
    v = v + (g * g - v) * (1 - beta_2)
    expected = np.array([1.0, -2.0], "float32") - lr * g / (np.sqrt(v) + eps)
    np.testing.assert_allclose(velocity.numpy(), v, rtol=1e-6)
    np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-6)
    sparse = tf.IndexedSlices(tf.constant([[1.0]]), tf.constant([0]))
    assert not adam_pass(
        variable, scratch, velocity, sparse, learning_rate=lr, beta_2=beta_2, epsilon=eps
    )


def test_under_xla() -> None:
    assert not under_xla()
    found = {}

    @tf.function(jit_compile=True)
    def step(x):
        found["xla"] = under_xla()
        return x

    step(tf.constant(1.0))
    assert found["xla"]
