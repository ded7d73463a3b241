"""What an ``hs.scheduled`` optimizer holds (hyperstep.optim.scheduled): the hyperparameter
table, a group's value for its variables, the nested config and its round trip, and
``check_arguments``'s refusals naming argument and value; the wrapped optimizer serialized
as Keras serializes an instance, found again as Keras finds a class, and the errors for a
config that names none; which constructor arguments of Keras's optimizers are numeric
hyperparameters (against their documented signatures), and the refusal wording of
``check_names``."""

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError
from hyperstep.optim import scheduled
from hyperstep.optim.scheduled import inner_config, serialized, wrapped_class

K = keras.optimizers


def number(x) -> float:
    return float(keras.ops.convert_to_numpy(keras.ops.convert_to_tensor(x)))


def test_hyperparameters_hold_every_numeric_name_and_each_groups_own() -> None:
    opt = hs.scheduled(
        K.Adam(), beta_1="0.9", groups=[hs.Group("head", match="*head*", learning_rate=0.5)]
    )
    names = scheduled.numeric_names(K.Adam)
    on = {"learning_rate", "beta_1", "beta_2", "epsilon", "ema_momentum"}  # the others: None
    assert on <= set(names)
    assert set(opt.hyperparameters) == {*on, "head/learning_rate"}
    assert list(opt.groups) == ["head"] and opt.groups["head"].name == "head"
    assert opt.hyperparameters is not opt.hyperparameters  # a copy each time


def test_a_groups_variable_trains_with_the_groups_value() -> None:
    opt = hs.scheduled(
        K.SGD(learning_rate=0.1),
        groups=[hs.Group("head", match="*head*", learning_rate="0.5 + step")],
    )
    body, head = keras.Variable(np.ones(2), name="body"), keras.Variable(np.ones(2), name="head")
    opt.clock.step.assign(2)
    opt.apply([np.ones(2, "float32")] * 2, [body, head])
    np.testing.assert_allclose(head.numpy(), 1.0 - 2.5)  # SGD: w - lr * g, the group's lr
    np.testing.assert_allclose(body.numpy(), 1.0 - 0.1)


def test_the_config_nests_the_wrapped_optimizer_with_kerass_own_values() -> None:
    opt = hs.scheduled(K.Adam(beta_1=0.8, amsgrad=True), learning_rate="1e-3 * 0.5 ** step")
    config = opt.get_config()
    inner = config["optimizer"]
    assert inner["module"] == "keras.optimizers" and inner["class_name"] == "Adam"
    assert inner["config"]["beta_1"] == 0.8 and inner["config"]["amsgrad"] is True
    assert {"hyperparameters", "clock"} <= set(config)
    again = type(opt).from_config(config)
    again.clock.step.assign(3)
    opt.clock.step.assign(3)
    assert number(again.learning_rate) == pytest.approx(number(opt.learning_rate))
    assert number(again.learning_rate) == pytest.approx(1e-3 * 0.5**3)
    assert again.amsgrad is True and number(again.beta_1) == pytest.approx(0.8)


def test_features_left_off_read_none_and_the_others_their_value_now() -> None:
    opt = hs.scheduled(K.SGD(), momentum="0.5 + step / 100")
    assert opt.weight_decay is None and opt.clipnorm is None
    opt.clock.step.assign(10)
    assert number(opt.momentum) == pytest.approx(0.6)
    opt.clock.step.assign(30)
    assert number(opt.momentum) == pytest.approx(0.8)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        (
            {"advance": "yes"},
            TypeError,
            r"scheduled\(advance=.*Received: advance='yes'",
        ),
        ({"groups": "head"}, TypeError, r"list of `hs.Group`.*Received: groups='head'"),
        ({"groups": {"a": 1}}, TypeError, r"Received: groups=\{'a': 1\}"),
        ({"fused": 1}, TypeError, r"`hs.scheduled\(fused=\.\.\.\)`.*Received: fused=1"),
        ({"beta1": 0.9}, ValueError, r"Did you mean 'beta_1'\?.*Received: beta1=0\.9"),
    ],
)
def test_bad_arguments_are_refused_naming_them(kwargs, error, pattern) -> None:
    with pytest.raises(error, match=pattern):
        hs.scheduled(K.Adam(), **kwargs)


# ---- the nested config: serialized, wrapped_class, inner_config ---------------------------
@keras.saving.register_keras_serializable(package="test_scheduled_config")
class Halved(K.SGD):
    """A registered optimizer class of a user's."""


class Unregistered(K.SGD):
    pass


