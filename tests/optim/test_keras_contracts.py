"""Keras's own optimizer contracts, held by every Keras optimizer wrapped in ``hs.scheduled``.

The yardstick is Keras 3's ``keras/src/optimizers/optimizer_test.py`` (pickling, callable
learning rates, clipping, assigning ``opt.learning_rate``), adapted: each case runs on the
wrapped optimizer and, where Keras fixes a number, against the plain optimizer. The same
checks on JAX and torch are in ``tests/backends/test_contracts.py``.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import keras
import numpy as np
import pytest

import hyperstep as hs

K = keras.optimizers

#: every optimizer class in keras.optimizers, except the two that wrap other optimizers
CLASSES = sorted(
    name
    for name in dir(K)
    if isinstance(getattr(K, name), type)
    and issubclass(getattr(K, name), K.Optimizer)
    and getattr(K, name) is not K.Optimizer
    and name not in ("LossScaleOptimizer", "MultiOptimizer")
)
#: Keras 3.10's own Muon fails on TensorFlow variables ('ResourceVariable' object has no
#: attribute 'path'); Keras 3.15 runs it (make test-oldest runs Keras 3.10)
OLD_MUON = pytest.mark.skipif(
    keras.version().startswith("3.10."), reason="Keras 3.10's own Muon fails on TF variables"
)
CASES = [pytest.param(name, marks=OLD_MUON) if name == "Muon" else name for name in CLASSES]


def _other(opt: Any) -> str:
    """A hyperparameter of ``opt`` besides the learning rate (for overrides, scales)."""
    return next(k for k in sorted(opt.hyperparameters) if k not in ("learning_rate",))


def _state(opt: Any) -> dict[str, Any]:
    """Everything hyperstep keeps besides Keras's own state: schedules, scales, overrides,
    the clock's step."""
    return {
        "step": int(opt.clock.step.numpy()),
        "advance": opt.get_config()["advance"],
        **{
            name: (repr(hp._raw_schedule), float(hp.scale.numpy()), str(hp.override.numpy()))
            for name, hp in opt.hyperparameters.items()
        },
    }


def _changed(name: str) -> Any:
    opt = hs.scheduled(getattr(K, name)(), learning_rate="0.01 * 0.5 ** (step / 10)")
    opt.clock.step.assign(7)
    opt.hyperparameters["learning_rate"].scale.assign(0.5)
    opt.hyperparameters[_other(opt)].set(0.125)
    return opt


@pytest.mark.skipif(
    tuple(int(part) for part in keras.version().split(".")[:2]) < (3, 15),
    reason=f"the optimizer list of Keras 3.15 (this is {keras.version()})",
)
def test_every_keras_optimizer_is_covered() -> None:
    assert {"Adam", "AdamW", "SGD", "RMSprop", "Muon", "ScheduleFreeAdamW"} <= set(CLASSES)
    assert len(CLASSES) == 14  # Keras 3.15


@pytest.mark.parametrize("name", CASES)
def test_pickle_and_deepcopy_keep_schedules_overrides_scales_and_the_step(name: str) -> None:
    opt = _changed(name)
    for again in (pickle.loads(pickle.dumps(opt)), copy.deepcopy(opt)):
        assert type(again) is type(opt)
        assert again.get_config() == opt.get_config()  # Keras's test_pickleable_optimizers
        assert _state(again) == _state(opt)
        assert again.clock is not opt.clock


@pytest.mark.parametrize("name", CASES)
def test_serialize_and_from_config_round_trip(name: str) -> None:
    opt = _changed(name)
    again = K.deserialize(K.serialize(opt))
    assert type(again) is type(opt) and again.get_config() == opt.get_config()
    fresh = type(opt).from_config(opt.get_config())
    assert {k: repr(hp._raw_schedule) for k, hp in fresh.hyperparameters.items()} == {
        k: repr(hp._raw_schedule) for k, hp in opt.hyperparameters.items()
    }


