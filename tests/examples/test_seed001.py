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


@pytest.fixture(scope="module")
def two_optimizers(seed001, data):
    return seed001.keras_two_optimizers(data)


@pytest.mark.parametrize("how", ["hs_group_fit", "hs_group_tape"])
def test_group_at_10x_matches_two_keras_optimizers_bit_for_bit(seed001, data, two_optimizers, how):
    result = getattr(seed001, how)(data)
    np.testing.assert_array_equal(result.var, two_optimizers.var)
    assert_bitwise_equal(result.weights, two_optimizers.weights)


def test_group_pattern_selects_only_the_custom_variable(seed001, data):
    from hyperstep.optim.groups import assign_groups

    model = seed001.FixedModel(data.kernel)
    model(data.x[:1])
    (group,) = seed001.hs_optimizer().groups.values()
    owners = assign_groups([group], model.trainable_variables)
    chosen = [v for v, g in zip(model.trainable_variables, owners, strict=True) if g is not None]
    assert len(chosen) == 1 and chosen[0] is model.var


def test_group_with_its_own_schedule_matches_keras_exponential_decay(seed001, data):
    import keras

    import hyperstep as hs

    keras_schedule = keras.optimizers.schedules.ExponentialDecay(0.1, 20, 0.5)
    reference = seed001.keras_two_optimizers(data, var_learning_rate=keras_schedule)
    result = seed001.hs_group_fit(data, hs.schedules.exponential(0.1, 0.5, every=20))
    np.testing.assert_array_equal(result.var, reference.var)
    assert_bitwise_equal(result.weights, reference.weights)


def test_doctor_names_the_untracked_variable_and_nothing_on_the_fixed_model(seed001, data):
    report = seed001.diagnose(seed001.SeedModel, data)
    assert [(f.code, f.path.split("/")[-1]) for f in report.findings] == [("untracked", "var")]
    assert "add_weight" in report.findings[0].fix
    assert seed001.diagnose(seed001.FixedModel, data).findings == []
