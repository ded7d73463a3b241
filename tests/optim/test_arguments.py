"""Units of :mod:`hyperstep.optim.arguments`: the Keras arguments ``StepOptimizer`` passes
through are Keras's, unknown hyperparameter names are refused naming the valid ones, and the
clock is the one given, else a Hyperparameter's, else a new one."""

from __future__ import annotations

import inspect
import re

import keras
import pytest

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError
from hyperstep.optim.arguments import KERAS_ARGUMENTS, check_names, pick_clock
from hyperstep.optim.rules import AdamWRule, SGDRule


def test_keras_arguments_are_keras_optimizer_arguments_but_weight_decay() -> None:
    keras_names = set(inspect.signature(keras.optimizers.SGD.__init__).parameters)
    assert set(KERAS_ARGUMENTS) <= keras_names
    assert len(set(KERAS_ARGUMENTS)) == len(KERAS_ARGUMENTS)
    assert "weight_decay" in keras_names and "weight_decay" not in KERAS_ARGUMENTS
    assert "learning_rate" not in KERAS_ARGUMENTS  # every rule's own


def test_check_names_accepts_the_names_the_rule_declares() -> None:
    rule = AdamWRule()
    check_names(rule, "StepOptimizer", dict.fromkeys(rule.hyperparameters, 0.1))
    check_names(SGDRule(), "StepOptimizer", {})


def test_check_names_names_the_unknown_the_valid_and_what_was_received() -> None:
    rule = SGDRule()
    with pytest.raises(InvalidArgumentError) as error:
        check_names(rule, "StepOptimizer", {"momentum": 0.9, "beta_1": 0.8, "decay": "x"})
    text = str(error.value)
    assert "`StepOptimizer`" in text and "SGDRule" in text
    assert "['beta_1', 'decay']" in text  # the unknown ones, in order; not momentum
    assert f"Valid ones: {list(rule.hyperparameters)}" in text
    assert f"the Keras arguments {list(KERAS_ARGUMENTS)}" in text
    assert text.endswith("Received: beta_1=0.8, decay='x'")


def test_check_names_for_a_group_does_not_offer_the_keras_arguments() -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape("`Group('head')`")) as error:
        check_names(SGDRule(), "Group('head')", {"clipnorm": 1.0})
    assert "Keras arguments" not in str(error.value)
    assert str(error.value).endswith("Received: clipnorm=1.0")


def test_pick_clock_returns_the_clock_given() -> None:
    clock = hs.Clock(name="given")
    other = hs.Hyperparameter(0.1, clock=hs.Clock(name="other"))
    assert pick_clock(clock, [{"learning_rate": other}], "fallback") is clock


def test_pick_clock_refuses_what_is_not_a_clock_naming_it() -> None:
    with pytest.raises(InvalidTypeError, match=re.escape("Received: clock='clock'")):
        pick_clock("clock", [], "fallback")
    with pytest.raises(InvalidTypeError, match=r"`StepOptimizer\(clock=\.\.\.\)` must be"):
        pick_clock(3, [], "fallback")


def test_pick_clock_takes_the_first_hyperparameters_clock() -> None:
    first, second = hs.Clock(name="first"), hs.Clock(name="second")
    tables = [
        {"momentum": 0.9},
        {"learning_rate": 0.1, "beta_1": hs.Hyperparameter(0.9, clock=first)},
        {"weight_decay": hs.Hyperparameter(0.01, clock=second)},
    ]
    assert pick_clock(None, tables, "fallback") is first


def test_pick_clock_without_any_makes_a_new_clock_named_name() -> None:
    clock = pick_clock(None, [{"learning_rate": 0.1}, {}], "fresh_clock")
    assert isinstance(clock, hs.Clock) and clock.name == "fresh_clock"
    assert pick_clock(None, [], "fresh_clock") is not clock
