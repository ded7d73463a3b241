"""Tests for hs.Hyperparameter: value rule, overrides, epochs, state, tracing and saving."""

import json
import math

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs
from hyperstep.schedules.expressions import Epoch, Function, Step

STEPS = np.array([0, 1, 9, 10, 11, 99, 100, 1000])


def _decay():
    return 0.1 * 0.5 ** (Step() / 10)


def _closed_form(steps):  # independent of hyperstep: 0.1 * 0.5 ** (step / 10)
    return (0.1 * 0.5 ** (np.asarray(steps, "float64") / 10)).astype("float32")


def test_value_is_schedule_at_the_clock_step_times_scale():
    clock = hs.Clock()
    hp = hs.Hyperparameter(_decay(), clock=clock)
    for step in [0, 10, 37]:
        clock.step.assign(step)
        np.testing.assert_allclose(float(hp.value), _closed_form(step), rtol=1e-6)
    hp.scale.assign(0.25)
    np.testing.assert_allclose(float(hp.value), 0.25 * _closed_form(37), rtol=1e-6)


def test_at_evaluates_any_steps_without_touching_state():
    hp = hs.Hyperparameter(_decay())
    hp.scale.assign(2.0)
    np.testing.assert_allclose(hp.at(STEPS), 2.0 * _closed_form(STEPS), rtol=1e-6)
    assert int(hp.clock.step) == 0


def test_override_wins_until_cleared():
    hp = hs.Hyperparameter(_decay())
    hp.set(0.7)
    assert bool(hp.is_set)
    np.testing.assert_allclose(hp.at(STEPS), np.full(len(STEPS), 0.7, "float32"))
    hp.clear()
    assert not bool(hp.is_set)
    np.testing.assert_allclose(hp.at(STEPS), _closed_form(STEPS), rtol=1e-6)


@pytest.mark.parametrize(
    "value",
    [
        0.05,
        "0.1 * 0.5 ** (step / 10)",
        keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5),
    ],
    ids=["number", "expression", "keras-schedule"],
)
def test_accepts_numbers_expressions_and_keras_schedules(value):
    hp = hs.Hyperparameter(value)
    if isinstance(value, float):
        expected = np.full(len(STEPS), value, "float32")
    elif isinstance(value, str):
        expected = _closed_form(STEPS)
    else:
        expected = np.array([float(value(s)) for s in STEPS], "float32")
    np.testing.assert_allclose(hp.at(STEPS), expected, rtol=1e-6)


def test_read_returns_python_floats_with_nan_override_when_unset():
    clock = hs.Clock()
    hp = hs.Hyperparameter(_decay(), clock=clock)
    clock.step.assign(10)
    hp.scale.assign(0.5)
    read = hp.read()
    assert set(read) == {"value", "schedule", "scale", "override"}
    assert all(isinstance(v, float) for v in read.values())
    np.testing.assert_allclose(read["schedule"], 0.05, rtol=1e-6)
    np.testing.assert_allclose(read["value"], 0.025, rtol=1e-6)
    assert read["scale"] == 0.5 and math.isnan(read["override"])
    hp.set(3.0)
    assert hp.read()["override"] == 3.0 and hp.read()["value"] == 3.0


def test_epoch_schedules_bind_to_the_clock_steps_per_epoch():
    clock = hs.Clock(steps_per_epoch=10)
    hp = hs.Hyperparameter(0.1 * 0.5 ** Epoch(), clock=clock)
    expected = 0.1 * 0.5 ** np.floor_divide(STEPS, 10)
    np.testing.assert_allclose(hp.at(STEPS), expected.astype("float32"), rtol=1e-6)


def test_epoch_schedules_bind_when_steps_per_epoch_is_set_later():
    clock = hs.Clock()
    hp = hs.Hyperparameter("0.1 * 0.5 ** epoch", clock=clock)
    with pytest.raises(ValueError, match="steps_per_epoch"):
        hp.at(5)
    clock.steps_per_epoch = 4
    np.testing.assert_allclose(float(hp.at(9)), 0.025, rtol=1e-6)


def test_value_inside_tf_function_follows_every_change_without_retracing():
    clock = hs.Clock()
    hp = hs.Hyperparameter(_decay(), clock=clock)

    @tf.function
    def read_and_advance():
        value = hp.value
        clock.advance()
        return value

    seen = []
    for step in range(30):
        if step == 10:
            hp.scale.assign(0.5)
        if step == 20:
            hp.set(0.3)
        if step == 25:
            hp.clear()
        seen.append(float(read_and_advance()))
    expected = _closed_form(np.arange(30)) * np.where(np.arange(30) >= 10, 0.5, 1.0)
    expected[20:25] = 0.3
    np.testing.assert_allclose(seen, expected.astype("float32"), rtol=1e-6)
    assert read_and_advance.experimental_get_tracing_count() == 1


