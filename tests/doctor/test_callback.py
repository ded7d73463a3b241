"""`Doctor`: runs once on the first batch of fit(), warns (or raises), changes nothing.

Runs on the Keras backend of the process (``KERAS_BACKEND``; JAX and torch through
``test_backends.py``): each backend's trainer calls its ``train_function`` differently.
"""

import importlib
import warnings

import keras
import numpy as np
import pytest

from hyperstep.callbacks import Doctor
from hyperstep.diagnosis import DoctorError, DoctorWarning
from hyperstep.errors import InvalidTypeError

#: every pass: the doctor's catalogue on each backend's own mistakes (see tests/conftest.py)
pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

BACKEND = keras.backend.backend()


def raw(value):
    """A variable Keras does not track (on JAX, a floating array the loss reads)."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.Variable(value)
    if BACKEND == "torch":
        import torch

        return torch.nn.Parameter(torch.tensor(value))
    import jax.numpy as jnp

    return jnp.asarray(value, "float32")


X = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
Y = np.ones((16, 1), "float32")


class RawScale(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(1)
        self.scale = raw(2.0)

    def call(self, x):
        return self.dense(x) * self.scale


def doctor_warnings(fit):
    """Run fit() and return the DoctorWarnings (Keras's own DeprecationWarnings are noise that
    pytest.warns would re-raise from this file)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit()
    return [str(w.message) for w in caught if issubclass(w.category, DoctorWarning)]


def raw_scale_model():
    model = RawScale(name="m")
    model.compile(optimizer="sgd", loss="mse")
    return model


def test_callback_warns_on_the_first_batch_with_the_findings():
    model = raw_scale_model()
    check = Doctor()
    found = doctor_warnings(
        lambda: model.fit(X, Y, batch_size=8, epochs=2, verbose=0, callbacks=[check])
    )
    assert len(found) == 1 and "untracked" in found[0] and "m/scale" in found[0]
    assert check.diagnosis.codes() == ["untracked"]


def test_callback_raises_with_raise_on_findings():
    model = raw_scale_model()
    with pytest.raises(DoctorError, match=r"untracked") as raised:
        model.fit(X, Y, batch_size=8, verbose=0, callbacks=[Doctor(raise_on_findings=True)])
    assert raised.value.diagnosis.findings[0].path == "m/scale"


def test_callback_runs_once_and_training_is_what_it_would_have_been(monkeypatch):
    calls = []
    package = importlib.import_module("hyperstep.diagnosis.diagnose")
    real = package.doctor

    def counting(model, data, **kwargs):
        calls.append(data)
        return real(model, data, **kwargs)

    monkeypatch.setattr(package, "doctor", counting)

    def fitted(callbacks):
        keras.utils.set_random_seed(1)
        model = keras.Sequential(
            [
                keras.Input((3,)),
                keras.layers.Dense(4),
                keras.layers.BatchNormalization(),
                keras.layers.Dense(1),
            ]
        )
        model.compile(optimizer="adam", loss="mse", run_eagerly=True)  # no tracing: fast
        history = model.fit(
            X, Y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=callbacks
        )
        return model, history

    checked, checked_history = fitted([Doctor()])
    plain, plain_history = fitted([])
    assert len(calls) == 1
    first = keras.ops.convert_to_numpy(calls[0][0])
    np.testing.assert_array_equal(first, X[:4])  # the first batch
    assert checked_history.history == plain_history.history
    for a, b in zip(checked.variables, plain.variables, strict=True):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))
    iterations = [keras.ops.convert_to_numpy(m.optimizer.iterations) for m in (checked, plain)]
    assert iterations[0] == iterations[1] == 8


def test_callback_accepts_an_explicit_batch():
    model = raw_scale_model()
    check = Doctor(data=(X[:2], Y[:2]))
    assert doctor_warnings(lambda: model.fit(X, Y, batch_size=8, verbose=0, callbacks=[check]))
    assert check.diagnosis.codes() == ["untracked"]


def test_callback_rejects_a_non_boolean_option():
    with pytest.raises(InvalidTypeError, match="Received: raise_on_findings='yes'"):
        Doctor(raise_on_findings="yes")


def test_the_first_step_after_the_doctor_trains_as_without_it_with_a_hyperstep_optimizer():
    """A hyperstep optimizer (hyperstep's fit hooks follow the callbacks' writes) and the
    doctor on the first batch: on JAX the doctor reads the trainer's state from the variables,
    and the step must not be handed a buffer a variable still holds (it donates them)."""
    import hyperstep as hs

    def fitted(callbacks):
        keras.utils.set_random_seed(1)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile(optimizer=hs.scheduled(keras.optimizers.Adam(), learning_rate=0.1))
        model.compile(optimizer=model.optimizer, loss="mse")
        model.fit(X, Y, batch_size=8, epochs=2, verbose=0, callbacks=callbacks)
        return [w.copy() for w in model.get_weights()], int(model.optimizer.clock.step)

    check = Doctor()
    plain_weights, plain_step = fitted([])
    doctored_weights, doctored_step = fitted([check])
    assert check.diagnosis is not None and doctored_step == plain_step == 4
    for a, b in zip(doctored_weights, plain_weights, strict=True):
        np.testing.assert_array_equal(a, b)
    # and a plain model's fit with the doctor after it (the hooks stay installed)
    model = raw_scale_model()
    assert (
        len(
            doctor_warnings(
                lambda: model.fit(X, Y, batch_size=8, epochs=2, verbose=0, callbacks=[Doctor()])
            )
        )
        == 1
    )
