"""The units of hyperstep.diagnosis.paths: ``TraceFacts`` classifies a variable's paths to
the loss on hand-made traces (values are ints, variables named by a key function), and the
op and path facts describe themselves."""

import numpy as np
import pytest

from hyperstep.backends.traces import Trace, TracedOp
from hyperstep.diagnosis.paths import PathFact, TraceFacts


def op(type_, inputs, outputs, stops=False, source=None) -> TracedOp:
    return TracedOp(type_, f"{type_} #{inputs}", source, tuple(inputs), tuple(outputs), stops)


def facts(ops, sources, loss=99, centred=()) -> TraceFacts:
    trace = Trace(list(ops), dict(sources), loss, set(centred))
    return TraceFacts(trace, key=lambda name: name)  # variables are their own keys here


def test_a_differentiable_chain_is_open_and_a_missing_source_unused() -> None:
    found = facts([op("mul", [1, 2], [(3, True)]), op("sum", [3], [(99, True)])], {"w": 1})
    assert found.path("w") == PathFact("open")
    assert found.path("absent") == PathFact("unused")


def test_a_stopping_op_blocks_and_is_named() -> None:
    ops = [op("stop_gradient", [1], [(3, True)], stops=True, source="me.py:3"),
           op("sum", [3], [(99, True)])]  # fmt: skip
    path = facts(ops, {"w": 1}).path("w")
    assert path.kind == "blocked" and path.blockers == (ops[0],)


def test_an_integer_output_on_the_way_to_the_loss_blocks_after_the_stopping_ops() -> None:
    ops = [
        op("argmax", [1], [(3, False)]),  # an integer result: carries no gradient
        op("round", [1], [(4, True)], stops=True),
        op("add", [3, 4], [(99, True)]),
    ]
    path = facts(ops, {"w": 1}).path("w")
    assert path.kind == "blocked" and [b.type for b in path.blockers] == ["round", "argmax"]


def test_a_value_that_never_reaches_the_loss_is_unused_unless_it_escapes() -> None:
    dead = [op("mul", [1], [(5, True)]), op("sum", [2], [(99, True)])]
    assert facts(dead, {"w": 1}).path("w").kind == "unused"
    escape = [op("numpy", [1], [], stops=True), op("sum", [2], [(99, True)])]
    path = facts(escape, {"w": 1}).path("w")  # left the graph for Python: say where
    assert path.kind == "blocked" and path.blockers[0].type == "numpy"


def test_an_open_path_wins_over_a_blocked_one() -> None:
    ops = [op("stop_gradient", [1], [(3, True)], stops=True), op("mul", [1, 3], [(99, True)])]
    assert facts(ops, {"w": 1}).path("w").kind == "open"


def test_normalized_is_every_open_path_passing_a_centred_value() -> None:
    ops = [op("sub", [1], [(3, True)]), op("sum", [3], [(99, True)])]
    assert facts(ops, {"w": 1}, centred={3}).normalized("w") is True
    assert facts(ops, {"w": 1}).normalized("w") is False
    bypass = [*ops[:1], op("mul", [1], [(4, True)]), op("add", [3, 4], [(99, True)])]
    assert facts(bypass, {"w": 1}, centred={3}).normalized("w") is False
    assert facts(ops, {}, centred={3}).normalized("w") is False  # not in the trace


@pytest.mark.backend("tensorflow", "jax", "torch")
def test_the_backends_own_trace_is_read_the_same_way() -> None:
    import keras

    from hyperstep.backends.doctor import tracer
    from hyperstep.diagnosis import probe

    a, b, c, d = (keras.Variable(float(i + 1)) for i in range(4))

    def compute(batch):
        x = keras.ops.convert_to_tensor(batch)
        return keras.ops.sum(
            a * x + keras.ops.stop_gradient(b) * x + keras.ops.round(d * x)
        )  # c: never read

    trace = tracer().trace(compute, np.array([1.0, 2.0], "float32"), [a, b, c, d], [])
    found = TraceFacts(trace, probe.key)
    assert found.path(a).kind == "open" and found.path(c).kind == "unused"
    assert found.path(b).kind == "blocked" and found.path(d).kind == "blocked"
    assert found.path(b).blockers[0].type in ("StopGradient", "stop_gradient", "detach")
    assert found.path(d).blockers[0].type in ("Round", "round")
    assert "test_paths.py" in (found.path(d).blockers[0].source or "")  # the user's line
