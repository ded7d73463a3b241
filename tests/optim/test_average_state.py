"""The units of hyperstep.optim.average_state: ``AverageState``'s variables, config and
stored order, its averages built from given values, and ``attach``/``config_of``/``restore``
on an optimizer (the save-and-resume runs are in tests/optim/test_average_resume.py)."""

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError
from hyperstep.optim.average_state import ATTRIBUTE, AverageState, attach, config_of, restore


def test_a_new_state_counts_nothing_and_holds_no_averages() -> None:
    state = AverageState("swa", start=3, every=2)
    assert int(state.n_averaged.numpy()) == 0 and not bool(state.swapped.numpy())
    assert state.decay is None and state.averages == []
    assert state.stored == [state.n_averaged, state.swapped]
    assert state.get_config() == {
        "name": "average", "kind": "swa", "start": 3, "every": 2, "decay": None
    }  # fmt: skip


def test_an_ema_state_has_a_decay_on_the_clock_and_its_forms_in_the_config() -> None:
    clock = hs.Clock()
    state = AverageState("ema", decay="0.9 + step / 1000", clock=clock, init="initial")
    clock.step.assign(50)
    assert float(state.decay.value) == pytest.approx(0.95)
    config = state.get_config()
    assert config["init"] == "initial" and config["form"] == "difference"
    again = AverageState.from_config({**config, "clock": clock})
    assert again.matches(state) and float(again.decay.value) == pytest.approx(0.95)
    assert not again.matches(AverageState("ema", decay=0.5, clock=clock))


def test_build_averages_copies_the_initial_values_once() -> None:
    state = AverageState("swa")
    variables = [keras.Variable(np.ones((2, 3), "float32")), keras.Variable(np.zeros(4, "int32"))]
    initial = [np.full((2, 3), 7.0, "float32"), np.arange(4)]
    averages = state.build_averages(variables, initial)
    assert [tuple(a.shape) for a in averages] == [(2, 3), (4,)]
    assert averages[1].dtype == "int32"
    np.testing.assert_array_equal(averages[0].numpy(), initial[0])
    initial[0][...] = -1.0  # read when made: later changes do not reach it
    assert state.build_averages(variables) is averages and averages[0].numpy()[0, 0] == 7.0
    assert state.stored[2:] == averages
    zeros = AverageState("swa").build_averages([keras.Variable(np.ones(2, "float32"))])
    np.testing.assert_array_equal(zeros[0].numpy(), [0.0, 0.0])


def test_without_variables_it_needs_a_built_optimizer() -> None:
    opt = hs.StepOptimizer("sgd")
    state = attach(opt, AverageState("swa"))
    with pytest.raises(InvalidArgumentError, match="SWA: build the optimizer first"):
        state.build_averages()
    w = keras.Variable(np.ones(3, "float32"))
    opt.build([w])
    assert [tuple(a.shape) for a in state.build_averages()] == [(3,)]


def test_use_averages_moves_the_held_values_into_the_given_variables() -> None:
    state = AverageState("ema", decay=0.9, clock=hs.Clock())
    state.build_averages([keras.Variable(np.zeros(2, "float32"))], [np.array([1.0, 2.0])])
    teacher = [keras.Variable(np.zeros(2, "float32"))]
    state.use_averages(teacher)
    assert state.averages == teacher and state.stored[2:] == teacher
    np.testing.assert_array_equal(teacher[0].numpy(), [1.0, 2.0])


def test_attach_config_of_and_restore() -> None:
    opt = hs.StepOptimizer("sgd")
    assert config_of(opt) == {}
    state = attach(opt, AverageState("swa", start=4))
    assert getattr(opt, ATTRIBUTE) is state
    config = config_of(opt)
    assert config == {"average": state.get_config()}
    fresh = hs.StepOptimizer("sgd")
    assert restore(fresh, None) is fresh and config_of(fresh) == {}
    assert restore(fresh, config["average"]) is fresh
    assert getattr(fresh, ATTRIBUTE).matches(state) and getattr(fresh, ATTRIBUTE) is not state


def test_loading_a_different_number_of_values_is_refused() -> None:
    state = AverageState("swa")
    state.build_averages([keras.Variable(np.zeros(2, "float32"))])
    store = {"0": np.array(1), "1": np.array(False)}  # no averages
    with pytest.raises(InvalidArgumentError, match=r"holds 2 values and this one 3"):
        state.load_own_variables(store)


def test_averages_loaded_before_they_exist_are_assigned_when_made() -> None:
    state = AverageState("swa")
    store = {"0": np.array(5), "1": np.array(True), "2": np.array([3.0, 4.0], "float32")}
    state.load_own_variables(store)
    assert int(state.n_averaged.numpy()) == 5 and bool(state.swapped.numpy())
    averages = state.build_averages([keras.Variable(np.zeros(2, "float32"))])
    np.testing.assert_array_equal(averages[0].numpy(), [3.0, 4.0])
