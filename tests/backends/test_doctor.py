"""Units of hyperstep.backends.doctor: the trace's records, ``user_source`` and the backend's
doctor module (``tracer``), in each backend's pass."""

from __future__ import annotations

import dataclasses
import inspect
import json
import os

import keras
import pytest

from hyperstep.backends.doctor import tracer
from hyperstep.backends.traces import Trace, TracedOp, user_source

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


def test_user_source_skips_libraries_and_names_the_users_line() -> None:
    here = inspect.currentframe()
    assert here is not None
    line = here.f_lineno
    frames = [
        ("<frozen importlib>", 1),
        (json.__file__, 10),
        (keras.__file__, 5),
        (inspect.getfile(tracer), 40),
        (__file__, line),
    ]
    found = user_source(frames)
    assert found == f"{__file__}:{line}: `line = here.f_lineno`"
    assert user_source(frames[:4]) is None
    assert user_source([]) is None


def test_user_source_without_a_readable_line(tmp_path) -> None:
    path = os.path.join(tmp_path, "gone.py")
    assert user_source([(path, 3)]) == f"{path}:3"


def test_traced_op_and_trace_defaults() -> None:
    op = TracedOp("stop_gradient", "eqn 1", None, (1,), ((2, True),))
    assert op.stops is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.type = "x"  # type: ignore[misc]
    trace = Trace(ops=[op], sources={10: 1}, loss=2)
    assert trace.centred == set() and trace.keep == []
    assert Trace([], {}, 0).centred is not trace.centred  # a set of its own
