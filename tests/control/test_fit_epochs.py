"""``epoch`` is fit's epoch: keras-io's epoch-table learning rate, resumed runs, build time.

The reference is the callbacks guide of keras-io ("Writing your own callbacks"): a plain
``SGD(0.1)`` whose rate a ``CustomLearningRateScheduler`` sets from fit's epoch index and the
guide's ``LR_SCHEDULE`` table. With its settings (1000 samples, batch 64,
``steps_per_epoch=5``) Keras 3 runs epochs of 5, 5, 5 and 1 steps (the input runs out
every 16 batches), so ``floor(step / 5)`` is not fit's epoch.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs

# keras-io's epoch table, its callback, the rate recorder and the data: shared with the
# JAX/torch worker, which runs them in another process
_SPEC = importlib.util.spec_from_file_location(
    "hs_epochs_worker", Path(__file__).parents[1] / "backends" / "epochs_worker.py"
)
assert _SPEC is not None and _SPEC.loader is not None
_WORKER = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_WORKER)
CustomLearningRateScheduler, Rates = _WORKER.CustomLearningRateScheduler, _WORKER.Rates
LR_SCHEDULE, lr_schedule, data = _WORKER.LR_SCHEDULE, _WORKER.lr_schedule, _WORKER.data

SAMPLES, BATCH, STEPS_PER_EPOCH, EPOCHS = 1000, 64, 5, 15
TABLE = hs.schedules.piecewise([3, 6, 9, 12], [0.1, 0.05, 0.01, 0.005, 0.001], unit="epoch")
pytestmark = pytest.mark.filterwarnings("ignore:Your input ran out of data:UserWarning")


def model() -> keras.Model:
    keras.utils.set_random_seed(1)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])


def fit(net: keras.Model, callbacks: list[Any], **kwargs: Any) -> None:
    x, y = data()
    kwargs.setdefault("epochs", EPOCHS)
    net.fit(x, y, batch_size=BATCH, steps_per_epoch=STEPS_PER_EPOCH, shuffle=False, verbose=0,
            callbacks=callbacks, **kwargs)  # fmt: skip


def scheduled() -> keras.Model:
    net = model()
    net.compile(hs.scheduled(keras.optimizers.SGD(), learning_rate=TABLE), "mse")
    return net


@pytest.fixture(scope="module")
def reference() -> tuple[Rates, list[np.ndarray]]:
    net = model()
    net.compile(keras.optimizers.SGD(learning_rate=0.1), "mse")
    rates = Rates()
    fit(net, [CustomLearningRateScheduler(lr_schedule), rates])
    return rates, net.get_weights()


@pytest.fixture(scope="module")
def ours() -> tuple[Rates, keras.Model]:
    net = scheduled()
    rates = Rates()
    fit(net, [rates])  # no hyperstep callback: every fit gives the clock its epochs
    return rates, net


def test_fit_runs_epochs_of_5_5_5_1_steps(reference: Any) -> None:
    rates, _ = reference
    lengths = np.bincount(rates.epochs).tolist()
    assert lengths == [5, 5, 5, 1] * 3 + [5, 5, 5]


def test_epoch_table_equals_keras_callback_at_every_step(reference: Any, ours: Any) -> None:
    assert ours[0].epochs == reference[0].epochs
    assert ours[0].rates == reference[0].rates  # float32 values, bit for bit
    # the pure formula floor(step / 5) would differ (the test can fail)
    pure = ours[1].optimizer.hyperparameters["learning_rate"].schedule
    steps = np.arange(len(ours[0].rates))
    assert np.asarray(pure(steps)).tolist() != reference[0].rates


def test_epoch_table_final_weights_equal_keras(reference: Any, ours: Any) -> None:
    for mine, theirs in zip(ours[1].get_weights(), reference[1], strict=True):
        np.testing.assert_array_equal(mine, theirs)


def test_clock_after_fit_holds_fit_last_epoch(ours: Any) -> None:
    clock = ours[1].optimizer.clock
    assert [int(v) for v in (clock.step, *clock.epoch_variables)] == [63, 14, 58, 5]
    assert clock.steps_per_epoch == STEPS_PER_EPOCH  # bound from fit's own steps


def _without_the_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("on_train_begin", "on_epoch_begin"):
        method = getattr(keras.callbacks.CallbackList, name)
        assert method._hyperstep  # pinned: the wrapper hyperstep installs
        monkeypatch.setattr(keras.callbacks.CallbackList, name, method.__wrapped__)


def test_follow_epochs_callback_does_what_every_fit_does(
    monkeypatch: pytest.MonkeyPatch, reference: Any
) -> None:
    _without_the_hook(monkeypatch)
    net = scheduled()
    rates = Rates()
    fit(net, [hs.callbacks.FollowEpochs(), rates], epochs=8)
    assert rates.rates == reference[0].rates[: len(rates.rates)]


def test_without_hook_or_callback_epoch_is_step_floor_divided(
    monkeypatch: pytest.MonkeyPatch, reference: Any
) -> None:
    _without_the_hook(monkeypatch)
    net = model()
    clock = hs.Clock(steps_per_epoch=STEPS_PER_EPOCH)
    net.compile(hs.scheduled(keras.optimizers.SGD(), learning_rate=TABLE, clock=clock), "mse")
    rates = Rates()
    fit(net, [rates], epochs=8)
    expected = [lr_schedule_at(step // STEPS_PER_EPOCH) for step in range(len(rates.rates))]
    assert rates.rates == expected != reference[0].rates[: len(rates.rates)]


def lr_schedule_at(epoch: int) -> float:
    lr = 0.1
    for e in range(epoch + 1):
        lr = lr_schedule(e, lr)
    return float(np.float32(lr))


def _save_and_load(net: keras.Model, how: str, path: Any) -> keras.Model:
    if how == "keras":
        net.save(path / "m.keras")
        return keras.models.load_model(path / "m.keras")
    other = scheduled()
    other.build((None, 4))
    other.optimizer.build(other.trainable_variables)
    if how == "weights":
        net.save_weights(path / "m.weights.h5")
        other.load_weights(path / "m.weights.h5")
    else:
        saved = tf.train.Checkpoint(model=net, optimizer=net.optimizer).save(str(path / "c"))
        tf.train.Checkpoint(model=other, optimizer=other.optimizer).restore(saved)
    return other


@pytest.mark.parametrize("how", ["keras", "weights", "checkpoint"])
def test_save_mid_run_and_resume_exactly(how: str, tmp_path: Any, ours: Any) -> None:
    net, first = scheduled(), Rates()
    fit(net, [first], epochs=8)  # two passes over the data: 32 steps, fit's epoch 7 last
    clock = net.optimizer.clock
    state = [int(v) for v in (clock.step, *clock.epoch_variables)]
    assert state == [32, 7, 31, STEPS_PER_EPOCH]
    resumed = _save_and_load(net, how, tmp_path)
    again = resumed.optimizer.clock
    assert [int(v) for v in (again.step, *again.epoch_variables)] == state
    assert int(again.epoch) == int(clock.epoch) == 7
    second = Rates()
    fit(resumed, [second], initial_epoch=8)
    assert first.rates + second.rates == ours[0].rates
    for mine, theirs in zip(resumed.get_weights(), ours[1].get_weights(), strict=True):
        np.testing.assert_array_equal(mine, theirs)


@keras.saving.register_keras_serializable(package="test_fit_epochs")
class KLTerm(keras.layers.Layer):
    """A VAE's KL term weighted by an epoch-based beta, a free hyperparameter (no clock)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.beta = hs.Hyperparameter("min(epoch / 10, 1)", name="kl_beta")
        self.seen = self.add_weight(shape=(), initializer="zeros", trainable=False, name="seen")

    def call(self, z: Any) -> Any:
        beta = self.beta.value  # read while Keras builds the model, and in every step
        self.seen.assign(beta)  # what the forward pass read
        self.add_loss(beta * keras.ops.mean(keras.ops.square(z)))
        return z


