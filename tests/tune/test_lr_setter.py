"""The units of hyperstep.tune.lr_setter: ``setter`` writes a learning rate where the train
step reads it (a plain optimizer's variable, a hyperstep override, every group and
sub-optimizer at its ratio), and refuses what it cannot set, naming the value."""

import keras
import pytest

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError
from hyperstep.tune.lr_setter import setter


def value(x) -> float:
    return float(keras.ops.convert_to_numpy(x))


class Multi(keras.optimizers.Optimizer):
    """A MultiOptimizer's shape: sub-optimizers in ``optimizers``."""

    def __init__(self, optimizers):
        super().__init__(learning_rate=1.0)
        self.optimizers = optimizers


def test_a_plain_optimizer_gets_its_learning_rate_variable_set() -> None:
    sgd = keras.optimizers.SGD(0.05)
    found = setter(sgd, "learning_rate")
    assert found.current == pytest.approx(0.05) and found.variables == []
    found.set(0.3)
    assert value(sgd.learning_rate) == pytest.approx(0.3)


def test_through_a_loss_scale_wrapper_the_inner_optimizer_is_set() -> None:
    inner = keras.optimizers.Adam(1e-3)
    found = setter(keras.optimizers.LossScaleOptimizer(inner), "learning_rate")
    found.set(0.25)
    assert value(inner.learning_rate) == pytest.approx(0.25)


def test_sub_optimizers_keep_their_ratio_to_the_first() -> None:
    first, second = keras.optimizers.SGD(0.1), keras.optimizers.SGD(0.4)
    found = setter(Multi([first, second]), "learning_rate")
    assert found.current == pytest.approx(0.1)
    found.set(0.5)
    assert value(first.learning_rate) == pytest.approx(0.5)
    assert value(second.learning_rate) == pytest.approx(0.5 * 0.4 / 0.1)
    with pytest.raises(InvalidArgumentError, match=r"which is 0\.0\. Set a nonzero"):
        setter(Multi([keras.optimizers.SGD(0.0), keras.optimizers.SGD(0.4)]), "learning_rate")


def test_a_hyperstep_optimizer_overrides_the_main_value_and_scales_each_group() -> None:
    optimizer = hs.scheduled(
        keras.optimizers.SGD(),
        learning_rate=0.2,
        groups=[hs.Group("head", match="*head*", learning_rate=0.05)],
    )
    found = setter(optimizer, "learning_rate")
    assert found.current == pytest.approx(0.2)
    assert optimizer.clock.step in found.variables
    found.set(0.8)
    hyperparameters = optimizer.hyperparameters
    assert value(hyperparameters["learning_rate"].value) == pytest.approx(0.8)
    assert value(hyperparameters["head/learning_rate"].value) == pytest.approx(0.8 * 0.05 / 0.2)


def test_a_hyperparameter_object_is_set_directly() -> None:
    optimizer = hs.scheduled(keras.optimizers.SGD(), momentum=0.9)
    momentum = optimizer.hyperparameters["momentum"]
    found = setter(optimizer, momentum)
    assert found.hyperparameter is momentum and found.current == pytest.approx(0.9)
    found.set(0.5)
    assert value(momentum.value) == pytest.approx(0.5)


def test_bad_hyperparameters_are_refused_naming_them() -> None:
    with pytest.raises(InvalidTypeError, match=r"Received: hyperparameter=3"):
        setter(keras.optimizers.SGD(), 3)
    with pytest.raises(InvalidArgumentError, match=r"plain Adam.*hyperparameter='beta_1'"):
        setter(keras.optimizers.Adam(), "beta_1")
    with pytest.raises(InvalidArgumentError, match=r"Valid: \[.*'learning_rate'.*='lr'"):
        setter(hs.scheduled(keras.optimizers.SGD()), "lr")
    decaying = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    with pytest.raises(InvalidArgumentError, match=r"Received: learning_rate=ExponentialDecay"):
        setter(keras.optimizers.SGD(decaying), "learning_rate")
