"""Units of hyperstep.backends.fast_paths: each fast form equals its ``keras.ops`` form where
it applies and is ``None`` (the caller's general path) where it does not."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from hyperstep.backends.fast_paths import (
    add_one_in_place,
    fast_value,
    full_float32,
    functional_cond,
    host_int,
    lazy_where,
    raw,
    read_once,
)
from hyperstep.schedules.language import parse

both = pytest.mark.backend("tensorflow", "torch")
torch_only = pytest.mark.backend("torch")


@both
def test_read_once_and_raw_hold_the_variable_value() -> None:
    variable = keras.Variable(3.5, trainable=False)
    assert float(ops.convert_to_numpy(read_once(variable))) == 3.5
    assert float(keras.ops.convert_to_numpy(raw(variable))) == 3.5


@pytest.mark.backend("tensorflow")
def test_off_torch_the_torch_forms_are_none() -> None:
    variable = keras.Variable(1, dtype="int64", trainable=False)
    step = ops.convert_to_tensor([1.0], dtype="float32")
    assert host_int(variable) is None and full_float32(step, 2.0) is None
    hp = [keras.Variable(1.0), keras.Variable(float("nan"))]
    assert fast_value(parse("0.5"), step, *hp) is None


@pytest.mark.backend("tensorflow")
def test_a_traced_read_once_is_one_read_and_cond_stays_functional() -> None:
    import tensorflow as tf

    variable = keras.Variable(2.0)

    @tf.function
    def step(x):
        value = read_once(variable)
        return value * value + value, functional_cond(x > 0, lambda: x * value, lambda: x)

    graph = step.get_concrete_function(tf.TensorSpec((), tf.float32)).graph
    types = [op.type for op in graph.get_operations()]
    assert types.count("ReadVariableOp") == 1
    (cond,) = [op for op in graph.get_operations() if op.type in ("If", "StatelessIf")]
    assert cond.get_attr("_lower_using_switch_merge") is False
    assert [float(v) for v in step(tf.constant(3.0))] == [6.0, 6.0]
    assert float(step(tf.constant(-1.0))[1]) == -1.0


@pytest.mark.backend("tensorflow")
def test_tensorflow_add_one_in_place_is_one_assign_add_op() -> None:
    import tensorflow as tf

    variable = keras.Variable(1, dtype="int64", trainable=False)
    add_one_in_place(variable)
    assert int(variable.numpy()) == 2

    @tf.function
    def step():
        add_one_in_place(variable)

    graph = step.get_concrete_function().graph
    types = [op.type for op in graph.get_operations()]
    assert types.count("AssignAddVariableOp") == 1 and "ReadVariableOp" not in types
    step()
    assert int(variable.numpy()) == 3
    with keras.StatelessScope():
        assert add_one_in_place(variable) is None
    assert int(variable.numpy()) == 3


@both
def test_lazy_where_takes_the_branch_of_pred() -> None:
    x = ops.convert_to_tensor(3.0)
    assert float(lazy_where(ops.greater(x, 0.0), lambda: x * 2, lambda: x - 1)) == 6.0
    assert float(lazy_where(ops.less(x, 0.0), lambda: x * 2, lambda: x - 1)) == 2.0


@pytest.mark.backend("jax")
def test_jax_lazy_where_runs_one_branch_on_an_array_and_a_cond_when_traced() -> None:
    # on an array (eagerly, in a StatelessScope) a Python if: a lax.cond would trace both
    # branches and compile them at every call
    import jax

    called: list[str] = []

    def where(x):
        on = lambda: called.append("on") or x * 2  # noqa: E731
        off = lambda: called.append("off") or x - 1  # noqa: E731
        return lazy_where(ops.greater(x, 0.0), on, off)

    assert float(where(ops.convert_to_tensor(3.0))) == 6.0 and called == ["on"]
    called.clear()
    with keras.StatelessScope():
        assert float(where(ops.convert_to_tensor(-3.0))) == -4.0 and called == ["off"]
    called.clear()
    assert float(jax.jit(where)(3.0)) == 6.0 and sorted(called) == ["off", "on"]


@torch_only
def test_torch_add_one_in_place_and_host_int() -> None:
    variable = keras.Variable(4, dtype="int64", trainable=False)
    before = raw(variable)
    assert int(add_one_in_place(variable)) == 5
    assert raw(variable) is before  # in place
    assert host_int(variable) == 5 and type(host_int(variable)) is int
    with keras.StatelessScope():
        assert add_one_in_place(variable) is None and host_int(variable) is None


@torch_only
def test_torch_full_float32_is_keras_full() -> None:
    import torch

    step = torch.arange(3, dtype=torch.float32)
    got = full_float32(step, 0.1)
    want = ops.full(ops.shape(step), 0.1, dtype="float32")
    assert got.dtype == torch.float32 and torch.equal(got, want)
    assert full_float32(1.0, 0.1) is None


@torch_only
def test_torch_fast_value_is_the_keras_ops_form_bitwise() -> None:
    import torch

    schedule = parse("0.1 * (1 - step / 7)")
    step = torch.arange(10, dtype=torch.float32)
    scale = keras.Variable(0.3, trainable=False)
    override = keras.Variable(float("nan"), trainable=False)
    want = ops.where(ops.isnan(override.value), schedule(step) * scale.value, override.value)
    got = fast_value(schedule, step, scale, override)
    np.testing.assert_array_equal(got.numpy(), ops.convert_to_numpy(want))
    override.assign(0.25)
    assert torch.equal(fast_value(schedule, step, scale, override), torch.full((10,), 0.25))
    assert fast_value(schedule, step.double(), scale, override) is None
