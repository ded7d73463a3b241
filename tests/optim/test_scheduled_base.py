"""The units of hyperstep.optim.scheduled_base, through ``hs.scheduled``: the hyperparameter
table, ``resolve`` (a group's value for its variables), the nested config and its round
trip, and ``check_arguments``'s refusals naming argument and value."""

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.optim import _introspect

K = keras.optimizers


def number(x) -> float:
    return float(keras.ops.convert_to_numpy(keras.ops.convert_to_tensor(x)))


def test_hyperparameters_hold_every_numeric_name_and_each_groups_own() -> None:
    opt = hs.scheduled(
        K.Adam(), beta_1="0.9", groups=[hs.Group("head", match="*head*", learning_rate=0.5)]
    )
    names = _introspect.numeric_names(K.Adam)
    on = {"learning_rate", "beta_1", "beta_2", "epsilon", "ema_momentum"}  # the others: None
    assert on <= set(names)
    assert set(opt.hyperparameters) == {*on, "head/learning_rate"}
    assert list(opt.groups) == ["head"] and opt.groups["head"].name == "head"
    assert opt.hyperparameters is not opt.hyperparameters  # a copy each time


def test_resolve_gives_a_groups_variable_the_groups_value() -> None:
    opt = hs.scheduled(
        K.SGD(learning_rate=0.1),
        groups=[hs.Group("head", match="*head*", learning_rate="0.5 + step")],
    )
    body, head = keras.Variable(np.ones(2), name="body"), keras.Variable(np.ones(2), name="head")
    seen, original = {}, opt.update_step

    def update_step(gradient, variable, learning_rate):
        seen[variable.name.split(":")[0]] = number(opt.resolve("learning_rate", variable))
        return original(gradient, variable, learning_rate)

    opt.update_step = update_step
    opt.clock.step.assign(2)
    opt.apply([np.ones(2, "float32")] * 2, [body, head])
    assert seen == {"body": pytest.approx(0.1), "head": pytest.approx(2.5)}
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