@pytest.mark.parametrize("name", CASES)
def test_callable_learning_rate_is_called_by_keras_as_without_hyperstep(name: str) -> None:
    # Keras's test_callable_learning_rate, on every optimizer, against the plain one
    results = []
    for wrap in (lambda o: o, hs.scheduled):
        opt = wrap(getattr(K, name)(learning_rate=lambda: 0.1))
        v = keras.Variable([[1.0, 2.0], [3.0, 4.0]])
        opt.apply_gradients([(np.ones((2, 2), "float32"), v)])
        opt.apply_gradients([(np.full((2, 2), 0.5, "float32"), v)])
        results.append(v.numpy())
    np.testing.assert_array_equal(results[1], results[0])
    assert "learning_rate" not in opt.hyperparameters  # Keras's own path, untouched


@pytest.mark.parametrize("name", CASES)
def test_assigning_a_schedule_replaces_the_hyperparameters_schedule(name: str) -> None:
    opt = hs.scheduled(getattr(K, name)())
    keras_schedule = K.schedules.PolynomialDecay(0.1, 4)
    opt.learning_rate = keras_schedule
    lr = opt.hyperparameters["learning_rate"]
    assert lr.schedule.schedule is keras_schedule  # Keras's own code (not converted)
    for step in (0, 2, 5):
        opt.clock.step.assign(step)
        assert float(opt.learning_rate) == float(keras_schedule(step))
    other = _other(opt)
    setattr(opt, other, hs.schedules.linear(0.0, 1.0, steps=10))
    assert float(getattr(opt, other)) == pytest.approx(0.5)  # at step 5
    setattr(opt, other, "step / 100")
    assert float(getattr(opt, other)) == pytest.approx(0.05)


@pytest.mark.parametrize("name", CASES)
def test_learning_rate_assign_is_assigning_the_attribute(name: str) -> None:
    opt = hs.scheduled(getattr(K, name)(), learning_rate="0.01 * 0.5 ** (step / 10)")
    opt.learning_rate.assign(1e-4)
    assert float(opt.learning_rate) == pytest.approx(1e-4, rel=1e-7)
    lr = opt.hyperparameters["learning_rate"]
    assert not bool(lr.is_set)  # still the schedule, rescaled
    opt.clock.step.assign(10)
    assert float(opt.learning_rate) == pytest.approx(5e-5, rel=1e-6)
    assert len(opt.variables) == 2  # the value read is not one of the optimizer's variables


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("mode", ["clipnorm", "clipvalue", "global_clipnorm"])
def test_clipping_is_keras_on_every_float_dtype(name: str, mode: str) -> None:
    # Keras's test_clip_norm / test_clip_value / test_global_clip_norm, bit for bit (one
    # optimizer of each for every dtype: clipping keeps no state)
    plain_opt = getattr(K, name)(**{mode: 1})
    ours_opt = hs.scheduled(getattr(K, name)(**{mode: 1}))
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        grads = [keras.ops.convert_to_tensor(np.array([100.0, 50.0]), dtype=dtype)]
        plain = plain_opt._clip_gradients(grads)
        ours = ours_opt._clip_gradients(grads)
        assert keras.backend.standardize_dtype(ours[0].dtype) == dtype
        np.testing.assert_array_equal(
            keras.ops.convert_to_numpy(ours[0]), keras.ops.convert_to_numpy(plain[0])
        )
    opt = hs.scheduled(K.SGD(clipvalue=1))
    assert keras.ops.convert_to_numpy(
        opt._clip_gradients([np.array([100.0, 100.0])])[0]
    ).tolist() == [
        1.0,
        1.0,
    ]


@pytest.mark.parametrize("name", CASES)
def test_dot_keras_save_and_load(name: str, tmp_path: Any) -> None:
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    opt = _changed(name)
    model.compile(opt, "mse")
    opt.build(model.trainable_variables)
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras").optimizer
    assert type(loaded) is type(opt) and _state(loaded) == _state(opt)


