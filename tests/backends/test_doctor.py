"""Units of hyperstep.backends.doctor: ``tracer`` picks the running backend's half of the
doctor, and that half keeps one contract (snapshots, the one-pass build, each variable's
gradient kind ``none``/``zero``/``nonzero`` against the loss's closed form), in each backend's
pass. The trace's records and ``user_source``: tests/backends/test_traces.py."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from hyperstep.backends.doctor import tracer
from hyperstep.backends.traces import Trace

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")


def test_tracer_is_the_running_backend_module() -> None:
    module = tracer()
    assert (
        module.__name__
        == {
            "tensorflow": "hyperstep.backends.doctor_tf",
            "jax": "hyperstep.backends.doctor_jax",
            "torch": "hyperstep.backends.doctor_torch",
        }[keras.backend.backend()]
    )
    assert callable(module.trace)


# ---- the contract of each backend's half (snapshots, the one-pass build, gradient kinds) ----


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
    loss, kinds = tracer().gradient_kinds(_loss(used, zeroed), batch, [used, zeroed, unused], [])
    assert float(ops.convert_to_numpy(loss)) == 3.0  # 1*1 + 1*2
    by_name = {v.name: kinds[id(tracer().underlying(v))] for v in (used, zeroed, unused)}
    # JAX gives zeros for an input the loss does not read (the trace says it has no path)
    none = "zero" if keras.backend.backend() == "jax" else "none"
    assert by_name == {"used": "nonzero", "zeroed": "zero", "unused": none}


def test_snapshot_and_restore_each_variable_once() -> None:
    used, zeroed, _ = _variables()
    saved = tracer().snapshot([used, zeroed, used])
    assert len(saved) == 2
    used.assign(np.zeros(2, "float32"))
    zeroed.assign(np.ones(2, "float32"))
    tracer().restore(saved)
    np.testing.assert_array_equal(tracer().to_numpy(used), [1.0, 1.0])
    np.testing.assert_array_equal(tracer().to_numpy(zeroed), [2.0, 2.0])
    assert tracer().dtype_name(used) == "float32"


def test_build_runs_the_loss_once_and_puts_the_state_back() -> None:
    dense = keras.layers.Dense(1, kernel_initializer="ones")
    counter = keras.Variable(0.0, trainable=False)
    calls = []

    def compute(batch):
        calls.append(1)
        counter.assign(counter + 1.0)
        return ops.sum(dense(batch))

    tracer().build(compute, np.ones((1, 2), "float32"), [counter])
    assert calls == [1] and dense.built
    assert float(tracer().to_numpy(counter)) == 0.0
    np.testing.assert_array_equal(tracer().to_numpy(dense.kernel), np.ones((2, 1)))


def test_trace_records_the_ops_from_the_variables() -> None:
    used, zeroed, unused = _variables()
    batch = ops.convert_to_tensor(np.array([1.0, 2.0], "float32"))
    backend = tracer()
    found = backend.trace(_loss(used, zeroed), batch, [used, zeroed, unused], [])
    assert isinstance(found, Trace) and found.ops
    sources = {id(backend.underlying(v)) for v in (used, zeroed, unused)}
    if keras.backend.backend() == "jax":
        assert set(found.sources) == sources
    else:  # TensorFlow's graph captures, and torch's autograd reaches, the variables read
        assert {id(backend.underlying(v)) for v in (used, zeroed)} <= set(found.sources)
        assert set(found.sources) <= sources
