"""The one optimizer core: hs.scheduled and hs.StepOptimizer share their signatures' keyword
arguments and their config format; ``Update`` fixes one step per update and looks values up
in it (a group's own first), ``keras_value`` hands Keras the hyperparameter at that step, and
``value_and_complement`` rounds ``1 - c`` once from a constant's number."""

import inspect
import json
from typing import Any

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.control.hyperparameter import Hyperparameter
from hyperstep.optim.core import Update, keras_value, value_and_complement
from hyperstep.optim.scheduled import ScheduledOptimizer


@pytest.mark.parametrize(
    "function",
    [hs.scheduled, hs.StepOptimizer.__init__, ScheduledOptimizer.__init__],
    ids=["scheduled", "StepOptimizer", "ScheduledOptimizer"],
)
def test_clock_advance_and_groups_are_keyword_only(function) -> None:  # type: ignore[no-untyped-def]
    parameters = inspect.signature(function).parameters
    for name in ("clock", "advance", "groups"):
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, name


def test_both_optimizers_save_hyperparameters_in_one_format() -> None:
    def groups() -> list[hs.Group]:
        return [
            hs.Group("head", match="*bias", learning_rate="10 * learning_rate", beta_1=0.5),
            hs.Group("emb", match=["emb/*", "x"], beta_2="cosine(0.99, steps=10)"),
        ]

    values = {"learning_rate": "cosine(0.1, steps=100)", "beta_1": 0.8, "epsilon": 1e-6}
    # (`fused` given: its defaults differ, False for hs.scheduled, None for StepOptimizer)
    scheduled = hs.scheduled(
        keras.optimizers.Adam(), groups=groups(), advance=False, fused=True, **values
    )
    step = hs.StepOptimizer("adam", groups=groups(), advance=False, fused=True, **values)
    a = json.loads(json.dumps(scheduled.get_config()))
    b = json.loads(json.dumps(step.get_config()))
    for key in ("advance", "fused", "groups"):
        assert a[key] == b[key], key
    assert a["clock"]["class_name"] == b["clock"]["class_name"] == "Clock"
    assert b["hyperparameters"] == {key: a["hyperparameters"][key] for key in b["hyperparameters"]}
    assert set(b["hyperparameters"]) == {"learning_rate", "beta_1", "beta_2", "epsilon"}
    assert a["hyperparameters"]["beta_1"] == 0.8  # a constant is its number in both
    assert a["groups"][0]["hyperparameters"] == {
        "learning_rate": "10.0 * learning_rate",
        "beta_1": 0.5,
    }


# ---- attribute assignment against `Hyperparameter.set` (docs/runtime.md) ----------------
HALVING = "0.1 * 0.5 ** (step / 10)"
MAKERS = {
    "scheduled": lambda: hs.scheduled(keras.optimizers.SGD(), learning_rate=HALVING),
    "StepOptimizer": lambda: hs.StepOptimizer("sgd", learning_rate=HALVING),
}
WRITES = {
    "attribute": lambda opt, x: setattr(opt, "learning_rate", x),
    "assign": lambda opt, x: opt.learning_rate.assign(x),  # Keras's variable-style write
}


def halving(step: float, start: float = 0.1) -> float:
    return start * 0.5 ** (step / 10)  # the schedule, in float64


@pytest.mark.backend("tensorflow", "jax", "torch")
@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("make", list(MAKERS))
def test_assigning_the_learning_rate_rescales_and_set_overrides(make: str, write: str) -> None:
    opt, assign = MAKERS[make](), WRITES[write]
    lr = opt.hyperparameters["learning_rate"]
    assign(opt, 0.05)  # at step 0, where the schedule is 0.1: the schedule halved
    assert float(opt.learning_rate) == pytest.approx(0.05, rel=1e-6)
    assert not bool(lr.is_set) and float(keras.ops.convert_to_numpy(lr.scale)) == 0.5
    opt.clock.step.assign(10)
    assert float(opt.learning_rate) == pytest.approx(halving(10) / 2, rel=1e-6)  # runs on
    lr.clear()  # there is no override to clear: the rescaled schedule stays
    assert float(opt.learning_rate) == pytest.approx(halving(10) / 2, rel=1e-6)
    lr.set(0.3)  # an override: the value from now on, whatever the step
    opt.clock.step.assign(20)
    assert float(opt.learning_rate) == pytest.approx(0.3, rel=1e-7)
    assign(opt, 0.6)  # while overridden, a number replaces the override
    assert bool(lr.is_set) and float(opt.learning_rate) == pytest.approx(0.6, rel=1e-7)
    lr.clear()  # back to the schedule, with the scale the first assignment left
    assert float(opt.learning_rate) == pytest.approx(halving(20) / 2, rel=1e-6)
    opt.learning_rate = "0.2 * 0.5 ** (step / 10)"  # a new schedule; the scale stays
    assert float(opt.learning_rate) == pytest.approx(halving(20, 0.2) / 2, rel=1e-6)
    assert len(opt.variables) == len(MAKERS[make]().variables)  # the value read is not saved


