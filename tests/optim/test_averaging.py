"""hyperstep.optim.averaging: SWA, EMA and BatchNorm refresh against torch.optim.swa_utils;
the average and its exchange, through the public ``hs.EMA``, ``hs.SWA`` and
``hs.averaged_weights``: the average's update against float64 closed forms, the exact two-way
exchange, and the ``init=`` forms and their errors; ``AverageState``'s variables, config and
stored order, its averages built from given values, and ``attach``/``config_of``/``restore``
on an optimizer (the save-and-resume runs are in tests/optim/test_average_resume.py)."""

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

RNG = np.random.default_rng(1)
W0 = RNG.normal(size=(4, 3)).astype("float32")
B0 = RNG.normal(size=(3,)).astype("float32")
X = RNG.normal(size=(40, 8, 4)).astype("float32")
Y = RNG.normal(size=(40, 8, 3)).astype("float32")


def _torch():
    """torch and torch.optim.swa_utils, the oracle of the tests that compare with them."""
    return pytest.importorskip("torch"), pytest.importorskip("torch.optim.swa_utils")


def gradients(i, w, b):
    """d/dw, d/db of mean((x w + b - y)**2) on batch i (float32)."""
    residual = 2 * (X[i] @ w + b - Y[i]) / Y[i].size
    return (X[i].T @ residual).astype("float32"), residual.sum(0).astype("float32")


def torch_run(steps, start, every, lr_start, swa_lr, anneal_steps):
    torch, swa_utils = _torch()
    module = torch.nn.Linear(4, 3)
    with torch.no_grad():
        module.weight.copy_(torch.tensor(W0.T))
        module.bias.copy_(torch.tensor(B0))
    opt = torch.optim.SGD(module.parameters(), lr=0.1)
    averaged = swa_utils.AveragedModel(module)
    swalr = swa_utils.SWALR(opt, swa_lr=swa_lr, anneal_epochs=anneal_steps)
    rates = []
    for k in range(steps):
        rates.append(opt.param_groups[0]["lr"])
        w, b = module.weight.detach().numpy().T, module.bias.detach().numpy()
        gw, gb = gradients(k, w, b)
        module.weight.grad, module.bias.grad = torch.tensor(gw.T), torch.tensor(gb)
        opt.step()
        if k + 1 >= start and (k + 1 - start) % every == 0:
            averaged.update_parameters(module)
        if k >= lr_start:
            swalr.step()
    weights = [averaged.module.weight.detach().numpy().T, averaged.module.bias.detach().numpy()]
    return weights, rates, int(averaged.n_averaged)


@pytest.mark.parametrize("kind", ["StepOptimizer", "scheduled"])
def test_swa_weights_and_learning_rates_equal_torch_swa_utils(kind):
    steps, start, every, lr_start = 40, 10, 3, 15
    learning_rate = hs.swa_learning_rate(0.1, swa_lr=0.02, start=lr_start, anneal_steps=5)
    if kind == "scheduled":
        opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=learning_rate)
    else:
        opt = hs.StepOptimizer("sgd", learning_rate=learning_rate)
    variables = [keras.Variable(W0), keras.Variable(B0)]
    swa = hs.SWA(opt, start=start, every=every)
    rates = []
    for k in range(steps):
        rates.append(float(opt.learning_rate))
        grads = gradients(k, *(v.numpy() for v in variables))
        opt.apply([keras.ops.convert_to_tensor(g) for g in grads], variables)
        swa.update()
    expected, torch_rates, n = torch_run(steps, start, every, lr_start, 0.02, 5)
    np.testing.assert_allclose(rates, torch_rates, rtol=1e-6)
    assert int(swa.n_averaged) == n == 11
    trained = [v.numpy() for v in variables]
    with hs.averaged_weights(opt):
        for v, e in zip(variables, expected, strict=True):
            np.testing.assert_allclose(v.numpy(), e, rtol=1e-5, atol=1e-6)
    for v, t in zip(variables, trained, strict=True):  # back exactly
        np.testing.assert_array_equal(v.numpy(), t)


def test_ema_with_a_decay_schedule_equals_averaged_model_with_that_decay():
    decay = hs.parse("min(0.9, (1 + step) / (10 + step))")
    opt = hs.StepOptimizer("sgd", learning_rate=0.1)
    variables = [keras.Variable(W0), keras.Variable(B0)]
    ema = hs.EMA(opt, decay=decay, start=2)
    torch, swa_utils = _torch()
    module = torch.nn.Linear(4, 3)
    with torch.no_grad():
        module.weight.copy_(torch.tensor(W0.T))
        module.bias.copy_(torch.tensor(B0))

    def avg_fn(averaged, current, n):  # torch calls it with the step in a closure below
        return averaged + (current - averaged) * (1 - step_decay[0])

    step_decay = [0.0]
    averaged = swa_utils.AveragedModel(module, avg_fn=avg_fn)
    torch_opt = torch.optim.SGD(module.parameters(), lr=0.1)
    for k in range(20):
        grads = gradients(k, *(v.numpy() for v in variables))
        opt.apply([keras.ops.convert_to_tensor(g) for g in grads], variables)
        ema.update()
        module.weight.grad, module.bias.grad = torch.tensor(grads[0].T), torch.tensor(grads[1])
        torch_opt.step()
        if k + 1 >= 2:
            step_decay[0] = min(0.9, (1 + (k + 1)) / (10 + (k + 1)))
            averaged.update_parameters(module)
    expected = [averaged.module.weight.detach().numpy().T, averaged.module.bias.detach().numpy()]
    with hs.averaged_weights(ema):
        for v, e in zip(variables, expected, strict=True):
            np.testing.assert_allclose(v.numpy(), e, rtol=1e-5, atol=1e-6)


def test_refresh_batch_norm_equals_update_bn():
    """Keras's moving variance is the biased batch variance (as in Keras's own training),
    torch's the unbiased one: with batches of n rows they differ by n / (n - 1) exactly."""
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3), keras.layers.BatchNormalization()]
    )
    model.layers[0].set_weights([W0, B0])
    batches = [X[i] for i in range(10)]
    hs.refresh_batch_norm(model, batches)
    torch, swa_utils = _torch()
    module = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    with torch.no_grad():
        module[0].weight.copy_(torch.tensor(W0.T))
        module[0].bias.copy_(torch.tensor(B0))
    swa_utils.update_bn([torch.tensor(b) for b in batches], module)
    bn = model.layers[1]
    np.testing.assert_allclose(
        bn.moving_mean.numpy(), module[1].running_mean.numpy(), rtol=1e-6, atol=1e-7
    )
    n = batches[0].shape[0]
    np.testing.assert_allclose(
        bn.moving_variance.numpy() * n / (n - 1), module[1].running_var.numpy(), rtol=1e-5
    )
    assert bn.momentum == 0.99  # restored
    np.testing.assert_array_equal(model.layers[0].get_weights()[0], W0)


def test_averaged_weights_refuses_an_optimizer_without_averages():
    opt = hs.StepOptimizer("adam")
    with pytest.raises(ValueError, match="schedule-free rule"):
        with hs.averaged_weights(opt):
            pass


def test_swa_checks_its_arguments():
    with pytest.raises(ValueError, match=r"every=\.\.\..*Received: every=0"):
        hs.SWA(hs.StepOptimizer("sgd"), every=0)
    with pytest.raises(TypeError, match="hyperstep optimizer"):
        hs.SWA(keras.optimizers.SGD())


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
