"""The units of hyperstep.diagnosis.optimizer_facts: the variables an optimizer and a cached
``train_function`` hold, and each learning rate now and at the next step, read against the
schedules' own values without changing any state."""

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.diagnosis import optimizer_facts as facts

K = keras.optimizers


def test_optimizer_variables_are_none_until_built_and_seen_through_a_wrapper() -> None:
    w = keras.Variable(np.ones(2, "float32"))
    sgd = K.SGD()
    assert facts.optimizer_variables(sgd) is None and facts.optimizer_variables(None) is None
    sgd.build([w])
    assert facts.optimizer_variables(sgd) == [w]
    inner = K.Adam()
    wrapper = K.LossScaleOptimizer(inner)
    wrapper.build([w])
    assert facts.optimizer_variables(wrapper) == [w]


def test_train_function_variables_are_the_ones_its_graphs_captured() -> None:
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(K.SGD(), "mse")
    assert facts.train_function_variables(model) == []  # nothing cached yet
    model.fit(np.ones((4, 2), "float32"), np.zeros((4, 1), "float32"), verbose=0)
    captured = {id(v) for v in facts.train_function_variables(model)}
    kernel = model.layers[0].kernel
    assert id(kernel.value) in captured  # TensorFlow: the tf.Variable behind the kernel


def test_a_plain_optimizers_rate_now_and_its_schedules_next() -> None:
    assert facts.learning_rate(K.SGD(0.25, name="sgd")) == facts.LearningRate(
        "sgd/learning_rate", 0, 0.25, None
    )
    schedule = K.schedules.ExponentialDecay(0.1, 1, 0.5)
    opt = K.SGD(schedule)
    opt.iterations.assign(3)
    rate = facts.learning_rate(opt)
    assert rate.step == 3 and rate.current == pytest.approx(float(schedule(3)))
    assert rate.following == pytest.approx(float(schedule(4)))
    assert int(opt.iterations.numpy()) == 3  # nothing changed
    assert facts.learning_rate(None) is None
    assert facts.learning_rates(K.SGD(0.5))[0].current == 0.5


def test_a_hyperstep_optimizers_rates_each_groups_and_an_override() -> None:
    opt = hs.scheduled(
        K.SGD(name="opt"),
        learning_rate="0.1 * (1 + step)",
        groups=[hs.Group("head", match="*head*", learning_rate="0.5 * step")],
    )
    opt.clock.step.assign(2)
    rates = {rate.path: rate for rate in facts.learning_rates(opt)}
    assert set(rates) == {"opt/learning_rate", "opt/head/learning_rate"}
    main, head = rates["opt/learning_rate"], rates["opt/head/learning_rate"]
    assert main.step == 2 and main.current == pytest.approx(0.3)
    assert main.following == pytest.approx(0.4)
    assert head.current == pytest.approx(1.0) and head.following == pytest.approx(1.5)
    opt.hyperparameters["learning_rate"].set(0.0)  # an override: no schedule to look ahead on
    main = next(r for r in facts.learning_rates(opt) if r.path == "opt/learning_rate")
    assert main.current == 0.0 and main.following is None
