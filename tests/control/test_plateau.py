"""The plateau rules as pure functions: each against its peer (Keras, torch, optax) or an
independent statement of the default rule, on plain tensors, with no controller around them."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from keras import ops

import hyperstep as hs
from hyperstep.control.plateau import (
    RULES,
    PlateauParams,
    PlateauState,
    default_rule,
    initial_state,
    keras_rule,
    optax_rule,
    torch_rule,
)

_spec = importlib.util.spec_from_file_location(
    "plateau_peers", Path(__file__).with_name("plateau_peers.py")
)
assert _spec is not None and _spec.loader is not None
peers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peers)

BASE = 0.1
SEQUENCES = peers.sequences()


def run(rule: Any, values: list[float], **params: Any) -> tuple[list[float], list[int]]:
    """``base * scale`` and ``reductions`` after each value, the state threaded by hand."""
    params = PlateauParams(**params, base=ops.convert_to_tensor(BASE, "float32"))
    state = initial_state()
    values_out, reductions = [], []
    for value in values:
        signed = ops.convert_to_tensor(params.sign * value, "float32")
        state = rule(state, signed, params)
        values_out.append(BASE * float(ops.convert_to_numpy(state.scale)))
        reductions.append(int(ops.convert_to_numpy(state.reductions)))
    return values_out, reductions


def assert_like_peer(got: tuple[list[float], list[int]], expected: list[float]) -> None:
    """Same values (float32), and the reductions at exactly the peer's updates."""
    values, reductions = got
    np.testing.assert_allclose(values, expected, rtol=1e-6)
    lowered = np.flatnonzero(np.diff([BASE, *expected]) < 0)
    counted = np.flatnonzero(np.diff([0, *reductions]) > 0)
    np.testing.assert_array_equal(counted, lowered)


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_keras_rule_reduces_where_keras_reduce_lr_on_plateau_does(name: str) -> None:
    values = SEQUENCES[name]
    expected = peers.keras_trajectory(values, BASE, factor=0.5, patience=1, cooldown=1, min_lr=0.01)
    got = run(keras_rule, values, factor=0.5, patience=1, cooldown=1, min_value=0.01)
    assert_like_peer(got, expected)


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_torch_rule_reduces_where_torch_reduce_lr_on_plateau_does(name: str) -> None:
    values = SEQUENCES[name]
    expected = peers.torch_trajectory(values, BASE, factor=0.5, patience=1, cooldown=1, min_lr=0.01)
    got = run(
        torch_rule, values, factor=0.5, patience=1, cooldown=1, min_value=0.01, min_delta=0.0,
        rtol=1e-4,
    )  # fmt: skip
    assert_like_peer(got, expected)


def test_torch_rule_in_max_mode_uses_the_signed_relative_threshold() -> None:
    values = [1.0 - v for v in SEQUENCES["cooldown_improvements"] + SEQUENCES["noisy"]]
    expected = peers.torch_trajectory(
        values, BASE, factor=0.5, patience=1, threshold=1e-3, mode="max"
    )
    got = run(torch_rule, values, factor=0.5, patience=1, min_delta=0.0, rtol=1e-3, sign=-1.0)
    assert_like_peer(got, expected)


OPTAX_CONFIGS = [
    {"factor": 0.5, "patience": 1, "cooldown": 2, "min_scale": 0.1},
    {"factor": 0.5, "patience": 0},  # optax's count == patience: reduces on an improvement
]


@pytest.mark.parametrize("config", OPTAX_CONFIGS, ids=str)
@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_optax_rule_reduces_where_optax_reduce_on_plateau_does(
    name: str, config: dict[str, Any]
) -> None:
    values = SEQUENCES[name]
    expected = peers.optax_trajectory(values, BASE, **config)
    assert_like_peer(run(optax_rule, values, **config, min_delta=0.0, rtol=1e-4), expected)


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_default_rule_follows_its_documented_statement(name: str) -> None:
    values = SEQUENCES[name]
    config = {"factor": 0.5, "patience": 2, "cooldown": 1, "min_value": 0.01}
    expected = peers.reference_default(values, BASE, **config)
    assert_like_peer(run(default_rule, values, **config), expected)


