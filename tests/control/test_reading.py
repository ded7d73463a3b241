"""Units of hyperstep.control.reading: ``collect``, ``read_all`` and fit's shared helpers."""

from __future__ import annotations

import csv

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.control.reading import (
    collect,
    epoch_values,
    read_all,
    savers_before,
)
from hyperstep.errors import InvalidArgumentError, InvalidTypeError


def test_collect_takes_one_a_list_a_dict_or_an_optimizer() -> None:
    lr = hs.Hyperparameter(0.1, name="learning_rate")
    wd = hs.Hyperparameter(0.01, name="weight_decay", clock=lr.clock)
    assert collect(lr) == {"learning_rate": lr}
    assert collect([lr, wd]) == {"learning_rate": lr, "weight_decay": wd}
    assert collect((wd,)) == {"weight_decay": wd}
    assert collect({"a": lr, 3: wd}) == {"a": lr, "3": wd}  # keys as strings
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1, momentum=0.9)
    assert collect(opt) == opt.hyperparameters
    assert collect(keras.optimizers.LossScaleOptimizer(opt)) == opt.hyperparameters
    assert {"learning_rate", "momentum"} <= set(opt.hyperparameters)


def test_collect_names_the_owner_and_the_wrong_type() -> None:
    with pytest.raises(InvalidTypeError, match=r"`Probe\(hyperparameters=...\)`.*type float"):
        collect(0.1, owner="Probe")
    with pytest.raises(InvalidTypeError, match=r"Received: lr=0.1"):
        collect({"lr": 0.1})


def test_collect_refuses_two_of_one_name_and_nothing() -> None:
    a = hs.Hyperparameter(0.1, name="lr")
    b = hs.Hyperparameter(0.2, name="lr")
    with pytest.raises(InvalidArgumentError, match=r"two hyperparameters named 'lr'"):
        collect([a, b])
    assert collect({"a": a, "b": b}) == {"a": a, "b": b}
    with pytest.raises(InvalidArgumentError, match=r"at least one.*Received: hyperparameters=\[\]"):
        collect([])


def test_read_all_gives_the_effective_float32_values() -> None:
    lr = hs.Hyperparameter("0.1 * (1 - step / 10)", name="learning_rate")
    beta = hs.Hyperparameter(0.9, name="beta", clock=lr.clock)
    lr.clock.step.assign(4)
    beta.scale.assign(0.5)
    values = read_all([lr, beta])
    assert list(values) == ["learning_rate", "beta"]
    assert all(type(v) is float for v in values.values())
    assert values["learning_rate"] == float(np.float32(0.1) * (np.float32(1) - np.float32(0.4)))
    assert values["beta"] == float(np.float32(0.9) * np.float32(0.5))


def test_read_all_error_names_read_all() -> None:
    with pytest.raises(InvalidTypeError, match=r"`read_all\(hyperparameters=...\)`"):
        read_all("lr")


class _Probe(keras.callbacks.Callback):
    found: list[str] | None = None

    def on_train_begin(self, logs=None) -> None:
        self.found = savers_before(self)


def test_savers_before_lists_the_savers_ahead_in_the_callback_list(tmp_path) -> None:
    probe = _Probe()
    backup = keras.callbacks.BackupAndRestore(str(tmp_path / "b"))
    checkpoint = keras.callbacks.ModelCheckpoint(str(tmp_path / "m.keras"))
    after = keras.callbacks.BackupAndRestore(str(tmp_path / "c"))
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    listed = [backup, keras.callbacks.History(), checkpoint, probe, after]
    callbacks = keras.callbacks.CallbackList(listed, model=model)
    callbacks.on_train_begin()
    assert probe.found == ["BackupAndRestore", "ModelCheckpoint"]


def test_savers_before_outside_fit_is_empty() -> None:
    assert savers_before(_Probe()) == []
    probe = _Probe()
    probe.on_train_begin()
    assert probe.found == []


# ---- the one convention of logged values: what the epoch trained with -------------------
def _plateau(lr: hs.Hyperparameter, monitor: str) -> hs.ReduceOnPlateau:
    return hs.ReduceOnPlateau(
        lr, monitor=monitor, factor=0.5, patience=0, min_delta=1e9, compat="keras"
    )  # keeps reducing after the first epoch


def _keras_plateau(lr: hs.Hyperparameter, monitor: str) -> keras.callbacks.ReduceLROnPlateau:
    return keras.callbacks.ReduceLROnPlateau(monitor, factor=0.5, patience=0, min_delta=1e9)


