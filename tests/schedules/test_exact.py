"""The units of hyperstep.schedules.exact: the float32 rounding helpers and the exact float64
operations, against NumPy."""

import warnings

import keras
import numpy as np
import pytest
from keras import ops

from hyperstep.schedules import exact as c


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


def test_exact_floor_and_ceil_match_numpy_in_float64_next_to_integers() -> None:
    x = np.array([2.9999999999, 3.0, 3.0000000001, -0.5, -2.0000000001, 0.0, 1e15 + 0.5])
    tensor = ops.convert_to_tensor(x, dtype="float64")
    floor, ceil = _np(c.exact_floor(tensor)), _np(c.exact_ceil(tensor))
    assert floor.dtype == np.float64 and np.array_equal(floor, np.floor(x))
    assert np.array_equal(ceil, np.ceil(x))


def test_exact_minimum_and_maximum_keep_float64() -> None:
    a = ops.convert_to_tensor([1.0 + 2**-40, 3.0], dtype="float64")
    low, high = _np(c.exact_minimum(a, 2.0)), _np(c.exact_maximum(a, 2.0))
    assert low.dtype == np.float64 and low.tolist() == [1.0 + 2**-40, 2.0]
    assert high.tolist() == [2.0, 3.0]


def test_power_of_is_the_float64_power_of_the_exact_base() -> None:
    p = np.array([0.0, 1.0, 10.0, 1000.0, 12345.5])
    with c.float64_scope():  # as the words call it (JAX without x64 too)
        got = _np(c.power_of(0.9, ops.convert_to_tensor(p, dtype="float64")))
    np.testing.assert_allclose(got, 0.9**p, rtol=1e-14)


def test_cosine_weight_is_half_one_plus_cos_of_pi_times_one_minus_left() -> None:
    left = np.linspace(0.0, 1.0, 11)
    got = _np(c.cosine_weight(ops.convert_to_tensor(left, dtype="float64")))
    np.testing.assert_allclose(got, (1 + np.cos(np.pi * (1 - left))) / 2, atol=1e-15)


def test_rounded_once_computes_in_float64_and_rounds_to_float32_once() -> None:
    class Third:
        @c.rounded_once()
        def value(self, step):
            return step / 3.0

    got = _np(Third().value(ops.convert_to_tensor([1, 2, 10], dtype="int32")))
    assert got.dtype == np.float32
    assert got.tolist() == [float(np.float32(k / 3.0)) for k in (1, 2, 10)]


def test_as_float32_and_widened_dtypes() -> None:
    assert _np(c.as_float32(0.1)).dtype == np.float32
    assert _np(c.widened(0.1)).item() == 0.1  # float64: the exact Python float


def test_sine_where_xla_compiles_rounds_to_the_float32_of_the_float64_sine() -> None:
    # the polynomial XLA compiles (keras.ops elsewhere) against NumPy's float64 sine: within a
    # few float64 ulps, so both round to the same float32 but within 2**-29 of a tie
    import tensorflow as tf  # the TensorFlow pass: XLA from tf.function(jit_compile=True)

    x = np.linspace(0.0, np.pi / 2, 20_001)
    got = tf.function(c.sine, jit_compile=True)(tf.constant(x, tf.float64)).numpy()
    assert np.max(np.abs(got - np.sin(x))) <= 4 * np.spacing(1.0)
    assert np.array_equal(got.astype(np.float32), np.sin(x).astype(np.float32))
    weight = tf.function(c.cosine_weight, jit_compile=True)  # any left: period 2, even
    left = np.array([-3.25, -2.0, -0.5, 0.0, 0.3, 1.0, 1.5, 2.0, 2.75, 1e6 + 0.25])
    expected = np.sin(np.pi / 2 * left) ** 2
    np.testing.assert_allclose(weight(tf.constant(left, tf.float64)).numpy(), expected, atol=1e-15)


def test_sine_words_compiled_by_xla_give_the_eager_float32_bits() -> None:
    # the words whose sine XLA computes as a polynomial give the bits of their eager values
    # (the read paths' one value per step; TensorFlow's step is a graph, not XLA)
    import tensorflow as tf  # the TensorFlow pass: XLA from tf.function(jit_compile=True)

    from hyperstep import parse

    steps = tf.range(0, 12_000, dtype=tf.int32)
    for text in (
        "cosine(0.001, steps=9000)",
        "one_cycle(0.1, steps=10000)",
        "cosine_restarts(0.1, steps=100, t_mul=2.0)",
        "wsd(0.1, 1000, 5000, 4000, warmup_type='cosine')",
        "cooldown(0.1, start=3000, steps=5000, shape='cosine')",
    ):
        schedule = parse(text)
        compiled = tf.function(schedule, jit_compile=True)(steps).numpy()
        eager = schedule(steps).numpy()
        assert compiled.dtype == np.float32
        assert np.array_equal(compiled.view(np.uint32), eager.view(np.uint32)), text


@pytest.mark.backend("tensorflow", "jax", "torch")
def test_in_float64_gives_numpy_s_float32_quotient_and_product_where_compilers_rewrite() -> None:
    # A compiled step rewrites a division by a constant as a multiply by its reciprocal
    # (Grappler, XLA, Inductor); in float64 that still rounds to the correctly rounded float32
    # quotient, which NumPy's float32 division gives on any CPU. Random float32 operands
    # (quotients in float32's normal range), divisors constant in the compiled function.
    rng = np.random.default_rng(46)
    x = (rng.random(200_000) * 2.0 ** rng.integers(-20, 40, 200_000)).astype(np.float32)
    divisors = [3.0, 10.0, 100.0, 123.7, 1000.0, 0.1 * 1237, 98765.0, 1e-3]
    divisors += (rng.random(5) * 1e4).astype(np.float32).tolist()
    for divisor in divisors:
        d = np.float32(divisor)
        quotient = _compiled(lambda v, d=d: c.in_float64(ops.divide, v, ops.convert_to_tensor(d)))
        product = _compiled(lambda v, d=d: c.in_float64(ops.multiply, v, ops.convert_to_tensor(d)))
        assert np.array_equal(_np(quotient(x)).view(np.uint32), (x / d).view(np.uint32)), divisor
        assert np.array_equal(_np(product(x)).view(np.uint32), (x * d).view(np.uint32)), divisor
    y = (rng.random(200_000) * 2.0 ** rng.integers(-10, 20, 200_000)).astype(np.float32)
    both = _compiled(lambda v, w: c.in_float64(ops.divide, v, w))  # neither a constant
    assert np.array_equal(_np(both(x, y)).view(np.uint32), (x / y).view(np.uint32))


def _compiled(function):
    """``function`` compiled as this backend's train step is: ``tf.function``, ``jax.jit``,
    ``torch.compile``."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(function)
    if backend == "jax":
        import jax

        return jax.jit(function)
    import torch

    def call(*arrays):
        with warnings.catch_warnings():  # torch.compile's own import of a deprecated name
            warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
            return torch.compile(function)(*(ops.convert_to_tensor(a) for a in arrays))

    return call