@pytest.mark.backend("tensorflow", "jax", "torch")
@pytest.mark.parametrize("make", list(MAKERS))
def test_the_learning_rate_variable_adds_and_subtracts_through_the_attribute(make: str) -> None:
    opt = MAKERS[make]()
    opt.learning_rate.assign_add(0.1)  # 0.1 + 0.1 at step 0: the schedule doubled
    assert float(opt.learning_rate) == pytest.approx(0.2, rel=1e-6)
    opt.learning_rate.assign_sub(0.15)
    assert float(opt.learning_rate) == pytest.approx(0.05, rel=1e-6)
    opt.clock.step.assign(10)  # a rescaled schedule, running on
    assert float(opt.learning_rate) == pytest.approx(halving(10) / 2, rel=1e-6)
    assert not bool(opt.hyperparameters["learning_rate"].is_set)


@pytest.mark.backend("tensorflow", "jax", "torch")
@pytest.mark.parametrize("make", list(MAKERS))
def test_learning_rate_scheduler_in_fit_multiplies_the_running_schedule(make: str) -> None:
    opt, rates = MAKERS[make](), []

    class Rates(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch: int, logs: object = None) -> None:
            rates.append(float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)))

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(opt, "mse")
    halve = keras.callbacks.LearningRateScheduler(lambda epoch, rate: rate * 0.5)
    x, y = np.ones((8, 2), "float32"), np.ones((8, 1), "float32")
    model.fit(x, y, batch_size=2, epochs=3, verbose=0, callbacks=[halve, Rates()])
    steps = np.arange(12)
    expected = halving(steps) * 0.5 ** (steps // 4 + 1)  # halved at each epoch's start
    np.testing.assert_allclose(rates, expected, rtol=1e-6)


# ---- values changed in a jax.jit loop: stateless_set, _scale, _clear, _values -----------
@pytest.mark.backend("jax")
@pytest.mark.parametrize("make", ["scheduled", "StepOptimizer"])
def test_stateless_set_in_a_jitted_loop_equals_optax_inject_hyperparams(make: str) -> None:
    import jax
    import optax

    rates = {3: 0.05, 7: 0.2, 12: 0.01}  # set between steps, as a user's loop would
    x = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
    y = x @ np.array([[1.0], [-2.0], [0.5]], "float32")
    w0 = np.zeros((3, 1), "float32")

    def loss(w: Any) -> Any:
        return jax.numpy.mean((x @ w - y) ** 2)

    opt = {
        "scheduled": lambda: hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1),
        "StepOptimizer": lambda: hs.StepOptimizer("sgd", learning_rate=0.1),
    }[make]()
    w = keras.Variable(w0)
    opt.build([w])
    traces = []

    @jax.jit
    def step(w: Any, optimizer_variables: Any) -> Any:
        traces.append(1)
        (w,), optimizer_variables = opt.stateless_apply(
            optimizer_variables, [jax.grad(loss)(w)], [w]
        )
        return w, optimizer_variables

    inject = optax.inject_hyperparams(optax.sgd)(learning_rate=0.1)
    theirs, theirs_state = jax.numpy.asarray(w0), inject.init(jax.numpy.asarray(w0))
    ours, state = jax.numpy.asarray(w0), [v.value for v in opt.variables]
    for i in range(16):
        if i in rates:
            state = opt.stateless_set(state, learning_rate=rates[i])
            theirs_state.hyperparams["learning_rate"] = jax.numpy.asarray(rates[i])
        ours, state = step(ours, state)
        updates, theirs_state = inject.update(jax.grad(loss)(theirs), theirs_state)
        theirs = optax.apply_updates(theirs, updates)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))  # bitwise
    assert len(traces) == 1  # one compile across the changes
    assert float(opt.stateless_values(state)["learning_rate"]) == pytest.approx(0.01)
    assert int(opt.clock.step) == 0  # the variables were never touched: all in the arrays


