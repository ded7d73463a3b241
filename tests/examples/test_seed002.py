"""Seed 002: a learning rate decayed every 5 epochs, or when validation loss stalls."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def data(seed002):
    return seed002.make_data()


@pytest.fixture(scope="module")
def step_decay(seed002, data):
    return seed002.tf1_step_decay(data)


@pytest.fixture(scope="module")
def plateau(seed002, data):
    return seed002.tf1_plateau(data)


def assert_bitwise_equal(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def test_tf1_step_decay_multiplies_by_0_9_every_5_epochs(seed002, step_decay):
    epochs = np.arange(seed002.EPOCHS)
    # repeated float32 multiplication (the seed's loop) equals float32 0.1 * 0.9 ** k for
    # k <= 5 (checked here); the two drift apart by one ulp from k = 6 on.
    # The power in float64 then rounded (correctly rounded for these k): NumPy's vectorized
    # float32 power is not (on AVX-512 CPUs its SIMD kernel gives 0.6561 for 0.9**4, the
    # correctly rounded value being 0.6560999), so the reference never uses it.
    powers = (np.float64(np.float32(0.9)) ** (epochs // 5)).astype(np.float32)
    closed = np.float32(0.1) * powers
    np.testing.assert_array_equal(step_decay.learning_rates, closed)


def test_tf1_step_decay_matches_keras_exponential_decay_in_fit(seed002, data, step_decay):
    import keras

    schedule = keras.optimizers.schedules.ExponentialDecay(
        0.1, decay_steps=5 * seed002.STEPS_PER_EPOCH, decay_rate=0.9, staircase=True
    )
    result = seed002.keras_fit(data, keras.optimizers.SGD(schedule))
    assert_bitwise_equal(result.learning_rates, step_decay.learning_rates)
    assert_bitwise_equal(result.kernel, step_decay.kernel)
    assert_bitwise_equal(result.bias, step_decay.bias)


def test_tf1_plateau_halves_the_rate_several_times(seed002, plateau):
    rates = plateau.learning_rates
    assert rates[0] == np.float32(0.1)
    ratios = rates[1:] / rates[:-1]
    assert set(np.unique(ratios)) == {np.float32(0.5), np.float32(1.0)}
    assert np.sum(ratios == 0.5) >= 3


def test_tf1_plateau_rule_is_keras_reduce_lr_on_plateau(seed002, data, plateau):
    import keras

    callback = keras.callbacks.ReduceLROnPlateau(
        factor=seed002.PLATEAU_FACTOR, patience=seed002.PLATEAU_PATIENCE, min_delta=0.0, min_lr=0
    )
    result = seed002.keras_fit(
        data, keras.optimizers.SGD(0.1), [callback], epochs=seed002.PLATEAU_EPOCHS
    )
    assert_bitwise_equal(result.learning_rates, plateau.learning_rates)
    assert_bitwise_equal(result.kernel, plateau.kernel)
    assert_bitwise_equal(result.bias, plateau.bias)


def test_hs_expression_decay_matches_tf1_bit_for_bit(seed002, data, step_decay):
    # "0.1 * 0.9 ** floor(epoch / 5)" computes float32 0.1 * 0.9 ** k, which equals the seed's
    # repeated float32 multiplication for every k used here (k <= 5).
    result = seed002.hs_step_decay(data, form="expression")
    assert_bitwise_equal(result.learning_rates, step_decay.learning_rates)
    assert_bitwise_equal(result.kernel, step_decay.kernel)
    assert_bitwise_equal(result.bias, step_decay.bias)


def test_hs_exponential_decay_matches_tf1_to_float32_rounding(seed002, data, step_decay):
    # Not bit for bit, by design of `hs.schedules.exponential`: it computes 0.1 * 0.9 ** k
    # from the Python numbers in float64 and rounds once to float32, while the seed's loop
    # (and Keras's ExponentialDecay) multiply float32(0.1) by float32(0.9) k times, rounding
    # each product. They agree for k = 0 (epochs 0-4) and differ by one or two ulps for
    # k = 1..5 (measured against exact rounding: 1, 1, 1, 1, 2); those learning rates then
    # move the weights by a few float32 roundings.
    result = seed002.hs_step_decay(data, form="schedule")
    first = seed002.DECAY_EPOCHS
    assert_bitwise_equal(result.learning_rates[:first], step_decay.learning_rates[:first])
    np.testing.assert_array_max_ulp(result.learning_rates, step_decay.learning_rates, maxulp=2)
    np.testing.assert_allclose(result.kernel, step_decay.kernel, rtol=1e-6, atol=0)
    np.testing.assert_allclose(result.bias, step_decay.bias, rtol=1e-6, atol=0)


def test_hs_reduce_on_plateau_matches_tf1_bit_for_bit(seed002, data, plateau):
    result = seed002.hs_plateau(data)
    assert_bitwise_equal(result.learning_rates, plateau.learning_rates)
    assert_bitwise_equal(result.kernel, plateau.kernel)
    assert_bitwise_equal(result.bias, plateau.bias)
