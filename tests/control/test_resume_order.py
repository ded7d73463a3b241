"""Resume is exact whatever the order of BackupAndRestore, ModelCheckpoint and hyperstep's
callbacks: an interrupted ``fit`` run again ends with the bits of the uninterrupted one.

The plateau never improves after its first value (``min_delta`` is huge) with
``patience=1``, so every epoch end takes a reduction: a decision missing from a backup shows
as a different learning rate and different weights. The oracle is the same ``fit`` run
without interruption (Keras's own BackupAndRestore contract).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError

EPOCHS = 5
NAMES = ("backup", "plateau", "log")
#: where the first run stops: before epoch 2, at batch 1 of epoch 2, after epoch 1's end
POINTS = (("epoch_begin", 2), ("batch", 2), ("epoch_end", 1))


class Interrupted(Exception):
    pass


class Interrupt(keras.callbacks.Callback):
    def __init__(self, where: str, epoch: int) -> None:
        super().__init__()
        self.where, self.epoch, self.now = where, epoch, -1

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        self.now = epoch
        if (self.where, epoch) == ("epoch_begin", self.epoch):
            raise Interrupted

    def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
        if (self.where, self.now, batch) == ("batch", self.epoch, 1):
            raise Interrupted

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        if (self.where, epoch) == ("epoch_end", self.epoch):
            raise Interrupted


def data() -> tuple[np.ndarray, ...]:
    rng = np.random.RandomState(0)
    x = rng.normal(size=(64, 3)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5]], "float32")).astype("float32")
    return x[:48], y[:48], x[48:], y[48:]


def run(
    order: tuple[str, ...],
    backup_dir: Path,
    interrupt: tuple[str, int] | None = None,
    monitor: str = "val_loss",
) -> dict[str, Any]:
    """A fresh model and callbacks (as a new process would build them), one ``fit``."""
    keras.utils.set_random_seed(0)
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate="0.2 * 0.9 ** epoch")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer, "mse")
    plateau = hs.ReduceOnPlateau(optimizer, monitor=monitor, factor=0.5, patience=1, min_delta=1e9)
    made = {
        "backup": keras.callbacks.BackupAndRestore(str(backup_dir)),
        "plateau": plateau,
        "log": hs.callbacks.LogHyperparameters(optimizer),
    }
    callbacks = [made[name] for name in order]
    if interrupt is not None:
        callbacks.append(Interrupt(*interrupt))
    x, y, vx, vy = data()
    history = model.fit(
        x,
        y,
        batch_size=16,
        epochs=EPOCHS,
        validation_data=(vx, vy),
        shuffle=False,
        verbose=0,
        callbacks=callbacks,
    )
    lr = optimizer.hyperparameters["learning_rate"]
    return {
        "weights": [keras.ops.convert_to_numpy(w) for w in model.weights],
        "learning_rate": keras.ops.convert_to_numpy(lr.value),
        "state": [keras.ops.convert_to_numpy(v) for v in plateau.variables],
        "history": history.history,
        "epochs": history.epoch,
    }


def assert_same_run(resumed: dict[str, Any], reference: dict[str, Any]) -> None:
    for got, want in zip(resumed["weights"], reference["weights"], strict=True):
        assert got.tobytes() == want.tobytes()
    assert resumed["learning_rate"].tobytes() == reference["learning_rate"].tobytes()
    for got, want in zip(resumed["state"], reference["state"], strict=True):
        assert got.tobytes() == want.tobytes()
    # the epochs the second run trained log what the uninterrupted run logged for them
    done = len(resumed["epochs"])
    assert resumed["epochs"] == reference["epochs"][EPOCHS - done :]
    for key, values in resumed["history"].items():
        assert values == reference["history"][key][EPOCHS - done :], key


_references: dict[tuple[str, ...], dict[str, Any]] = {}


def reference(order: tuple[str, ...], tmp_path_factory: Any) -> dict[str, Any]:
    if order not in _references:
        _references[order] = run(order, tmp_path_factory.mktemp("reference"))
    return _references[order]


def check(order: tuple[str, ...], point: tuple[str, int], tmp_path: Path, factory: Any) -> None:
    want = reference(order, factory)
    with pytest.raises(Interrupted):
        run(order, tmp_path, interrupt=point)
    assert_same_run(run(order, tmp_path), want)


ORDERS = list(itertools.permutations(NAMES))
GRID = [(order, point) for order in ORDERS for point in POINTS]
#: in the fast suite: each callback first once, each interruption point once; the backup
#: listed before the plateau (the order that lost the decision) twice
FAST = [
    (("backup", "plateau", "log"), POINTS[0]),
    (("log", "backup", "plateau"), POINTS[1]),
    (("plateau", "log", "backup"), POINTS[2]),
]


@pytest.mark.parametrize(("order", "point"), FAST, ids=str)
def test_resume_is_exact_in_any_order(order, point, tmp_path, tmp_path_factory):
    check(order, point, tmp_path, tmp_path_factory)


@pytest.mark.slow
@pytest.mark.parametrize(("order", "point"), [c for c in GRID if c not in FAST], ids=str)
def test_resume_is_exact_in_every_order_at_every_point(order, point, tmp_path, tmp_path_factory):
    check(order, point, tmp_path, tmp_path_factory)


def test_a_training_metric_after_a_backup_fails_before_anything_is_saved(tmp_path):
    # `loss` is known only at epoch end, after the backup listed first saved the epoch
    with pytest.raises(InvalidArgumentError, match="List ReduceOnPlateau before BackupAndRestore"):
        run(("backup", "plateau"), tmp_path, monitor="loss")
    assert not any(tmp_path.iterdir())


def test_a_training_metric_before_the_backup_resumes_exactly(tmp_path, tmp_path_factory):
    order = ("plateau", "backup")
    want = run(order, tmp_path_factory.mktemp("reference"), monitor="loss")
    with pytest.raises(Interrupted):
        run(order, tmp_path, interrupt=POINTS[0], monitor="loss")
    assert_same_run(run(order, tmp_path, monitor="loss"), want)


def test_model_checkpoint_listed_first_saves_the_plateau_decision(tmp_path):
    # the checkpoint of epoch 2 (ModelCheckpoint listed before the plateau) holds the
    # plateau's epoch-2 decision: loading it and going on equals the uninterrupted run
    def build() -> tuple[Any, Any, Any]:
        keras.utils.set_random_seed(0)
        optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.2)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile(optimizer, "mse")
        plateau = hs.ReduceOnPlateau(optimizer, factor=0.5, patience=1, min_delta=1e9)
        return model, optimizer, plateau

    x, y, vx, vy = data()
    fit = {"batch_size": 16, "validation_data": (vx, vy), "shuffle": False, "verbose": 0}
    model, optimizer, plateau = build()
    model.fit(x, y, epochs=EPOCHS, callbacks=[plateau], **fit)
    want = [keras.ops.convert_to_numpy(w) for w in model.weights + plateau.variables]

    path = str(tmp_path / "epoch.weights.h5")
    model, optimizer, plateau = build()
    checkpoint = keras.callbacks.ModelCheckpoint(path, save_weights_only=True)
    model.fit(x, y, epochs=3, callbacks=[checkpoint, plateau], **fit)
    model, optimizer, plateau = build()
    optimizer.build(model.trainable_variables)
    model.load_weights(path)
    model.fit(x, y, initial_epoch=3, epochs=EPOCHS, callbacks=[plateau], **fit)
    got = [keras.ops.convert_to_numpy(w) for w in model.weights + plateau.variables]
    for a, b in zip(got, want, strict=True):
        assert a.tobytes() == b.tobytes()
