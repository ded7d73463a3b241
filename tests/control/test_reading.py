"""Units of hyperstep.control.reading: ``collect``, ``read_all`` and fit's shared helpers."""

from __future__ import annotations

from types import SimpleNamespace

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.control.reading import collect, infer_steps_per_epoch, read_all, savers_before
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


@pytest.mark.parametrize(
    ("known", "params", "expected"),
    [
        (None, {"steps": 7}, 7),
        (3, {"steps": 7}, 3),
        (None, {"steps": None}, None),
        (None, {"steps": 0}, None),
        (None, None, None),
        (None, {"steps": 2.0}, None),
    ],
)
def test_infer_steps_per_epoch_fills_only_an_unknown_count(known, params, expected) -> None:
    clock = SimpleNamespace(steps_per_epoch=known)
    infer_steps_per_epoch(clock, params)
    assert clock.steps_per_epoch == expected


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