def test_a_builtin_is_serialized_under_its_public_name_as_keras_does() -> None:
    found = serialized(K.Adam, {"beta_1": 0.8})
    expected = keras.saving.serialize_keras_object(K.Adam(beta_1=0.8))
    assert {k: found[k] for k in ("module", "class_name", "registered_name")} == {
        k: expected[k] for k in ("module", "class_name", "registered_name")
    }
    assert found["config"] == {"beta_1": 0.8}
    # Keras's backend class (e.g. TensorFlow's Adam) is written as the public one
    backend_class = type(K.Adam())
    assert serialized(backend_class, {})["class_name"] == "Adam"


def test_a_registered_class_is_serialized_by_module_and_registered_name() -> None:
    found = serialized(Halved, {})
    assert found["module"] == Halved.__module__ and found["class_name"] == "Halved"
    assert found["registered_name"] == "test_scheduled_config>Halved"


def test_wrapped_class_finds_builtins_registered_and_custom_classes() -> None:
    assert wrapped_class(serialized(K.Adam, {}), None) is K.Adam
    assert wrapped_class(serialized(Halved, {}), None) is Halved
    nested = serialized(Unregistered, {})
    assert wrapped_class(nested, {"Unregistered": Unregistered}) is Unregistered
    with pytest.raises(InvalidArgumentError, match=r"'Unregistered'.*register it.*custom_objects"):
        wrapped_class(nested, None)
    with pytest.raises(InvalidArgumentError, match=r"module, class_name.*optimizer='Adam'"):
        wrapped_class("Adam", None)
    with pytest.raises(InvalidArgumentError, match=r"Cannot find the optimizer class 'Dense'"):
        wrapped_class({"module": "keras.optimizers", "class_name": "Dense"}, None)


def test_inner_config_is_the_nested_dict() -> None:
    assert inner_config({"config": {"beta_1": 0.8}}) == {"beta_1": 0.8}
    assert inner_config({}) == {}
    with pytest.raises(InvalidArgumentError, match=r"must be a dict\. Received: config=\[1\]"):
        inner_config({"config": [1]})


# ---- numeric hyperparameters: numeric_names, constructor_arguments, check_names -----------
BASE = ["weight_decay", "clipnorm", "clipvalue", "global_clipnorm", "ema_momentum",
        "loss_scale_factor"]  # fmt: skip


@pytest.mark.parametrize(
    ("cls", "own"),
    [
        (K.SGD, ["momentum"]),  # nesterov is a bool
        (K.Adam, ["beta_1", "beta_2", "epsilon"]),  # amsgrad is a bool
        (K.AdamW, ["beta_1", "beta_2", "epsilon"]),  # its weight_decay is a base one
        (K.RMSprop, ["rho", "momentum", "epsilon"]),  # centered is a bool
        (K.Adagrad, ["epsilon"]),  # initial_accumulator_value is structural
    ],
)
def test_numeric_names_are_the_learning_rate_the_own_numbers_then_the_base_ones(cls, own):
    assert scheduled.numeric_names(cls) == ["learning_rate", *own, *BASE]


def test_constructor_arguments_collect_the_bases_defaults() -> None:
    found = scheduled.constructor_arguments(K.SGD)
    assert found["momentum"] == 0.0 and found["nesterov"] is False
    assert found["gradient_accumulation_steps"] is None  # BaseOptimizer's
    assert "self" not in found and "kwargs" not in found


def test_check_names_words_each_kind_of_refusal() -> None:
    scheduled.check_names(K.Adam, {"beta_1": 0.8, "clipnorm": 1.0})  # accepted
    with pytest.raises(InvalidArgumentError) as caught:
        scheduled.check_names(K.Adam, {"amsgrad": True}, where="hs.StepOptimizer")
    text = str(caught.value)
    assert text.startswith("`hs.StepOptimizer(Adam(), amsgrad=...)`: `amsgrad` is not a numeric")
    assert "(it is a bool" in text and text.endswith("Received: amsgrad=True")
    assert f"Valid: {', '.join(scheduled.numeric_names(K.Adam))}." in text
    with pytest.raises(InvalidArgumentError, match=r"SGD has no hyperparameter 'zzz'\. Valid"):
        scheduled.check_names(K.SGD, {"zzz": 1})  # no close name: no suggestion
    with pytest.raises(InvalidArgumentError, match=r"'momentun'\. Did you mean 'momentum'\?"):
        scheduled.check_names(K.SGD, {"momentun": 1})
    with pytest.raises(InvalidArgumentError, match=r"cannot be scheduled: it only initializes"):
        scheduled.check_names(K.Adagrad, {"initial_accumulator_value": 0.2})
