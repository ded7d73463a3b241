"""hs.scheduled's one-pass updates on TensorFlow (hyperstep.backends.tensorflow), opted into with
``fused=True``: the fused Adam kernel and torch-form weight decay, against independent
float32 references; Keras's own code by default (bitwise: tests/optim/test_scheduled_exact.py)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs
from hyperstep.schedules.expressions import Step

K = keras.optimizers
TARGET = np.linspace(-1.0, 1.0, 6).astype("float32")
START = np.linspace(0.5, -0.7, 6).astype("float32")


def _lr(t):
    return np.float32(0.05 * 0.9 ** (t / 3))


def _beta_1(t):
    return np.float32(0.9 - 0.02 * t)


def _wd(t):
    return np.float32(0.1 * (1 + t / 10))


def _scheduled(cls=K.AdamW, **kwargs):
    return hs.scheduled(
        cls(**kwargs),
        fused=True,
        learning_rate=0.05 * 0.9 ** (Step() / 3),
        beta_1=0.9 - 0.02 * Step(),
        weight_decay=0.1 * (1 + Step() / 10),
    )


def _train(opt, steps, compiled):
    w = keras.Variable(START.copy())
    opt.build([w])

    def step():
        grad = w.value - TARGET  # loss 0.5 * |w - target|^2
        opt.apply([grad], [w])

    run = tf.function(step) if compiled else step
    for _ in range(steps):
        run()
    return w.numpy()


def _adamw_float32(steps, beta_2=0.999, epsilon=1e-7):
    """AdamW in numpy float32, term for term as in ``hyperstep.backends.tensorflow``."""
    w, m, v = START.copy(), np.zeros(6, "float32"), np.zeros(6, "float32")
    one, b2, eps = np.float32(1), np.float32(beta_2), np.float32(epsilon)
    for t in range(steps):
        lr, b1, wd = _lr(t), _beta_1(t), _wd(t)
        g = w - TARGET
        w = w * (one - lr * wd)
        m = m + (g - m) * (one - b1)
        v = v + (g * g - v) * (one - b2)
        alpha = lr * np.sqrt(one - b2 ** np.float32(t + 1)) / (one - b1 ** np.float32(t + 1))
        w = w - m * alpha / (np.sqrt(v) + eps)
    return w


@pytest.mark.parametrize("compiled", [False, True])
def test_scheduled_adamw_is_adamw_in_float32(compiled):
    np.testing.assert_allclose(
        _train(_scheduled(), 12, compiled), _adamw_float32(12), rtol=1e-6, atol=1e-7
    )


def _op_types(opt):
    w = keras.Variable(START.copy())
    opt.build([w])
    step = tf.function(lambda: opt.apply([w.value - TARGET], [w]))
    return {op.type for op in step.get_concrete_function().graph.get_operations()}


def test_the_kernel_runs_only_with_fused_true():
    assert "ResourceApplyAdam" in _op_types(_scheduled())
    fused = hs.scheduled(K.Adam(), fused=True, learning_rate=1e-3 * Step())
    assert "ResourceApplyAdam" in _op_types(fused)
    # by default Keras's own update, schedules or not (bitwise: test_scheduled_exact.py)
    assert "ResourceApplyAdam" not in _op_types(hs.scheduled(K.AdamW()))
    assert "ResourceApplyAdam" not in _op_types(hs.scheduled(K.Adam(), learning_rate=Step()))
    assert "ResourceApplyAdam" in _op_types(type(fused).from_config(fused.get_config()))
    # amsgrad has no kernel here: Keras's update, with the one-pass decay
    assert "ResourceApplyAdam" not in _op_types(_scheduled(amsgrad=True))


def test_one_pass_weight_decay_for_other_optimizers():
    # SGD: w <- w * (1 - lr * wd) - lr * g, with g taken before the decay
    opt = hs.scheduled(
        K.SGD(),
        fused=True,
        learning_rate=0.05 * 0.9 ** (Step() / 3),
        weight_decay=0.1 * (1 + Step() / 10),
    )
    w = START.copy()
    for t in range(8):
        g = w - TARGET
        w = w * (np.float32(1) - _lr(t) * _wd(t)) - _lr(t) * g
    np.testing.assert_allclose(_train(opt, 8, compiled=False), w, rtol=1e-6)


def test_sparse_gradients_take_keras_update():
    # an Embedding's gradient is IndexedSlices: no kernel; Keras's sparse update, unchanged
    def train(opt, before_step=None):
        keras.utils.set_random_seed(0)
        table = keras.layers.Embedding(10, 3)
        table.build((None,))
        ids = tf.constant([1, 4, 4, 7])
        for t in range(5):
            if before_step is not None:
                before_step(t)
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(table(ids) - 1.0))
            grads = tape.gradient(loss, table.trainable_variables)
            assert isinstance(grads[0], tf.IndexedSlices)
            opt.apply(grads, table.trainable_variables)
        return table.embeddings.numpy()

    reference = K.Adam()
    expected = train(reference, lambda t: setattr(reference, "learning_rate", float(_lr(t))))
    actual = train(hs.scheduled(K.Adam(), fused=True, learning_rate=0.05 * 0.9 ** (Step() / 3)))
    np.testing.assert_allclose(actual, expected, rtol=1e-6)


@pytest.mark.parametrize(
    "extra",
    [
        {"gradient_accumulation_steps": 2},
        {"use_ema": True, "ema_overwrite_frequency": 3},
        {"clipnorm": 0.1},
    ],
    ids=["accumulation", "ema", "clipnorm"],
)
def test_the_kernel_composes_with_keras_optimizer_features(extra):
    # traced hs.scheduled against plain Keras Adam set before each step (eager); the clock
    # counts applied updates, so with accumulation the rate changes every second step
    every = extra.get("gradient_accumulation_steps", 1)
    reference = K.Adam(**extra)
    w_ref = keras.Variable(START.copy())
    reference.build([w_ref])
    for i in range(8):
        reference.learning_rate = float(_lr(i // every))
        reference.apply([w_ref.value - TARGET], [w_ref])
    opt = hs.scheduled(K.Adam(**extra), fused=True, learning_rate=0.05 * 0.9 ** (Step() / 3))
    if every == 1:  # (with accumulation the update is inside a cond's branch function)
        kernel = _op_types(hs.scheduled(K.Adam(**extra), fused=True, learning_rate=Step()))
        assert "ResourceApplyAdam" in kernel
    # Adam's step differs by ~1e-5 relative (1 - beta_2 rounded in float32): lr * 8 * 1e-5
    np.testing.assert_allclose(_train(opt, 8, compiled=True), w_ref.numpy(), atol=5e-6)


def _sgd(fused, nesterov):
    return hs.scheduled(
        K.SGD(momentum=0.5, nesterov=nesterov),
        fused=fused,
        learning_rate=0.05 * 0.9 ** (Step() / 3),
        momentum=0.9 - 0.01 * Step(),
    )


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_momentum_takes_keras_momentum_kernel_with_keras_formula(nesterov):
    """``ResourceApplyKerasMomentum`` computes Keras's ``m = m * momentum - g * lr``;
    ``w += m`` (Nesterov: ``w += m * momentum - g * lr``) in one op: equal to Keras's own
    update (the default path, bitwise Keras's SGD set per step) to float32 rounding (the
    kernel may contract a multiply-add where the separate ops round twice)."""
    expected = _train(_sgd(False, nesterov), 20, compiled=False)
    opt = _sgd(True, nesterov)
    w = keras.Variable(START.copy())
    opt.build([w])

    @tf.function
    def step():
        opt.apply([w.value - TARGET], [w])

    ops = {op.type for op in step.get_concrete_function().graph.get_operations()}
    assert "ResourceApplyKerasMomentum" in ops
    for _ in range(20):
        step()
    np.testing.assert_allclose(w.numpy(), expected, rtol=0, atol=1e-6)
    np.testing.assert_allclose(_train(_sgd(True, nesterov), 20, False), expected, rtol=0, atol=1e-6)
    assert not np.array_equal(expected, START)


def test_sgd_without_momentum_or_fused_keeps_keras_ops():
    opt = _sgd(False, False)
    w = keras.Variable(START.copy())
    opt.build([w])

    @tf.function
    def step():
        opt.apply([w.value - TARGET], [w])

    ops = {op.type for op in step.get_concrete_function().graph.get_operations()}
    assert "ResourceApplyKerasMomentum" not in ops


def _rmsprop(fused, centered):
    return hs.scheduled(
        K.RMSprop(momentum=0.5, centered=centered),
        fused=fused,
        learning_rate=0.01 * 0.9 ** (Step() / 3),
        rho=0.9 - 0.01 * Step(),
        momentum=0.8 - 0.01 * Step(),
    )


@pytest.mark.parametrize("centered", [False, True])
def test_rmsprop_momentum_takes_rmsprop_kernel_with_keras_formula(centered):
    """``ResourceApply(Centered)RMSProp`` computes Keras's RMSprop with momentum (``epsilon``
    inside the square root) in one op: equal to Keras's own update (the default path) to
    float32 rounding (TensorFlow updates ``v`` as ``v += (g^2 - v) * (1 - rho)``)."""
    expected = _train(_rmsprop(False, centered), 20, compiled=False)
    opt = _rmsprop(True, centered)
    w = keras.Variable(START.copy())
    opt.build([w])

    @tf.function
    def step():
        opt.apply([w.value - TARGET], [w])

    kernel = "ResourceApplyCenteredRMSProp" if centered else "ResourceApplyRMSProp"
    assert kernel in {op.type for op in step.get_concrete_function().graph.get_operations()}
    for _ in range(20):
        step()
    np.testing.assert_allclose(w.numpy(), expected, rtol=0, atol=2e-6)
    assert not np.array_equal(expected, START)