class Seen(keras.callbacks.Callback):
    """The beta each training step's forward pass read, and fit's epoch of the step."""

    def __init__(self, layer: KLTerm) -> None:
        super().__init__()
        self.layer, self.values, self.epochs, self.epoch = layer, [], [], -1

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self.epoch = epoch

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.values.append(float(np.asarray(self.layer.seen)))
        self.epochs.append(self.epoch)


def test_functional_model_reads_epoch_beta_at_build_and_follows_the_optimizer_clock() -> None:
    inputs = keras.Input((4,))
    kl = KLTerm()
    outputs = keras.layers.Dense(1)(kl(keras.layers.Dense(3)(inputs)))
    net = keras.Model(inputs, outputs)  # built with an epoch of unknown length: no error
    assert kl.beta.clock.steps_per_epoch is None
    assert float(kl.beta.value) == 0.0  # nothing trained yet: epoch 0
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate="0.01 * 0.9 ** epoch")
    net.compile(optimizer, "mse")
    seen = Seen(kl)
    fit(net, [seen], epochs=6)
    assert kl.beta.clock is optimizer.clock  # the free hyperparameter moved at fit's start
    assert optimizer.clock.steps_per_epoch == STEPS_PER_EPOCH
    expected = [float(np.float32(min(e / 10, 1))) for e in seen.epochs]  # fit's own epochs
    assert seen.values == expected
    assert len(set(expected)) == 6


