"""The units of hyperstep.diagnosis.diagnose, ``hs.doctor``'s own steps around the probe and
the checks: the loss it reports, the optimizer it reads, the loss function's result checked,
and the global seed generator put back (the catalogue of codes is tests/doctor/test_codes.py,
the argument checks tests/doctor/test_report.py)."""

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError

X = np.linspace(-1.0, 1.0, 12, dtype="float32").reshape(4, 3)
Y = np.ones((4, 1), "float32")


def _model() -> keras.Model:
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)], name="m")
    model.compile(keras.optimizers.SGD(0.1), "mse")
    return model


def test_the_diagnosis_reports_the_loss_and_the_variables_measured() -> None:
    model = _model()
    diagnosis = hs.doctor(model, (X, Y))
    prediction = keras.ops.convert_to_numpy(model(X))
    assert diagnosis.ok and diagnosis.variables == 2  # kernel and bias
    assert diagnosis.loss == pytest.approx(float(np.mean((prediction - Y) ** 2)), rel=1e-6)


def test_an_explicit_optimizer_is_the_one_read() -> None:
    model = _model()
    frozen = keras.optimizers.SGD(0.0)
    found = hs.doctor(model, (X, Y), optimizer=frozen)
    assert [f.code for f in found.findings] == ["zero-learning-rate"]
    assert hs.doctor(model, (X, Y)).ok  # the model's own rate is 0.1


def test_a_loss_function_returning_none_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match=r"returned None\. Received: loss=None"):
        hs.doctor(_model(), (X, Y), loss_fn=lambda model, batch: None)


def test_the_global_seed_generator_is_put_back() -> None:
    class Noisy(keras.layers.Layer):
        def call(self, x):
            return x + keras.random.normal(keras.ops.shape(x))  # the global seed generator

    model = keras.Sequential([keras.Input((3,)), Noisy(), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    keras.utils.set_random_seed(7)
    keras.random.normal((1,))  # the generator exists before the doctor runs
    expected = keras.ops.convert_to_numpy(keras.random.normal((3,)))
    keras.utils.set_random_seed(7)
    keras.random.normal((1,))
    hs.doctor(model, (X, Y))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(keras.random.normal((3,))), expected)


@pytest.mark.backend("tensorflow", "jax", "torch")
def test_a_seeded_fit_after_the_doctor_trains_as_without_it() -> None:
    """The doctor builds the compiled loss and draws from the global generators (torch's,
    NumPy's, Keras's); fit after it draws and builds as it would have without it."""
    x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    y = x.sum(axis=1, keepdims=True)

    def trained(diagnose: bool) -> list[np.ndarray]:
        keras.utils.set_random_seed(0)
        model = keras.Sequential(
            [
                keras.Input((4,)),
                keras.layers.Dense(8),
                keras.layers.Dropout(0.5),
                keras.layers.Dense(1),
            ]
        )
        model.compile(hs.StepOptimizer("sgd", learning_rate=0.05), "mse")
        if diagnose:
            assert hs.doctor(model, (x[:8], y[:8])).ok
        model.fit(x, y, batch_size=16, epochs=2, verbose=0)  # shuffled, with dropout
        return model.get_weights()

    for after, without in zip(trained(True), trained(False), strict=True):
        np.testing.assert_array_equal(after, without)