@pytest.mark.backend("jax")
def test_stateless_calls_write_what_set_scale_and_clear_assign() -> None:
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate="0.1 * 0.5 ** step", momentum=0.9)
    opt.build([keras.Variable(np.ones(2, "float32"))])
    state = [v.value for v in opt.variables]
    state = opt.stateless_set(state, learning_rate=0.3)
    state = opt.stateless_scale(state, momentum=0.5)
    lr, momentum = opt.hyperparameters["learning_rate"], opt.hyperparameters["momentum"]
    lr.set(0.3)
    momentum.scale.assign(0.5)
    for variable, value in zip(opt.variables, state, strict=True):
        np.testing.assert_array_equal(np.asarray(value), np.asarray(variable.value))
    assert {k: round(float(v), 6) for k, v in opt.stateless_values(state).items()} == {
        "learning_rate": 0.3, "momentum": 0.45, "ema_momentum": 0.99,
    }  # fmt: skip
    cleared = opt.stateless_values(opt.stateless_clear(state, "learning_rate"))
    assert float(cleared["learning_rate"]) == pytest.approx(0.1)
    with pytest.raises(hs.errors.InvalidArgumentError, match=r"no hyperparameter named 'lr'"):
        opt.stateless_set(state, lr=1.0)
    with pytest.raises(hs.errors.InvalidArgumentError, match=r"Received: 3 values"):
        opt.stateless_set(state[:3], learning_rate=1.0)
    with pytest.raises(hs.errors.InvalidArgumentError, match=r"'ema_momentum' has no variable"):
        opt.stateless_set(state, ema_momentum=0.5)  # Keras's update does not read it


@pytest.mark.backend("tensorflow", "torch")
def test_stateless_set_refuses_where_the_state_holds_no_hyperparameter() -> None:
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate="0.1 * 0.5 ** step")
    opt.build([keras.Variable(np.ones(2, "float32"))])
    state = [v.value for v in opt.variables]
    assert float(opt.stateless_values(state)["learning_rate"]) == pytest.approx(0.1)
    with pytest.raises(
        hs.errors.InvalidArgumentError, match=r"has no variable.*Received: learning_rate=0\.3"
    ):
        opt.stateless_set(state, learning_rate=0.3)


# ---- one update: Update, keras_value, value_and_complement -------------------------------
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
        assert update.step == 2 and type(update.step) is int
        got_beta = keras_value(update, beta, "beta_1", keras.optimizers.Adam, None)
        got_lr = keras_value(update, lr, "learning_rate", keras.optimizers.Adam, None)
    assert type(got_beta) is float and got_beta == pytest.approx(0.92)
    # the learning rate as Keras's own float32 variable: a float32 tensor
    assert keras.backend.standardize_dtype(got_lr.dtype) == "float32"
    assert number(got_lr) == float(np.float32(0.025))


@pytest.mark.backend("torch")
def test_under_torch_compile_the_update_run_eagerly_keeps_tensor_values() -> None:
    """Keras's torch ``SGD`` passes ``alpha=-learning_rate``, a tensor under ``torch.compile``:
    a data-dependent graph break inside :meth:`Update.fixed` (a generator context manager), so
    dynamo runs it eagerly inside the compiled step and compiles the frames it calls. The
    update's step and values must stay tensors there: Python numbers would be guarded on by
    those frames, a recompile per step. After the first two calls (the first builds), no new
    graph nor compiled frame, through an override; the override reaches the compiled step."""
    import torch
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    variable = keras.Variable(np.ones((2,), "float32"))
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate="0.01 / (1 + step)")

    def apply(grad: Any) -> None:
        with torch.no_grad():
            opt.apply([grad], [variable])

    run = torch.compile(apply, backend="eager")  # dynamo's tracing and guards, no codegen
    compiled = []
    for step in range(5):
        if step == 3:
            opt.hyperparameters["learning_rate"].set(0.05)
        run(torch.ones(2))
        compiled.append((counters["stats"]["unique_graphs"], counters["frames"]["total"]))
    assert "Data dependent operator" in {r.split("\n")[0] for r in counters["graph_break"]}
    assert compiled[2:] == [compiled[1]] * 3, compiled
    expected = 1 - (0.01 + 0.01 / 2 + 0.01 / 3 + 0.05 + 0.05)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(variable), [expected] * 2, rtol=1e-6)
