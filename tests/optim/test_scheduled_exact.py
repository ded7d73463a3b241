"""Keras-exact by default: ``hs.scheduled`` with scheduled values is bitwise the plain Keras
optimizer whose values are set before each step (issue 21 item 3), over 100 steps on
TensorFlow, eagerly (and traced, in a slow test). (``fused=True``, faster and not bitwise, is
tested in test_scheduled_fused.py.)"""

import contextlib

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError
from hyperstep.optim import scheduled
from hyperstep.schedules.expressions import Constant

K = keras.optimizers
STEPS = 100
TARGET = np.linspace(-1.0, 1.0, 6).astype("float32")
START = np.linspace(0.5, -0.7, 6).astype("float32")

#: optimizer, and its scheduled values (learning rate, a beta-like value, weight decay)
CASES = {
    "Adam": (K.Adam, {"beta_1": "0.95 - 0.1 * min(step / 60, 1)"}),
    "AdamW": (K.AdamW, {"beta_1": "0.8 + 0.15 * min(step / 50, 1)", "beta_2": "0.99"}),
    "SGD-momentum": (lambda: K.SGD(momentum=0.9), {"momentum": "0.5 + 0.4 * min(step / 40, 1)"}),
    "RMSprop": (lambda: K.RMSprop(momentum=0.5), {"rho": "0.8 + 0.15 * min(step / 70, 1)"}),
    "Adam-accumulation-ema-clipnorm": (
        lambda: K.Adam(gradient_accumulation_steps=2, use_ema=True, clipnorm=0.5),
        {"beta_1": "0.95 - 0.1 * min(step / 60, 1)"},
    ),
}
COMMON = {
    "learning_rate": "warmup(cosine(0.05, steps=100, end=0.001), steps=10)",
    "weight_decay": "0.004 * (1 + step / 50)",
}


@contextlib.contextmanager
def _no_arithmetic_rewrites():
    # Grappler rewrites constant expressions of Python floats (x / c -> x * (1 / c)) in the
    # plain optimizer's graph but not values read from variables; eager needs nothing
    tf.config.optimizer.set_experimental_options({"arithmetic_optimization": False})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options({"arithmetic_optimization": True})


def _train(opt, before_step=None, compiled=False):
    w = keras.Variable(START.copy())
    opt.build([w])

    def step():
        opt.apply([w.value - TARGET + 0.1 * w.value**3], [w])

    run = tf.function(step) if compiled else step
    for i in range(STEPS):
        if before_step is not None:
            before_step(i)
        run()
    return w.numpy()


@pytest.mark.parametrize("name", list(CASES))
def test_scheduled_values_are_bitwise_the_plain_optimizer_set_per_step(name):
    make, own = CASES[name]
    schedules = {**COMMON, **own}
    every = make().gradient_accumulation_steps or 1
    reference = make()
    parsed = {key: hs.parse(text) for key, text in schedules.items()}

    def set_values(i):  # the clock counts applied updates; a constant is its Python float
        for key, schedule in parsed.items():
            value = schedule.value_ if isinstance(schedule, Constant) else schedule(i // every)
            setattr(reference, key, float(value))

    expected = _train(reference, set_values)
    eager = _train(hs.scheduled(make(), **schedules))
    np.testing.assert_array_equal(eager, expected)
    assert np.max(np.abs(expected - START)) > 0.1  # it trained


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_traced_scheduled_values_are_bitwise_the_plain_optimizer_traced_per_step(name):
    # Keras bakes Python-float values into a traced step: the reference is retraced with
    # each step's values (a graph may round differently from eager: same kernel on both sides)
    make, own = CASES[name]
    schedules = {**COMMON, **own}
    every = make().gradient_accumulation_steps or 1
    parsed = {key: hs.parse(text) for key, text in schedules.items()}
    steps = 8
    with _no_arithmetic_rewrites():
        reference = make()
        w = keras.Variable(START.copy())
        reference.build([w])
        for i in range(steps):
            for key, schedule in parsed.items():
                value = schedule.value_ if isinstance(schedule, Constant) else schedule(i // every)
                setattr(reference, key, float(value))
            tf.function(lambda: reference.apply([w.value - TARGET + 0.1 * w.value**3], [w]))()
        opt = hs.scheduled(make(), **schedules)
        v = keras.Variable(START.copy())
        opt.build([v])
        step = tf.function(lambda: opt.apply([v.value - TARGET + 0.1 * v.value**3], [v]))
        for _ in range(steps):
            step()
    np.testing.assert_array_equal(v.numpy(), w.numpy())


def test_names_that_fix_the_update_structure_are_refused_by_their_explicit_list():
    # no source reading: `scheduled.STRUCTURAL` names them, each with its reason
    checked, classes = set(), set()
    for name in dir(K):
        cls = getattr(K, name)
        if not (isinstance(cls, type) and issubclass(cls, K.Optimizer)):
            continue
        if name in ("Optimizer", *scheduled.WRAPPERS):
            continue
        classes.add(name)
        for argument in set(scheduled.constructor_arguments(cls)) & set(scheduled.STRUCTURAL):
            with pytest.raises(InvalidArgumentError, match=f"`{argument}` cannot be scheduled"):
                hs.scheduled(cls(), **{argument: 2})
            checked.add((name, argument))
    assert {(name, "gradient_accumulation_steps") for name in classes} <= checked
    assert ("Muon", "ns_steps") in checked
