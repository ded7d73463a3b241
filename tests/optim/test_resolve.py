"""The units of hyperstep.optim.resolve: ``Update`` fixes one step per update and looks
values up in it (a group's own first), ``keras_value`` hands Keras the hyperparameter at
that step, and ``value_and_complement`` rounds ``1 - c`` once from a constant's number."""

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.control.hyperparameter import Hyperparameter
from hyperstep.optim.resolve import Update, keras_value, value_and_complement


def number(x) -> float:
    return float(keras.ops.convert_to_numpy(x))


def test_an_update_keeps_the_step_it_started_with_and_only_it_owns_it() -> None:
    clock, update = hs.Clock(), Update()
    clock.step.assign(3)
    assert not update.owns() and update.read("a") is None
    with update.fixed(clock, host=False, values=lambda u: {"a": u.step * 2}):
        clock.step.assign(9)
        assert update.owns() and number(update.step) == 3.0 and number(update.read("a")) == 6.0
        with update.fixed(clock, host=False, values=lambda u: {"a": -1.0}):  # nested: kept
            assert number(update.read("a")) == 6.0
        with update.fixed(clock, host=False, values=lambda u: {"a": u.step}, nested=False):
            assert number(update.read("a")) == 9.0  # a new update, from the new step
        assert number(update.read("a")) == 6.0  # the outer one back
    assert not update.owns() and update.step is None


def test_read_prefers_the_groups_own_value() -> None:
    clock, update = hs.Clock(), Update()
    with update.fixed(clock, host=False, values=lambda u: {"lr": 1.0, "head/lr": 0.1}):
        assert update.read("lr", "head") == 0.1
        assert update.read("lr", "body") == 1.0 and update.read("lr") == 1.0
        assert update.read("beta", "head") is None


def test_keras_value_is_the_hyperparameter_at_the_updates_step() -> None:
    clock, update = hs.Clock(), Update()
    lr = Hyperparameter("0.1 * 0.5 ** step", clock=clock, name="learning_rate")
    beta = Hyperparameter("0.9 + step / 100", clock=clock, name="beta_1")
    clock.step.assign(2)
    with update.fixed(clock, host=False):
        clock.step.assign(5)
        got_lr = keras_value(update, lr, "learning_rate", keras.optimizers.Adam, None)
        got_beta = keras_value(update, beta, "head/beta_1", keras.optimizers.Adam, None)
    # the learning rate as Keras's float32 variable behaves (TensorFlow: a tensor-like)
    assert number(keras.ops.convert_to_tensor(got_lr)) == pytest.approx(0.1 * 0.5**2)
    assert number(keras.ops.convert_to_tensor(got_lr)) == float(np.float32(0.025))
    assert number(got_beta) == pytest.approx(0.92)


def test_value_and_complement_rounds_one_minus_a_constant_once() -> None:
    clock, update = hs.Clock(), Update()
    beta = Hyperparameter(0.999, clock=clock, name="beta_2")
    with update.fixed(clock, host=False):
        value, complement = value_and_complement(update, beta)
    assert number(complement) == float(np.float32(1.0 - 0.999))  # not 1 - float32(0.999)
    assert number(value) == float(np.float32(0.999))
    beta.set(0.5)  # overridden: the complement follows the value
    with update.fixed(clock, host=False):
        value, complement = value_and_complement(update, beta)
    assert number(value) == 0.5 and number(complement) == 0.5
    ramp = Hyperparameter("step / 10", clock=clock, name="beta_1")
    with update.fixed(clock, host=False):
        assert value_and_complement(update, ramp)[1] is None


@pytest.mark.backend("torch")
def test_on_eager_torch_the_step_is_a_python_int_and_keras_gets_numbers() -> None:
    clock, update = hs.Clock(), Update()
    lr = Hyperparameter("0.1 * 0.5 ** step", clock=clock, name="learning_rate")
    beta = Hyperparameter("0.9 + step / 100", clock=clock, name="beta_1")
    clock.step.assign(2)
    with update.fixed(clock, host=True):
        assert update.step == 2 and type(update.step) is int and update.host_step == 2
        got_beta = keras_value(update, beta, "beta_1", keras.optimizers.Adam, None)
        got_lr = keras_value(update, lr, "learning_rate", keras.optimizers.Adam, None)
    assert type(got_beta) is float and got_beta == pytest.approx(0.92)
    # the learning rate as Keras's own float32 variable: a float32 tensor
    assert keras.backend.standardize_dtype(got_lr.dtype) == "float32"
    assert number(got_lr) == float(np.float32(0.025))
