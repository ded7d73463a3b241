"""The units of hyperstep.diagnosis.variable_checks (TensorFlow's pass for the raw
``tf.Variable``): each rule on hand-made facts, and ``weight_call``, the ``add_weight`` line a
fix suggests, rebuilt from the variable's own value, dtype and trainability."""

import keras
import numpy as np
import tensorflow as tf

from hyperstep.diagnosis import probe
from hyperstep.diagnosis import variable_checks as vc
from hyperstep.diagnosis.bindings import Binding
from hyperstep.diagnosis.probe import Facts, StaleFact, VariableFact


class Mine(keras.layers.Layer):
    """The user's own layer (not a Keras class)."""


def fact(path, value=1.0, *, trainable=True, dtype="float32", gradient="nonzero", origin="model",
         owner=None, binding=None) -> VariableFact:  # fmt: skip
    variable = keras.Variable(np.asarray(value, dtype), name=path.split("/")[-1])
    return VariableFact(path, variable, origin, binding, owner or Mine(), trainable, gradient)


def facts(variables, **kwargs) -> Facts:
    return Facts(
        model=None, variables=list(variables), loss=1.0, custom_loop=False,
        var_list_keys=kwargs.get("var_list_keys"), optimizer=None,
        optimizer_keys=kwargs.get("optimizer_keys"), rebound=kwargs.get("rebound", {}),
        stale=kwargs.get("stale", []), learning_rates=[], compute=None, batch=None,
    )  # fmt: skip


def codes(found) -> list[tuple[str, str]]:
    return [(finding.path, finding.code) for _, finding in found]


def test_weight_call_rebuilds_the_initializer_dtype_and_trainability() -> None:
    assert vc.weight_call(fact("s", np.zeros((2, 3))), "s") == (
        'self.add_weight(shape=(2, 3), initializer="zeros", name="s")'
    )
    assert vc.weight_call(fact("s", 1.0), "s") == (
        'self.add_weight(shape=(), initializer="ones", name="s")'
    )
    constant = vc.weight_call(fact("s", [0.5, 0.5], dtype="float16", trainable=False), "k")
    assert constant == (
        "self.add_weight(shape=(2,), initializer=keras.initializers.Constant(0.5), "
        'dtype="float16", trainable=False, name="k")'
    )
    assert 'initializer="glorot_uniform"' in vc.weight_call(fact("s", [0.1, 0.2]), "s")


def test_non_float_dtype_only_for_trainable_integers() -> None:
    found = vc.check_non_float_dtype(
        facts([fact("n", 1, dtype="int32"), fact("m", 1, dtype="int32", trainable=False),
               fact("w", 1.0)])
    )  # fmt: skip
    assert codes(found) == [("n", "non-float-dtype")] and 'dtype="int32"' in found[0][1].fix


def test_not_trainable_only_on_the_users_own_trainable_layer_with_a_gradient() -> None:
    frozen_layer = Mine()
    frozen_layer.trainable = False
    found = vc.check_not_trainable(
        facts([
            fact("mine", trainable=False),
            fact("none", trainable=False, gradient="none"),
            fact("keras", trainable=False, owner=keras.layers.Dense(1)),
            fact("frozen", trainable=False, owner=frozen_layer),
        ])
    )  # fmt: skip
    assert codes(found) == [("mine", "not-trainable")]
    assert "created by Mine" in found[0][1].what


def test_not_in_optimizer_for_the_var_list_and_for_an_optimizer_built_without_it() -> None:
    kept, left = fact("kept"), fact("left")
    in_loop = vc.check_not_in_optimizer(facts([kept, left], var_list_keys={kept.key}))
    assert codes(in_loop) == [("left", "not-in-optimizer")]
    assert "not in the var_list" in in_loop[0][1].what
    built = vc.check_not_in_optimizer(facts([kept, left], optimizer_keys={left.key}))
    assert codes(built) == [("kept", "not-in-optimizer")]
    assert "built without it" in built[0][1].what
    assert vc.check_not_in_optimizer(facts([kept, left])) == []  # nothing built yet


def test_expected_to_train_follows_the_var_list_for_model_variables() -> None:
    w, extra = fact("w"), fact("extra", origin="var_list")
    assert vc.expected_to_train(w, facts([w]))
    assert not vc.expected_to_train(w, facts([w], var_list_keys=set()))
    assert vc.expected_to_train(extra, facts([extra], var_list_keys=set()))
    assert not vc.expected_to_train(fact("n", 1, dtype="int32"), facts([]))


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
    found = vc.check_untracked(facts([untracked, listed, fact("w")]))
    assert codes(found) == [("mine/scale", "untracked"), ("mine/scales/0", "untracked")]
    first, second = found[0][1], found[1][1]
    assert first.what == "tf.Variable in attribute `scale` of Mine `mine` is not tracked"
    assert 'self.scale = self.add_weight(shape=(3,), initializer="zeros", name="scale")' in (
        first.fix
    )
    assert "its gradient is non-zero" in first.why
    assert "list attribute `scales` (item 0)" in second.what and "[self.add_weight(" in second.fix
    rebound = vc.check_untracked(facts([untracked], rebound={123: binding}))
    assert "self.scale.assign(new_value)" in rebound[0][1].fix


def test_stale_in_optimizer_names_every_holder() -> None:
    old, new = keras.Variable(1.0), keras.Variable(2.0)
    stale = StaleFact("m/d/kernel", old, new, ("the optimizer", "the cached model.train_function"))
    found = vc.check_stale_in_optimizer(facts([], stale=[stale]))
    assert found[0][0] == probe.key(old)
    assert found[0][1].what.startswith(
        "the optimizer and the cached model.train_function still hold the old variable"
    )
    one = StaleFact("m/d/kernel", old, new, ("the optimizer",))
    assert (
        "the optimizer still holds"
        in vc.check_stale_in_optimizer(facts([], stale=[one]))[0][1].what
    )