def test_add_state_creates_a_saved_non_trainable_variable_and_rejects_duplicates():
    hp = hs.Hyperparameter(0.1, name="lr")
    best = hp.add_state("plateau_best", math.inf)
    assert not best.trainable and math.isinf(float(best))
    assert hp.variables[-1] is best and hp.state == {"plateau_best": best}
    with pytest.raises(ValueError, match=r"already used.*Received: name='plateau_best'"):
        hp.add_state("plateau_best", 0.0)
    with pytest.raises(ValueError, match=r"Received: name='scale'"):
        hp.add_state("scale", 0.0)


def test_invalid_arguments_name_what_was_received():
    with pytest.raises(TypeError, match=r"Received: clock=3"):
        hs.Hyperparameter(0.1, clock=3)
    with pytest.raises(TypeError, match=r"Received: value=\[1, 2\]"):
        hs.Hyperparameter([1, 2])
    with pytest.raises(ValueError, match=r"finite.*Received: value=nan"):
        hs.Hyperparameter(0.1).set(float("nan"))


def test_config_round_trips_through_json():
    clock = hs.Clock(steps_per_epoch=3)
    hp = hs.Hyperparameter(Function("min", [Step() / 10, 1.0]), clock=clock, name="kl_beta")
    config = json.loads(json.dumps(keras.saving.serialize_keras_object(hp)))
    restored = keras.saving.deserialize_keras_object(config)
    assert restored.name == "kl_beta" and restored.clock.steps_per_epoch == 3
    np.testing.assert_array_equal(restored.at(STEPS), hp.at(STEPS))


# ---- a free hyperparameter (a KL weight) saved and restored with its model -------------
@keras.saving.register_keras_serializable(package="hyperstep_tests")
class _VAEHead(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(2)
        self.kl_beta = hs.Hyperparameter("min(step / 100, 1.0)", name="kl_beta")

    def call(self, x):
        return self.dense(x) * self.kl_beta.value


def _vae():
    model = _VAEHead()
    model(np.zeros((1, 3), "float32"))
    return model


def _mutate(model):
    beta = model.kl_beta
    for _ in range(30):
        beta.clock.advance()
    beta.scale.assign(0.5)
    beta.set(0.125)
    beta.add_state("best", math.inf).assign(2.5)


def _snapshot(model):
    beta = model.kl_beta
    return (int(beta.clock.step), float(beta.scale), float(beta.override), bool(beta.is_set))


def _check_restored(model, saved):
    best = model.kl_beta.add_state("best", math.inf)  # a controller created after loading
    assert _snapshot(model) == saved and float(best) == 2.5


def test_free_hyperparameter_is_restored_by_save_weights(tmp_path):
    model = _vae()
    _mutate(model)
    model.save_weights(tmp_path / "vae.weights.h5")
    restored = _vae()
    restored.load_weights(tmp_path / "vae.weights.h5")
    _check_restored(restored, _snapshot(model))


def test_free_hyperparameter_is_restored_by_keras_format(tmp_path):
    model = _vae()
    _mutate(model)
    model.save(tmp_path / "vae.keras")
    restored = keras.models.load_model(tmp_path / "vae.keras")
    _check_restored(restored, _snapshot(model))


def test_free_hyperparameter_is_restored_by_tf_checkpoint(tmp_path):
    model = _vae()
    _mutate(model)
    path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
    restored = _vae()
    tf.train.Checkpoint(model=restored).restore(path)
    _check_restored(restored, _snapshot(model))


def test_constructing_a_hyperparameter_patches_nothing_in_keras(monkeypatch):
    """Keras's classes are wrapped at the import of hyperstep.backends.fit; constructing a
    Hyperparameter (and its Clock) changes no Keras class, even where the wrappers and the
    handlers were undone (as they were before the first construction until now)."""
    from hyperstep.backends import fit

    names: tuple[str, ...] = ("on_train_begin", "on_epoch_begin")
    if keras.backend.backend() == "jax":  # JAX's fit also needs each batch (backends.fit)
        names += ("on_train_batch_begin", "on_train_batch_end")
    for name in names:
        hooked = getattr(keras.callbacks.CallbackList, name)
        assert hooked._hyperstep  # installed by the import alone
        monkeypatch.setattr(keras.callbacks.CallbackList, name, hooked.__wrapped__)
    monkeypatch.setattr(
        keras.Model, "make_train_function", keras.Model.make_train_function.__wrapped__
    )
    monkeypatch.setattr(fit, "_HANDLERS", [])
    before = {name: getattr(keras.callbacks.CallbackList, name) for name in names}
    before["make_train_function"] = keras.Model.make_train_function
    hs.Hyperparameter("0.1 * 0.5 ** (step / 10)", name="learning_rate")
    hs.Hyperparameter(0.01, clock=hs.Clock(), name="weight_decay")
    after = {name: getattr(keras.callbacks.CallbackList, name) for name in names}
    after["make_train_function"] = keras.Model.make_train_function
    assert after == before