# ---- Keras's learning-rate callbacks on a schedule ------------------------------------------

X = np.random.default_rng(0).normal(size=(64, 3)).astype("float32")
Y = (X @ np.array([[1.0], [-2.0], [0.5]])).astype("float32")


class _Trace(keras.callbacks.Callback):
    """The learning rate each training step uses."""

    def __init__(self) -> None:
        super().__init__()
        self.rates: list[float] = []

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        self.rates.append(float(self.model.optimizer.learning_rate))


def _fit(callback: Any, optimizer: Any, epochs: int = 8) -> np.ndarray:
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer, "mse")
    trace = _Trace()
    model.fit(
        X, Y, batch_size=16, epochs=epochs, shuffle=False, verbose=0, callbacks=[callback, trace]
    )
    return np.array(trace.rates, dtype="float32")


def _cosine_adam() -> Any:
    return hs.scheduled(K.Adam(), learning_rate="cosine(0.05, steps=40, end=0.001)")


@pytest.fixture(scope="module")
def plain() -> np.ndarray:
    """The rates of the cosine Adam fit with no callback changing them."""
    return _fit(keras.callbacks.History(), _cosine_adam())


# one factor: the factor is only multiplied (ReduceOnPlateau.update's keras branch, Keras's
# callback), no path depends on its value; 0.2 is not a float32 number, so the bitwise
# compare holds the rounding of old * factor as well
@pytest.mark.parametrize("factor", [0.2])
def test_keras_reduce_lr_on_plateau_multiplies_the_schedule_like_hs_reduce_on_plateau(
    factor: float, plain: np.ndarray
) -> None:
    args = {"monitor": "loss", "factor": factor, "patience": 1, "cooldown": 1, "min_delta": 0.5}
    keras_rates = _fit(keras.callbacks.ReduceLROnPlateau(**args), _cosine_adam())
    optimizer = _cosine_adam()
    ours = hs.ReduceOnPlateau(optimizer.hyperparameters["learning_rate"], compat="keras", **args)
    hs_rates = _fit(ours, optimizer)
    # both read back exactly float32(old * factor) at the reducing step (as a plain Keras
    # optimizer does), then the schedule runs on under the same scale: bitwise
    np.testing.assert_array_equal(keras_rates.view(np.uint32), hs_rates.view(np.uint32))
    assert np.sum(keras_rates < plain * 0.99) >= 8  # it did reduce ...
    assert len(np.unique(keras_rates[-12:])) == 12  # ... and the schedule kept running


def test_keras_learning_rate_scheduler_rescales_the_schedule_each_epoch(plain: np.ndarray) -> None:
    # LearningRateScheduler sets the value at each epoch's start; the schedule runs on within
    # the epoch from there (4 steps an epoch)
    rates = _fit(keras.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5), _cosine_adam())
    expected = plain * np.repeat(0.5 ** np.arange(1, 9), 4)
    np.testing.assert_allclose(rates, expected, rtol=1e-5)


def test_assigning_a_number_where_the_schedule_is_zero_names_hyperparameter_set() -> None:
    opt = hs.scheduled(K.Adam(), learning_rate="linear(0.0, 0.1, steps=10)")
    with pytest.raises(ValueError, match=r"Hyperparameter\.set"):
        opt.learning_rate = 0.05
    opt.hyperparameters["learning_rate"].set(0.05)
    assert float(opt.learning_rate) == np.float32(0.05)
    momentum = hs.scheduled(K.SGD(momentum=0.0))
    momentum.momentum = 0.9  # a constant 0 takes the value as its override
    assert float(momentum.momentum) == pytest.approx(0.9)


def test_a_callable_cannot_replace_a_scheduled_value() -> None:
    opt = hs.scheduled(K.Adam(), learning_rate="0.01")
    with pytest.raises(TypeError, match=r"Hyperparameter\.set"):
        opt.learning_rate = lambda: 0.1