def test_a_rule_reads_its_inputs_and_changes_nothing() -> None:
    state = PlateauState(
        best=ops.convert_to_tensor(0.5, "float32"),
        wait=ops.convert_to_tensor(1, "int32"),
        cooldown=ops.convert_to_tensor(0, "int32"),
        scale=ops.convert_to_tensor(1.0, "float32"),
        reductions=ops.convert_to_tensor(0, "int32"),
    )
    before = [float(ops.convert_to_numpy(x)) for x in state]
    params = PlateauParams(factor=0.5, patience=2)
    # the second bad update reaches patience=2; torch reduces when the count exceeds it
    reduces = {default_rule: 1, keras_rule: 1, torch_rule: 0, optax_rule: 1}
    for rule in RULES.values():
        first = rule(state, ops.convert_to_tensor(0.6, "float32"), params)
        again = rule(state, ops.convert_to_tensor(0.6, "float32"), params)
        assert [float(ops.convert_to_numpy(x)) for x in state] == before
        assert [float(ops.convert_to_numpy(x)) for x in first] == [
            float(ops.convert_to_numpy(x)) for x in again
        ]
        assert int(ops.convert_to_numpy(first.reductions)) == reduces[rule], rule.__name__
        assert float(ops.convert_to_numpy(first.scale)) == 0.5 ** reduces[rule], rule.__name__


def test_a_non_finite_value_never_improves_nor_becomes_best() -> None:
    params = PlateauParams(factor=0.5, patience=5)
    for rule in RULES.values():
        state = rule(initial_state(), ops.convert_to_tensor(1.0, "float32"), params)
        for bad in (float("nan"), float("-inf")):
            state = rule(state, ops.convert_to_tensor(bad, "float32"), params)
        assert float(ops.convert_to_numpy(state.best)) == 1.0, rule.__name__
        assert int(ops.convert_to_numpy(state.wait)) == 2, rule.__name__


def test_the_default_floor_keeps_the_value_at_min_value_for_the_base_given() -> None:
    params = PlateauParams(factor=0.1, patience=0, min_value=0.02, base=0.5)
    state, values = initial_state(), []
    for _ in range(5):  # improves once, then reduces to 0.05, to the floor 0.02, then stays
        state = default_rule(state, ops.convert_to_tensor(1.0, "float32"), params)
        values.append(0.5 * float(ops.convert_to_numpy(state.scale)))
    np.testing.assert_allclose(values, [0.5, 0.05, 0.02, 0.02, 0.02], rtol=1e-6)
    assert int(ops.convert_to_numpy(state.reductions)) == 2


def test_a_rule_is_traced_once_for_a_whole_sequence() -> None:
    import tensorflow as tf

    traces = []

    @tf.function
    def step(state: PlateauState, value: Any) -> PlateauState:
        traces.append(1)
        return default_rule(state, value, PlateauParams(factor=0.5, patience=1))

    state = initial_state()
    for value in SEQUENCES["cooldown_improvements"]:
        state = step(state, tf.constant(value, tf.float32))
    assert len(traces) == 1
    assert int(state.reductions) == run(default_rule, SEQUENCES["cooldown_improvements"],
                                        factor=0.5, patience=1)[1][-1]  # fmt: skip


def test_each_compat_chooses_its_rule_once() -> None:
    hp = hs.Hyperparameter(BASE, name="learning_rate")
    for i, (compat, rule) in enumerate(RULES.items()):
        plateau = hs.ReduceOnPlateau(hp, compat=compat, mode="min", name=f"plateau{i}")
        assert plateau.rule is rule
    assert set(RULES) == {None, "keras", "torch", "optax"}
