"""The units of hyperstep.control.driven: the table a Remote drives a replaced schedule
through under ``fit(steps_per_execution=k)``, against a NumPy reading of its formula."""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest
from keras import ops

import hyperstep as hs
from hyperstep.control import driven

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")


def _reference(override: float, table: np.ndarray, start: int, step: int) -> float:
    """``override if set else table[step - start] if 0 <= step - start < N else nan``."""
    if not math.isnan(override):
        return override
    index = step - start
    return float(table[index]) if 0 <= index < len(table) else math.nan


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def test_a_new_table_is_nan_from_no_step_and_not_trainable() -> None:
    layer = keras.layers.Layer()
    table, start = driven.new_table(layer, 4)
    assert tuple(table.shape) == (4,) and str(table.dtype) == "float32"
    assert np.isnan(ops.convert_to_numpy(table)).all()
    assert int(ops.convert_to_numpy(start)) == -1
    assert not table.trainable and not start.trainable
    assert {table.name, start.name} == {driven.TABLE, driven.START}


@pytest.mark.parametrize("override", [math.nan, 0.25])
def test_override_at_reads_the_table_inside_its_steps_only(override: float) -> None:
    layer = keras.layers.Layer()
    table, start = driven.new_table(layer, 3)
    values = np.array([0.1, 0.2, 0.3], dtype="float32")
    table.assign(values)
    start.assign(5)
    for step in range(2, 11):
        got = float(
            ops.convert_to_numpy(
                driven.override_at(
                    ops.convert_to_tensor(np.float32(override)),
                    (table, start),
                    ops.convert_to_tensor(step, "int32"),
                )
            )
        )
        assert _same(got, _reference(override, values, 5, step)), (step, got)


def test_override_at_takes_an_array_of_steps() -> None:
    layer = keras.layers.Layer()
    table, start = driven.new_table(layer, 2)
    table.assign(np.array([1.5, 2.5], dtype="float32"))
    start.assign(1)
    steps = np.arange(5, dtype="int32")
    got = ops.convert_to_numpy(
        driven.override_at(ops.convert_to_tensor(np.float32(math.nan)), (table, start), steps)
    )
    expected = [_reference(math.nan, np.array([1.5, 2.5]), 1, int(s)) for s in steps]
    assert all(_same(float(a), b) for a, b in zip(got, expected, strict=True)), got


def test_an_armed_hyperparameter_reads_the_table_and_a_set_value_wins() -> None:
    hp = hs.Hyperparameter(0.5, name="lr")
    table, start = hp.arm(4)
    assert hp.arm(2) == (table, start)  # the table made before holds enough steps
    table.assign(np.array([0.1, 0.2, 0.3, 0.4], dtype="float32"))
    start.assign(3)
    assert float(ops.convert_to_numpy(hp.override_at(4))) == np.float32(0.2)
    assert math.isnan(float(ops.convert_to_numpy(hp.override_at(7))))
    hp.set(0.05)
    assert float(ops.convert_to_numpy(hp.override_at(4))) == np.float32(0.05)
