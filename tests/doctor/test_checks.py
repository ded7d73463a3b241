"""The units of hyperstep.diagnosis.checks: each gradient rule on hand-made facts (variables
with a stated gradient, a hand-made trace of the loss), ``prune``'s root causes and
``run_checks``; each rule of a variable's own facts on hand-made facts (TensorFlow's pass for
the raw ``tf.Variable``), and ``weight_call``, the ``add_weight`` line a fix suggests, rebuilt
from the variable's own value, dtype and trainability. The end-to-end cases, one model per
code, are in tests/doctor/test_codes.py."""

import keras
import numpy as np
import tensorflow as tf

from hyperstep.backends.traces import Trace, TracedOp
from hyperstep.diagnosis import checks, probe
from hyperstep.diagnosis.paths import TraceFacts
from hyperstep.diagnosis.probe import Binding, Facts, LearningRate, StaleFact, VariableFact
from hyperstep.diagnosis.report import Finding


class Mine(keras.layers.Layer):
    """The user's own layer (not a Keras class)."""


def fact(path, gradient, trainable=True, dtype="float32", origin="model") -> VariableFact:
    variable = keras.Variable(1.0 if dtype.startswith("float") else 1, dtype=dtype, name=path)
    return VariableFact(path, variable, origin, None, Mine(), trainable, gradient)


def facts(variables, ops=(), sources=None, centred=(), **kwargs) -> Facts:
    found = Facts(
        variables=list(variables), loss=1.0,
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
    nameless = TracedOp("Round", "model/Round", None, (1,), ((2, True),), stops=True)
    found = checks.check_blocked(facts([w], [nameless, op("sum", [2], [(99, True)])], [(w, 1)]))
    assert found[0][1].what == "gradient blocked by Round (op 'model/Round')"  # no user line


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


def valued(path, value=1.0, *, trainable=True, dtype="float32", gradient="nonzero", origin="model",
         owner=None, binding=None) -> VariableFact:  # fmt: skip
    variable = keras.Variable(np.asarray(value, dtype), name=path.split("/")[-1])
    return VariableFact(path, variable, origin, binding, owner or Mine(), trainable, gradient)


def own_facts(variables, **kwargs) -> Facts:
    return Facts(
        variables=list(variables), loss=1.0,
        var_list_keys=kwargs.get("var_list_keys"), optimizer=None,
        optimizer_keys=kwargs.get("optimizer_keys"), rebound=kwargs.get("rebound", {}),
        stale=kwargs.get("stale", []), learning_rates=[], compute=None, batch=None,
    )  # fmt: skip


def test_weight_call_rebuilds_the_initializer_dtype_and_trainability() -> None:
    assert checks.weight_call(valued("s", np.zeros((2, 3))), "s") == (
        'self.add_weight(shape=(2, 3), initializer="zeros", name="s")'
    )
    assert checks.weight_call(valued("s", 1.0), "s") == (
        'self.add_weight(shape=(), initializer="ones", name="s")'
    )
    constant = checks.weight_call(valued("s", [0.5, 0.5], dtype="float16", trainable=False), "k")
    assert constant == (
        "self.add_weight(shape=(2,), initializer=keras.initializers.Constant(0.5), "
        'dtype="float16", trainable=False, name="k")'
    )
    assert 'initializer="glorot_uniform"' in checks.weight_call(valued("s", [0.1, 0.2]), "s")


def test_non_float_dtype_only_for_trainable_integers() -> None:
    found = checks.check_non_float_dtype(
        own_facts([valued("n", 1, dtype="int32"), valued("m", 1, dtype="int32", trainable=False),
               valued("w", 1.0)])
    )  # fmt: skip
    assert codes(found) == [("n", "non-float-dtype")] and 'dtype="int32"' in found[0][1].fix


def test_not_trainable_only_on_the_users_own_trainable_layer_with_a_gradient() -> None:
    frozen_layer = Mine()
    frozen_layer.trainable = False
    found = checks.check_not_trainable(
        own_facts([
            valued("mine", trainable=False),
            valued("none", trainable=False, gradient="none"),
            valued("keras", trainable=False, owner=keras.layers.Dense(1)),
            valued("frozen", trainable=False, owner=frozen_layer),
        ])
    )  # fmt: skip
    assert codes(found) == [("mine", "not-trainable")]
    assert "created by Mine" in found[0][1].what


def test_not_in_optimizer_for_the_var_list_and_for_an_optimizer_built_without_it() -> None:
    kept, left = valued("kept"), valued("left")
    in_loop = checks.check_not_in_optimizer(own_facts([kept, left], var_list_keys={kept.key}))
    assert codes(in_loop) == [("left", "not-in-optimizer")]
    assert "not in the var_list" in in_loop[0][1].what
    built = checks.check_not_in_optimizer(own_facts([kept, left], optimizer_keys={left.key}))
    assert codes(built) == [("kept", "not-in-optimizer")]
    assert "built without it" in built[0][1].what
    assert checks.check_not_in_optimizer(own_facts([kept, left])) == []  # nothing built yet


def test_expected_to_train_follows_the_var_list_for_model_variables() -> None:
    w, extra = valued("w"), valued("extra", origin="var_list")
    assert checks.expected_to_train(w, own_facts([w]))
    assert not checks.expected_to_train(w, own_facts([w], var_list_keys=set()))
    assert checks.expected_to_train(extra, own_facts([extra], var_list_keys=set()))
    assert not checks.expected_to_train(valued("n", 1, dtype="int32"), own_facts([]))


def test_untracked_says_where_and_what_to_type() -> None:
    layer = Mine(name="mine")
    raw = tf.Variable(np.zeros(3, "float32"))
    binding = Binding("mine/scale", raw, layer, "scale", "attribute", layer, "scale")
    untracked = VariableFact("mine/scale", raw, "attribute", binding, layer, True, "nonzero")
    listed_raw = tf.Variable(1.0)
    listed = VariableFact(
        "mine/scales/0", listed_raw, "attribute",
        Binding("mine/scales/0", listed_raw, layer, "scales/0", "list", [listed_raw], 0),
        layer, True, "none",
    )  # fmt: skip
    found = checks.check_untracked(own_facts([untracked, listed, valued("w")]))
    assert codes(found) == [("mine/scale", "untracked"), ("mine/scales/0", "untracked")]
    first, second = found[0][1], found[1][1]
    assert first.what == "tf.Variable in attribute `scale` of Mine `mine` is not tracked"
    assert 'self.scale = self.add_weight(shape=(3,), initializer="zeros", name="scale")' in (
        first.fix
    )
    assert "its gradient is non-zero" in first.why
    assert "list attribute `scales` (item 0)" in second.what and "[self.add_weight(" in second.fix
    rebound = checks.check_untracked(own_facts([untracked], rebound={123: binding}))
    assert "self.scale.assign(new_value)" in rebound[0][1].fix


def test_stale_in_optimizer_names_every_holder() -> None:
    old, new = keras.Variable(1.0), keras.Variable(2.0)
    stale = StaleFact("m/d/kernel", old, new, ("the optimizer", "the cached model.train_function"))
    found = checks.check_stale_in_optimizer(own_facts([], stale=[stale]))
    assert found[0][0] == probe.key(old)
    assert found[0][1].what.startswith(
        "the optimizer and the cached model.train_function still hold the old variable"
    )
    one = StaleFact("m/d/kernel", old, new, ("the optimizer",))
    assert (
        "the optimizer still holds"
        in checks.check_stale_in_optimizer(own_facts([], stale=[one]))[0][1].what
    )
