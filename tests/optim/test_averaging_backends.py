"""``hs.SWA``/``hs.EMA`` where users meet them, on each backend: ``AveragedWeights`` inside
that backend's own ``fit``, as the recipe writes it, leaves a true average (a NumPy EMA or
mean of the weights each update left) or the training weights, never an average of
nothing; an EMA teacher is never the student itself."""

import warnings

import keras
import numpy as np
import pytest

import hyperstep as hs

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

RNG = np.random.default_rng(4)
X = RNG.normal(size=(48, 4)).astype("float32")
Y = (X @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32") + 1.0).astype("float32")


class Recorder(keras.callbacks.Callback):
    """The training weights after each update (float64), read at the batch's end."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[list[np.ndarray]] = []

    def on_train_batch_end(self, batch, logs=None):
        self.seen.append([np.array(w, np.float64) for w in self.model.get_weights()])


def _model(opt):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    model.compile(opt, "mse")
    return model


def _numpy_ema(seen, decay):
    """``avg = w_1``, then ``avg = avg + (w - avg) * (1 - decay)`` (``init="copy"``)."""
    average = [w.copy() for w in seen[0]]
    for weights in seen[1:]:
        average = [a + (w - a) * (1 - decay) for a, w in zip(average, weights, strict=True)]
    return average


@pytest.mark.parametrize("kind", ["ema", "swa"])
def test_the_model_ends_with_the_numpy_average_of_the_trained_weights(kind):
    opt = hs.StepOptimizer("sgd", learning_rate=0.05)
    model = _model(opt)
    average = hs.EMA(opt, decay=0.8) if kind == "ema" else hs.SWA(opt, start=3, every=2)
    recorder = Recorder()
    model.fit(
        X,
        Y,
        batch_size=8,
        epochs=2,
        shuffle=False,
        verbose=0,
        callbacks=[average, recorder, hs.callbacks.AveragedWeights(opt)],
    )
    assert len(recorder.seen) == 12  # steps 1 .. 12
    if kind == "ema":
        expected = _numpy_ema(recorder.seen, 0.8)
    else:  # the weights after the updates that bring the clock to 3, 5, ..., 11
        due = recorder.seen[2::2]
        expected = [np.mean([w[i] for w in due], axis=0) for i in range(2)]
    for found, wanted in zip(model.get_weights(), expected, strict=True):
        np.testing.assert_allclose(found, wanted, rtol=1e-5, atol=1e-6)


def test_an_ema_made_but_not_given_to_fit_is_refused_at_the_start():
    opt = hs.StepOptimizer("sgd", learning_rate=0.05)
    model = _model(opt)
    before = model.get_weights()
    hs.EMA(opt, decay=0.9)  # the recipe's "# or: hs.EMA(opt, decay=...)", not in callbacks
    with pytest.raises(
        ValueError, match=r"not among `fit`'s callbacks.*Received: callbacks without the ema"
    ):
        model.fit(X, Y, batch_size=8, verbose=0, callbacks=[hs.callbacks.AveragedWeights(opt)])
    for found, initial in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(found, initial)  # nothing trained, nothing wiped


def test_an_swa_starting_after_fit_leaves_the_training_weights_and_warns():
    opt = hs.StepOptimizer("sgd", learning_rate=0.05)
    model = _model(opt)
    swa = hs.SWA(opt, start=1000)
    recorder = Recorder()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # (pytest.warns would raise Keras's own deprecations)
        model.fit(
            X,
            Y,
            batch_size=8,
            epochs=2,
            verbose=0,
            callbacks=[swa, recorder, hs.callbacks.AveragedWeights(opt)],
        )
    ours = [str(w.message) for w in caught if "averaged no weights" in str(w.message)]
    assert len(ours) == 1 and ours[0].startswith("`hs.SWA(start=1000, every=1)` has averaged no")
    assert int(swa.n_averaged.numpy()) == 0
    for found, trained in zip(model.get_weights(), recorder.seen[-1], strict=True):
        np.testing.assert_array_equal(found, trained.astype("float32"))
    assert np.abs(model.get_weights()[0]).max() > 0.1  # trained weights, not zeros


def test_an_ema_whose_init_is_the_student_itself_is_refused():
    student = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    ema = hs.EMA(hs.StepOptimizer("sgd", learning_rate=0.1), decay=0.9, init=student)
    with pytest.raises(
        ValueError, match=r"holds the student's own weights.*clone_model.*Received: init=<Seq"
    ):
        ema.network(student)
    copy = keras.models.clone_model(student)  # what the message says to type works
    ema = hs.EMA(hs.StepOptimizer("sgd", learning_rate=0.1), decay=0.9, init=copy)
    assert ema.network(student) is copy
