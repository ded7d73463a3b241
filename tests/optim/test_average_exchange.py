"""The average and its exchange (hyperstep.optim.averaging), through the public ``hs.EMA``,
``hs.SWA`` and ``hs.averaged_weights``: the average's update against float64 closed forms, the exact
two-way exchange, and the ``init=`` forms and their errors; ``AverageState``'s variables,
config and stored order, its averages built from given values, and
``attach``/``config_of``/``restore`` on an optimizer (the save-and-resume runs are in
tests/optim/test_average_resume.py)."""

import warnings

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError
from hyperstep.optim.averaging import (
    ATTRIBUTE,
    AverageState,
    attach,
    config_of,
    exchange,
    restore,
)


def _setup(start=(1.0, -2.0)):
    opt = hs.StepOptimizer("sgd", learning_rate=0.5)
    w = keras.Variable(np.array(start, "float32"))
    return opt, w


def _train(opt, w, average, grads) -> list[np.ndarray]:
    seen = []
    for g in grads:
        opt.apply([keras.ops.convert_to_tensor(np.array(g, "float32"))], [w])
        average.update()
        seen.append(np.array(w.numpy(), np.float64))
    return seen


def test_ema_difference_form_is_the_float64_recurrence() -> None:
    opt, w = _setup()
    ema = hs.EMA(opt, decay=0.75)
    grads = [[1.0, 0.5], [-2.0, 1.0], [0.25, 0.25], [3.0, -1.0]]
    weights = _train(opt, w, ema, grads)
    expected = weights[0].copy()  # init="copy": the weights after the first update
    for seen in weights[1:]:
        expected = expected + (seen - expected) * (1 - 0.75)
    np.testing.assert_allclose(ema.averages[0].numpy(), expected, rtol=1e-6)


def test_ema_initial_starts_from_the_weights_before_the_first_update() -> None:
    opt, w = _setup()
    ema = hs.EMA(opt, decay=0.5, init="initial")
    weights = _train(opt, w, ema, [[1.0, 1.0], [1.0, 1.0]])
    expected = np.array([1.0, -2.0])
    for seen in weights:
        expected = expected + (seen - expected) * 0.5
    np.testing.assert_allclose(ema.averages[0].numpy(), expected, rtol=1e-6)


def test_swa_is_the_mean_of_the_due_weights() -> None:
    opt, w = _setup()
    swa = hs.SWA(opt, start=2, every=2)
    weights = _train(opt, w, swa, [[1.0, 0.0]] * 6)  # steps 1..6: 2, 4 and 6 are due
    np.testing.assert_allclose(swa.averages[0].numpy(), np.mean(weights[1::2], axis=0))
    assert int(swa.n_averaged.numpy()) == 3


def test_the_exchange_is_exact_both_ways_and_only_once() -> None:
    opt, w = _setup()
    ema = hs.EMA(opt, decay=0.9)
    _train(opt, w, ema, [[0.3, 0.1], [0.7, -0.2], [0.1, 0.9]])
    training, average = w.numpy().copy(), ema.averages[0].numpy().copy()
    assert exchange(opt, True) is True and exchange(opt, True) is False
    np.testing.assert_array_equal(w.numpy(), average)
    assert bool(ema.swapped.numpy())
    assert exchange(opt, False) is True and exchange(opt, False) is False
    np.testing.assert_array_equal(w.numpy(), training)
    with pytest.raises(RuntimeError, match="inside"):
        with hs.averaged_weights(ema):
            np.testing.assert_array_equal(w.numpy(), average)
            raise RuntimeError("inside")
    np.testing.assert_array_equal(w.numpy(), training)  # put back on the way out


def test_given_weights_start_the_average_and_must_match_the_shapes() -> None:
    opt, w = _setup()
    ema = hs.EMA(opt, decay=0.5, init=[np.array([10.0, 10.0], "float32")])
    weights = _train(opt, w, ema, [[0.0, 0.0]])
    np.testing.assert_allclose(ema.averages[0].numpy(), (10.0 + weights[0]) / 2)
    opt, w = _setup()
    ema = hs.EMA(opt, init=[np.zeros(3, "float32")])
    with pytest.raises(ValueError, match=r"Received: shapes \[\(3,\)\] for variables of shapes"):
        _train(opt, w, ema, [[0.0, 0.0]])


def test_a_bad_init_names_the_forms_and_the_value() -> None:
    with pytest.raises(ValueError, match=r"`EMA\(init=\.\.\.\)` must be 'copy'.*init='last'"):
        hs.EMA(hs.StepOptimizer("sgd"), init="last")


def test_an_average_of_nothing_is_never_exchanged_in() -> None:
    opt, w = _setup()
    swa = hs.SWA(opt, start=10)
    trained = _train(opt, w, swa, [[1.0, 1.0], [0.5, -1.0]])[-1]  # steps 1, 2: none due
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # (pytest.warns would raise Keras's own deprecations)
        with hs.averaged_weights(opt):
            np.testing.assert_array_equal(w.numpy(), trained.astype("float32"))
    ours = [str(w.message) for w in caught if "averaged no weights" in str(w.message)]
    assert len(ours) == 1 and ours[0].startswith("`hs.SWA(start=10, every=1)` has averaged no")
    assert exchange(opt, True, warn=False) is False and not bool(swa.swapped.numpy())
    np.testing.assert_array_equal(w.numpy(), trained.astype("float32"))


# ---- the saved state: AverageState, attach, config_of, restore ---------------------------
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
