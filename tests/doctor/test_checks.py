"""The units of hyperstep.diagnosis.checks: each gradient rule on hand-made facts (variables
with a stated gradient, a hand-made trace of the loss), ``prune``'s root causes and
``run_checks``. The end-to-end cases, one model per code, are in tests/doctor/test_codes.py."""

import keras

from hyperstep.backends.traces import Trace, TracedOp
from hyperstep.diagnosis import checks, probe
from hyperstep.diagnosis.optimizer_facts import LearningRate
from hyperstep.diagnosis.paths import TraceFacts
from hyperstep.diagnosis.probe import Facts, VariableFact
from hyperstep.diagnosis.report import Finding


class Mine(keras.layers.Layer):
    """The user's own layer (not a Keras class)."""


def fact(path, gradient, trainable=True, dtype="float32", origin="model") -> VariableFact:
    variable = keras.Variable(1.0 if dtype.startswith("float") else 1, dtype=dtype, name=path)
    return VariableFact(path, variable, origin, None, Mine(), trainable, gradient)


def facts(variables, ops=(), sources=None, centred=(), **kwargs) -> Facts:
    found = Facts(
        model=None, variables=list(variables), loss=1.0, custom_loop=False,
        var_list_keys=kwargs.get("var_list_keys"), optimizer=kwargs.get("optimizer"),
        optimizer_keys=None, rebound={}, stale=[],
        learning_rates=kwargs.get("learning_rates", []), compute=None, batch=None,
        problem=kwargs.get("problem"), empty_shape=kwargs.get("empty_shape"),
    )  # fmt: skip
    keyed = {probe.key(f.variable): value for f, value in sources or ()}
    found._graph = TraceFacts(Trace(list(ops), keyed, 99, set(centred)), probe.key)
    return found


def op(type_, inputs, outputs, stops=False) -> TracedOp:
    return TracedOp(type_, f"{type_}:0", "model.py:7", tuple(inputs), tuple(outputs), stops)


def codes(found) -> list[tuple[str, str]]:
    return [(finding.path, finding.code) for _, finding in found]


def test_unused_is_no_gradient_and_no_path() -> None:
    w, frozen = fact("w", "none"), fact("frozen", "none", trainable=False)
    assert codes(checks.check_unused(facts([w, frozen]))) == [("w", "unused")]
    # a custom loop that leaves it out of var_list does not expect it to train
    assert checks.check_unused(facts([w], var_list_keys=set())) == []
    # a path exists: not unused (check_blocked says why)
    read = facts([w], [op("mul", [1], [(99, True)])], [(w, 1)])
    assert checks.check_unused(read) == []


def test_blocked_names_the_op_and_its_fix() -> None:
    w = fact("w", "none")
    found = checks.check_blocked(
        facts([w], [op("Round", [1], [(2, True)], stops=True), op("sum", [2], [(99, True)])],
              [(w, 1)])
    )  # fmt: skip
    assert codes(found) == [("w", "blocked")]
    finding = found[0][1]
    assert finding.what == "gradient blocked by Round (created at model.py:7)"
    assert "straight-through estimator" in finding.fix
    unknown = checks.check_blocked(
        facts([w], [op("Mystery", [1], [(2, True)], stops=True), op("sum", [2], [(99, True)])],
              [(w, 1)])
    )  # fmt: skip
    assert "through differentiable ops, not Mystery" in unknown[0][1].fix


def test_zero_gradient_needs_an_open_path_not_through_a_normalization() -> None:
    w = fact("w", "zero")
    ops = [op("sub", [1], [(2, True)]), op("sum", [2], [(99, True)])]
    assert codes(checks.check_zero_gradient(facts([w], ops, [(w, 1)]))) == [("w", "zero-gradient")]
    assert checks.check_zero_gradient(facts([w], ops, [(w, 1)], centred={2})) == []
    assert checks.check_zero_gradient(facts([fact("v", "nonzero")], ops)) == []


def test_zero_learning_rate_now_and_next_step() -> None:
    sgd = keras.optimizers.SGD()
    zero = LearningRate("SGD/learning_rate", 3, 0.0, 0.0)
    warmup = LearningRate("SGD/learning_rate", 0, 0.0, 0.01)
    override = LearningRate("SGD/learning_rate", 0, 0.0, None)
    group = LearningRate("opt/head/learning_rate", 5, 0.0, 0.0)
    found = checks.check_zero_learning_rate(
        facts([], optimizer=sgd, learning_rates=[zero, warmup, override, group])
    )
    assert [f.path for _, f in found] == [zero.path, override.path, group.path]
    assert found[0][1].what == "the learning rate of SGD is 0 at step 3"
    assert found[2][1].what == "the learning rate of group 'head' of SGD is 0 at step 5"
    assert "hs.Group('head'" in found[2][1].fix


def test_the_batch_problems_come_alone() -> None:
    empty = checks.check_batch(facts([], problem="empty-batch", empty_shape=(0, 3)))
    assert codes(empty) == [("data", "empty-batch")] and "(0, 3)" in empty[0][1].what
    nan = facts([], problem="nan-loss")
    nan.loss = float("nan")
    assert codes(checks.check_batch(nan)) == [("loss", "nan-loss")]
    assert checks.check_batch(facts([])) == []


def test_prune_drops_what_a_root_cause_explains() -> None:
    def finding(path, code):
        return Finding(path, code, "what", "why", "fix")

    found = [
        (1, finding("a", "untracked")),
        (1, finding("a", "unused")),  # explained by untracked
        (2, finding("b", "non-float-dtype")),
        (2, finding("b", "not-trainable")),  # explained by non-float-dtype
        (3, finding("c", "unused")),  # nothing explains it
        (None, finding("SGD/learning_rate", "zero-learning-rate")),
    ]
    kept = checks.prune(found, facts([]))
    assert [(f.path, f.code) for f in kept] == [
        ("a", "untracked"), ("b", "non-float-dtype"), ("c", "unused"),
        ("SGD/learning_rate", "zero-learning-rate"),
    ]  # fmt: skip


def test_run_checks_runs_the_variable_and_gradient_rules_together() -> None:
    integer = fact("count", "skipped", dtype="int32")
    unused = fact("w", "none")
    found = checks.run_checks(facts([integer, unused]))
    assert [(f.path, f.code) for f in found] == [("count", "non-float-dtype"), ("w", "unused")]
