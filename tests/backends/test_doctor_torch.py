"""Units of hyperstep.backends.doctor_torch, the doctor's torch half: snapshots, the one-pass
build, and each variable's gradient kind (``none``, ``zero``, ``nonzero``) against the loss's
closed form (the whole diagnosis: tests/doctor)."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from hyperstep.backends import doctor_torch as backend
from hyperstep.backends.traces import Trace

pytestmark = pytest.mark.backend("torch")


def _variables():
    return [
        keras.Variable(np.full((2,), v, "float32"), name=n)
        for n, v in (("used", 1.0), ("zeroed", 2.0), ("unused", 3.0))
    ]


def _loss(used, zeroed):
    def compute(batch):
        return ops.sum(used * batch) + ops.sum(zeroed * 0.0 * batch)

    return compute


def test_gradient_kinds_match_the_loss() -> None:
    used, zeroed, unused = _variables()
    batch = ops.convert_to_tensor(np.array([1.0, 2.0], "float32"))
    loss, kinds = backend.gradient_kinds(_loss(used, zeroed), batch, [used, zeroed, unused], [])
    assert float(ops.convert_to_numpy(loss)) == 3.0  # 1*1 + 1*2
    by_name = {v.name: kinds[id(backend.underlying(v))] for v in (used, zeroed, unused)}
    assert by_name == {"used": "nonzero", "zeroed": "zero", "unused": "none"}


def test_snapshot_and_restore_each_variable_once() -> None:
    used, zeroed, _ = _variables()
    saved = backend.snapshot([used, zeroed, used])
    assert len(saved) == 2
    used.assign(np.zeros(2, "float32"))
    zeroed.assign(np.ones(2, "float32"))
    backend.restore(saved)
    np.testing.assert_array_equal(backend.to_numpy(used), [1.0, 1.0])
    np.testing.assert_array_equal(backend.to_numpy(zeroed), [2.0, 2.0])
    assert backend.dtype_name(used) == "float32"


def test_build_runs_the_loss_once_and_puts_the_state_back() -> None:
    dense = keras.layers.Dense(1, kernel_initializer="ones")
    counter = keras.Variable(0.0, trainable=False)
    calls = []

    def compute(batch):
        calls.append(1)
        counter.assign(counter + 1.0)
        return ops.sum(dense(batch))

    backend.build(compute, np.ones((1, 2), "float32"), [counter])
    assert calls == [1] and dense.built
    assert float(backend.to_numpy(counter)) == 0.0
    np.testing.assert_array_equal(backend.to_numpy(dense.kernel), np.ones((2, 1)))


def test_raw_variables_are_parameters_and_tensors_that_require_grad() -> None:
    import torch

    parameter = torch.nn.Parameter(torch.ones(2))
    tensor = torch.ones(2, requires_grad=True)
    assert backend.is_raw_variable(parameter) and backend.raw_kind(parameter) == "torch Parameter"
    assert backend.is_raw_variable(tensor) and backend.raw_kind(tensor) == "torch tensor"
    assert backend.raw_trainable(tensor)
    assert not backend.is_raw_variable(torch.ones(2))


def test_trace_form() -> None:
    used, zeroed, unused = _variables()
    batch = ops.convert_to_tensor(np.array([1.0, 2.0], "float32"))
    found = backend.trace(_loss(used, zeroed), batch, [used, zeroed, unused], [])
    assert isinstance(found, Trace) and found.ops
    assert set(found.sources) <= {id(backend.underlying(v)) for v in (used, zeroed, unused)}