def test_free_hyperparameter_saved_without_its_private_clock(tmp_path: Any) -> None:
    kl = KLTerm()
    config = keras.saving.serialize_keras_object(kl.beta)
    assert config["config"]["clock"] is None
    again = keras.saving.deserialize_keras_object(config)
    assert again.follows_optimizer and repr(again) == repr(kl.beta)


def test_hyperparameter_given_a_clock_keeps_it_in_fit() -> None:
    clock = hs.Clock()
    inputs = keras.Input((4,))
    kl = KLTerm()
    kl.beta = hs.Hyperparameter("min(epoch / 10, 1)", clock=clock, name="kl_beta")
    net = keras.Model(inputs, keras.layers.Dense(1)(kl(inputs)))
    net.compile(hs.scheduled(keras.optimizers.SGD(), learning_rate=0.01), "mse")
    fit(net, [], epochs=2)
    assert kl.beta.clock is clock and int(clock.step) == 0  # the user's clock, not advanced


def test_epoch_of_unknown_length_inside_fit_is_fit_epoch() -> None:
    x, y = data()
    dataset = tf.data.Dataset.from_tensor_slices((x[:96], y[:96])).filter(lambda *_: True)
    dataset = dataset.batch(32)  # 3 batches an epoch, which Keras cannot count in advance
    net = model()
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate="0.1 * 0.5 ** epoch")
    net.compile(optimizer, "mse")
    rates = Rates()
    net.fit(dataset, epochs=3, verbose=0, shuffle=False, callbacks=[rates])
    assert optimizer.clock.steps_per_epoch is None  # fit never knew the length
    assert rates.rates == [float(np.float32(0.1 * 0.5**e)) for e in rates.epochs]
    assert sorted(set(rates.epochs)) == [0, 1, 2]


def test_free_hyperparameter_with_a_plain_keras_optimizer_warns_once() -> None:
    inputs = keras.Input((4,))
    kl = KLTerm()
    net = keras.Model(inputs, keras.layers.Dense(1)(kl(inputs)))
    net.compile(keras.optimizers.SGD(0.01), "mse")
    with pytest.warns(UserWarning, match=r"'kl_beta'.*nothing advances.*hs.scheduled"):
        fit(net, [], epochs=1)
    fit(net, [], epochs=1)  # said once (filterwarnings = error)


def test_a_later_fit_with_longer_epochs_keeps_fit_epoch() -> None:
    net = model()
    net.compile(hs.scheduled(keras.optimizers.SGD(), learning_rate="0.1 * 0.5 ** epoch"), "mse")
    fit(net, [], epochs=4)  # binds steps_per_epoch = 5
    x, y = data()
    rates = Rates()
    net.fit(x[:512], y[:512], batch_size=BATCH, epochs=6, initial_epoch=4, shuffle=False,
            verbose=0, callbacks=[rates])  # fmt: skip
    assert np.bincount(rates.epochs).tolist() == [0, 0, 0, 0, 8, 8]  # epochs of 8 steps
    # fit's epoch, not one more every 5 steps
    assert rates.rates == [float(np.float32(0.1 * 0.5**e)) for e in rates.epochs]
    assert net.optimizer.clock.steps_per_epoch == STEPS_PER_EPOCH


def test_step_optimizer_config_keeps_epoch_unbound() -> None:
    clock = hs.Clock(steps_per_epoch=5)
    optimizer = hs.StepOptimizer("sgd", learning_rate="0.1 * 0.5 ** epoch", clock=clock)
    again = hs.StepOptimizer.from_config(optimizer.get_config())
    assert repr(again.hyperparameters["learning_rate"]) == (
        "Hyperparameter(0.1 * 0.5 ** epoch, name='learning_rate')"
    )
