"""Units of hyperstep.control.named_state: the hyperparameters' state saved by name in a
Keras variable store (a dict here)."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.control.named_state import SavedByName


def _hp(value: float, name: str) -> hs.Hyperparameter:
    return hs.Hyperparameter(value, name=name)


class Saved(SavedByName):
    """An optimizer's saving alone: its own variables ``own``, then hyperstep's."""

    def __init__(self, hyperparameters: dict, own: list | None = None) -> None:
        self.name, self.clock, self.own = "opt", hs.Clock(), own or []
        self.hyperparameters = hyperparameters

    @property
    def variables(self) -> list:
        hyperstep = [v for hp in self.hyperparameters.values() for v in hp.variables]
        return [*self.own, *self.clock.variables, *hyperstep]

    def _hs_named(self) -> dict:
        return self.hyperparameters


def test_save_by_name_writes_key_colon_state_with_slashes_replaced() -> None:
    store: dict = {}
    lr = _hp(0.1, "lr")
    lr.scale.assign(0.5)
    Saved({"lr": lr, "groups/head/lr": _hp(0.2, "x")}).save_own_variables(store)
    states = ("scale", "override", "cooldown_start", "cooldown_form")
    assert set(store) == {f"{k}:{s}" for k in ("lr", "groups:head:lr") for s in states}
    assert store["lr:scale"] == np.float32(0.5)
    assert np.isnan(store["lr:override"])


def test_load_by_name_restores_each_into_its_owner_whatever_the_order() -> None:
    store: dict = {}
    a, b = _hp(0.1, "a"), _hp(0.2, "b")
    a.scale.assign(0.25)
    b.override.assign(0.75)
    Saved({"a": a, "b": b}).save_own_variables(store)
    a2, b2 = _hp(0.1, "a"), _hp(0.2, "b")
    Saved({"b": b2, "a": a2}).load_own_variables(store)
    assert float(a2.scale.numpy()) == 0.25 and np.isnan(float(a2.override.numpy()))
    assert float(b2.override.numpy()) == 0.75 and float(b2.scale.numpy()) == 1.0


def test_load_by_name_names_the_orphans_in_one_warning() -> None:
    store: dict = {}
    Saved({"a": _hp(0.1, "a"), "gone": _hp(0.2, "gone")}).save_own_variables(store)
    with pytest.warns(UserWarning, match=r"'opt'.*\['gone/cooldown_form'.*belongs to no") as got:
        Saved({"a": _hp(0.1, "a")}).load_own_variables(store)
    assert len(got) == 1


def _vars(*values: float) -> list:
    return [keras.Variable(v) for v in values]


def test_own_variables_are_saved_numbered_without_the_clock_s_and_the_hyperparameters() -> None:
    store: dict = {}
    Saved({"lr": _hp(0.1, "lr")}, _vars(1.5, 2.5)).save_own_variables(store)
    assert (store["0"], store["1"]) == (1.5, 2.5)
    assert sorted(k for k in store if k.isdigit()) == ["0", "1"]


def test_load_numbered_assigns_the_own_variables() -> None:
    own = _vars(0.0, 0.0)
    Saved({"lr": _hp(0.1, "lr")}, own).load_own_variables({"0": 1.5, "1": 2.5, "lr:scale": 1.0})
    assert [float(v.numpy()) for v in own] == [1.5, 2.5]


@pytest.mark.parametrize(("own", "hint"), [(1, False), (0, True)])
def test_load_numbered_another_count_warns_as_keras_and_assigns_nothing(own, hint) -> None:
    mine = _vars(*[0.0] * own)
    with pytest.warns(
        UserWarning,
        match=rf"optimizer 'opt', because it has {own} variables "
        r"whereas the saved optimizer has 3",
    ) as got:
        Saved({}, mine).load_own_variables({"0": 1.0, "1": 1.0, "2": 1.0})
    assert ("not been called/built" in str(got[0].message)) is hint
    assert all(float(v.numpy()) == 0.0 for v in mine)


def test_hyperstep_variables_are_the_clocks_and_the_hyperparameters() -> None:
    lr = _hp(0.1, "lr")
    own = _vars(1.0)
    saved = Saved({"lr": lr}, own)
    saved.own = [*own, *lr.clock.variables]  # the hyperparameter's clock among them too
    assert [id(v) for v in saved._hs_keras_variables()] == [id(v) for v in own]
