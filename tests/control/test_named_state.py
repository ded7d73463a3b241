"""Units of hyperstep.control.named_state: the hyperparameters' state saved by name in a
Keras variable store (a dict here)."""

from __future__ import annotations

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.control.named_state import (
    hyperstep_variables,
    load_by_name,
    load_numbered,
    save_by_name,
)


def _hp(value: float, name: str) -> hs.Hyperparameter:
    return hs.Hyperparameter(value, name=name)


def test_save_by_name_writes_key_colon_state_with_slashes_replaced() -> None:
    store: dict = {}
    lr = _hp(0.1, "lr")
    lr.scale.assign(0.5)
    save_by_name(store, {"lr": lr, "groups/head/lr": _hp(0.2, "x")})
    states = ("scale", "override", "cooldown_start", "cooldown_form")
    assert set(store) == {f"{k}:{s}" for k in ("lr", "groups:head:lr") for s in states}
    assert store["lr:scale"] == np.float32(0.5)
    assert np.isnan(store["lr:override"])


def test_load_by_name_restores_each_into_its_owner_whatever_the_order() -> None:
    store: dict = {}
    a, b = _hp(0.1, "a"), _hp(0.2, "b")
    a.scale.assign(0.25)
    b.override.assign(0.75)
    save_by_name(store, {"a": a, "b": b})
    a2, b2 = _hp(0.1, "a"), _hp(0.2, "b")
    load_by_name(store, {"b": b2, "a": a2}, "opt")
    assert float(a2.scale.numpy()) == 0.25 and np.isnan(float(a2.override.numpy()))
    assert float(b2.override.numpy()) == 0.75 and float(b2.scale.numpy()) == 1.0


def test_load_by_name_names_the_orphans_in_one_warning() -> None:
    store: dict = {}
    save_by_name(store, {"a": _hp(0.1, "a"), "gone": _hp(0.2, "gone")})
    with pytest.warns(UserWarning, match=r"'opt'.*\['gone/cooldown_form'.*belongs to no") as got:
        load_by_name(store, {"a": _hp(0.1, "a")}, "opt")
    assert len(got) == 1


def _vars(*values: float) -> list:
    return [keras.Variable(v) for v in values]


def test_load_numbered_assigns_the_own_variables() -> None:
    own = _vars(0.0, 0.0)
    load_numbered({"0": 1.5, "1": 2.5, "lr:scale": 1.0}, own, "opt")
    assert [float(v.numpy()) for v in own] == [1.5, 2.5]


@pytest.mark.parametrize(("own", "hint"), [(1, False), (0, True)])
def test_load_numbered_another_count_warns_as_keras_and_assigns_nothing(own, hint) -> None:
    mine = _vars(*[0.0] * own)
    with pytest.warns(
        UserWarning,
        match=rf"optimizer 'opt', because it has {own} variables "
        r"whereas the saved optimizer has 3",
    ) as got:
        load_numbered({"0": 1.0, "1": 1.0, "2": 1.0}, mine, "opt")
    assert ("not been called/built" in str(got[0].message)) is hint
    assert all(float(v.numpy()) == 0.0 for v in mine)


def test_hyperstep_variables_are_the_clocks_and_the_hyperparameters() -> None:
    lr = _hp(0.1, "lr")
    other = hs.Clock()
    found = hyperstep_variables(other, [lr])
    expected = {id(v) for v in [*other.variables, *lr.variables, *lr.clock.variables]}
    assert found == expected
    assert id(keras.Variable(1.0)) not in found
    assert hyperstep_variables(None, []) == set()
