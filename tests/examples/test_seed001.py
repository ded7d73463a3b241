"""Seed 001: a custom variable trained with the weights; the untracked tf.Variable on Keras 3."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="module")
def data(seed001):
    return seed001.make_data()


def assert_bitwise_equal(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes()


def test_seed_tf_variable_is_untracked_and_not_trained_by_fit(seed001, data):
    model, result = seed001.untracked_fit(data)
    assert not any(v is model.var for v in model.trainable_variables)
    assert not any(v is model.var for v in model.weights)
    np.testing.assert_array_equal(result.var, np.full(seed001.STEPS, seed001.INITIAL_VAR))
    # while the dense layer did train
    assert not np.allclose(result.weights[0], data.kernel)


def test_seed_tf_variable_is_dropped_by_save_weights(seed001, data):
    assert seed001.untracked_save_weights(data) == seed001.INITIAL_VAR  # not the saved 2.0


@pytest.fixture(scope="module")
def fixed_fit(seed001, data):
    return seed001.fixed_fit(data)


def test_add_weight_variable_trains_with_fit(seed001, fixed_fit):
    assert np.all(np.diff(fixed_fit.var) != 0)  # moved at every step
    assert fixed_fit.var[-1] > 1.0  # towards the 1.5x target scale


def test_fit_and_tape_loop_train_the_fixed_model_bit_for_bit(seed001, data, fixed_fit):
    tape = seed001.fixed_tape(data)
    np.testing.assert_array_equal(tape.var, fixed_fit.var)
    assert_bitwise_equal(tape.weights, fixed_fit.weights)


def test_two_optimizers_give_var_its_own_rate(seed001, data, fixed_fit):
    split = seed001.keras_two_optimizers(data)
    # first step: var moved 10x as far as with the shared rate (same gradient at step 0)
    first_shared = fixed_fit.var[0] - seed001.INITIAL_VAR
    first_split = split.var[0] - seed001.INITIAL_VAR
    np.testing.assert_allclose(first_split, 10 * first_shared, rtol=1e-5)