def _tensorboard_learning_rates(log_dir) -> list[float]:
    """``epoch_learning_rate`` of the train event files Keras's TensorBoard wrote, by epoch."""
    import tensorflow as tf

    found = {}
    for path in sorted((log_dir / "train").glob("events*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                if value.tag == "epoch_learning_rate":
                    found[event.step] = float(tf.make_ndarray(value.tensor))
    return [found[epoch] for epoch in sorted(found)]


def _logged(controller, order: str, monitor: str, tmp_path) -> tuple[list, list, list]:
    """History's, CSVLogger's and TensorBoard's learning rate of one run (the same run every
    time); a logger the order leaves out gives ``[]``."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32") + rng.normal(size=(64, 1))
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate="0.05 * 0.9 ** (step / 8)")
    model.compile(opt, "mse")
    control = controller(opt.hyperparameters["learning_rate"], monitor)
    csv_path, log_dir = tmp_path / f"{order}.csv", tmp_path / order
    found = {  # Keras's loggers record what the callbacks before them wrote, and TensorBoard
        # reads optimizer.learning_rate itself: after a reduction a callback before it made
        "log": hs.callbacks.LogHyperparameters(opt),
        "csv": keras.callbacks.CSVLogger(str(csv_path)),
        "tb": keras.callbacks.TensorBoard(str(log_dir)),
        "control": control,
    }
    callbacks = [found[name] for name in order.split(",")]
    history = model.fit(
        x, y, batch_size=16, epochs=4, verbose=0, validation_data=(x, y), shuffle=False,
        callbacks=callbacks,
    )  # fmt: skip
    rows = []
    if "csv" in order:
        with open(csv_path) as f:
            rows = [float(row["learning_rate"]) for row in csv.DictReader(f)]
    board = _tensorboard_learning_rates(log_dir) if "tb" in order else []
    return history.history["learning_rate"], rows, board


@pytest.fixture(scope="module")
def keras_histories(tmp_path_factory):
    """``monitor -> History`` of Keras's own ReduceLROnPlateau alone (one run per monitor,
    kept for the module: the run is the same every time)."""
    found: dict[str, list] = {}

    def history(monitor: str) -> list:
        if monitor not in found:
            where = tmp_path_factory.mktemp(f"keras-{monitor}")
            found[monitor] = _logged(_keras_plateau, "control", monitor, where)[0]
        return found[monitor]

    return history


@pytest.mark.backend("tensorflow", "jax", "torch")
@pytest.mark.parametrize("monitor", ["loss", "val_loss"])
@pytest.mark.parametrize("controller", [_plateau, _keras_plateau], ids=["hs", "keras"])
@pytest.mark.parametrize(
    "order",
    ["log,csv,tb,control", "control,tb,csv,log", "csv,tb,control,log", "tb,control,log,csv"],
)
def test_logs_give_the_value_the_epoch_trained_with_whatever_the_order(
    controller, order: str, monitor: str, keras_histories, tmp_path
) -> None:
    # the reference: Keras's own ReduceLROnPlateau, alone, records the value before it
    # reduces (its History on the same run); History, CSVLogger and TensorBoard anywhere
    # give the same
    keras_history = keras_histories(monitor)
    assert keras_history[1] > keras_history[2] > keras_history[3]  # it reduced each epoch
    history, rows, board = _logged(controller, order, monitor, tmp_path)
    assert history == keras_history
    assert rows == pytest.approx(keras_history, rel=1e-7)  # CSVLogger keeps ~16 digits
    assert board == pytest.approx(keras_history, rel=1e-7)  # TensorBoard keeps float32


def test_epoch_values_are_noted_per_epoch_and_step() -> None:
    lr = hs.Hyperparameter(0.1, name="learning_rate")
    assert epoch_values(lr, 0) == {"learning_rate": pytest.approx(0.1)}
    lr.scale.assign(0.5)  # a change at the same epoch's end: the epoch trained with 0.1
    assert epoch_values([lr], 0) == {"learning_rate": pytest.approx(0.1)}
    lr.clock.step.assign(1)  # the same index at another step: another fit's epoch
    assert epoch_values(lr, 0) == {"learning_rate": pytest.approx(0.05)}
    lr.scale.assign(0.25)  # the next epoch at the same step (a clock nothing advances)
    assert epoch_values(lr, 1) == {"learning_rate": pytest.approx(0.025)}
