"""SkipNonFinite against optax.apply_if_finite(optax.adam(schedule), max_consecutive_errors).

Non-finite gradients at updates {3, 7, 8}; weights, counters, the clock (optax's inner
count) and the schedule's value are compared after every update, in the TensorFlow and the
JAX pass.
"""

import functools

import keras
import numpy as np
import pytest

import hyperstep as hs

RNG = np.random.default_rng(2)
W0 = RNG.normal(size=(4, 3)).astype("float32")
B0 = RNG.normal(size=(3,)).astype("float32")
X = RNG.normal(size=(20, 8, 4)).astype("float32")
Y = RNG.normal(size=(20, 8, 3)).astype("float32")
BAD = {3: np.nan, 7: np.inf, 8: np.nan}
STEPS = 20


def gradients(k, w, b):
    residual = 2 * (X[k] @ w + b - Y[k]) / Y[k].size
    gw, gb = (X[k].T @ residual).astype("float32"), residual.sum(0).astype("float32")
    if k in BAD:
        gw[1, 2] = BAD[k]
    return gw, gb


def run_ours(max_consecutive_errors, compiled, scheduled=False):
    """Per update: weights, consecutive and total skips, clock step, learning rate."""
    variables = [keras.Variable(W0), keras.Variable(B0)]
    schedule = hs.schedules.cosine(0.1, steps=STEPS, end=0.01)
    # epsilon 1e-12: Keras adds it to sqrt(v), optax to sqrt(v / (1 - beta_2**t))
    if scheduled:
        inner = hs.scheduled(keras.optimizers.Adam(epsilon=1e-12), learning_rate=schedule)
    else:
        inner = hs.StepOptimizer("adam", learning_rate=schedule, epsilon=1e-12)
    opt = hs.SkipNonFinite(inner, max_consecutive_errors=max_consecutive_errors)
    opt.build(variables)
    apply = _compiled_apply(opt, variables) if compiled else opt.apply
    records = []
    for k in range(STEPS):
        grads = [
            keras.ops.convert_to_tensor(g) for g in gradients(k, *(v.numpy() for v in variables))
        ]
        apply(grads, variables)
        records.append(
            {
                "weights": [v.numpy().tolist() for v in variables],
                "consecutive": int(opt.consecutive_skips.numpy()),
                "total": int(opt.total_skips.numpy()),
                "step": int(opt.clock.step.numpy()),
                "learning_rate": float(opt.learning_rate),
            }
        )
    return records


def _compiled_apply(opt, variables):
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        step = tf.function(lambda grads: opt.apply(grads, variables))
        return lambda grads, _: step(grads)
    import jax

    stateless = jax.jit(opt.stateless_apply)

    def apply(grads, _):  # what Keras's JAX trainer does in fit
        new_trainable, new_optimizer = stateless(
            [v.value for v in opt.variables], grads, [v.value for v in variables]
        )
        for v, value in zip(variables, new_trainable, strict=True):
            v.assign(value)
        for v, value in zip(opt.variables, new_optimizer, strict=True):
            v.assign(value)

    return apply


@functools.cache
def run_optax(max_consecutive_errors):
    optax = pytest.importorskip("optax")
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    schedule = optax.cosine_decay_schedule(0.1, STEPS, alpha=0.1)
    tx = optax.apply_if_finite(optax.adam(schedule, eps=1e-12), max_consecutive_errors)
    params = [jnp.asarray(W0), jnp.asarray(B0)]
    state = tx.init(params)
    update = jax.jit(tx.update)  # op by op, optax's update takes ~0.5 s
    records = []
    for k in range(STEPS):
        grads = [jnp.asarray(g) for g in gradients(k, *(np.asarray(p) for p in params))]
        updates, state = update(grads, state, params)
        params = optax.apply_updates(params, updates)
        count = int(state.inner_state[1].count)
        records.append(
            {
                "weights": [np.asarray(p).tolist() for p in params],
                "consecutive": int(state.notfinite_count),
                "total": int(state.total_notfinite),
                "step": count,
                "learning_rate": float(schedule(count)),
            }
        )
    return records


def assert_same(ours, theirs, atol=1e-6):
    assert len(ours) == len(theirs)
    for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert (a["consecutive"], a["total"], a["step"]) == (
            b["consecutive"],
            b["total"],
            b["step"],
        ), k
        np.testing.assert_allclose(a["learning_rate"], b["learning_rate"], rtol=1e-6)
        for x, y in zip(a["weights"], b["weights"], strict=True):
            # O(1) weights moved by up to lr = 0.1 per update; Keras's and optax's Adam
            # round differently (bias correction on lr vs on the moments): 1e-6 absolute
            np.testing.assert_allclose(np.array(x), np.array(y), rtol=1e-6, atol=atol, err_msg=k)


CASES = [(2, False), (2, True), (1, False), (1, True)]  # 1: the third skip in a row goes through


@pytest.mark.backend("tensorflow", "jax")
@pytest.mark.parametrize(("max_consecutive_errors", "compiled"), CASES)
def test_skips_equal_optax_apply_if_finite(max_consecutive_errors, compiled):
    assert_same(run_ours(max_consecutive_errors, compiled), run_optax(max_consecutive_errors))


def test_skips_around_hs_scheduled_equal_optax_apply_if_finite():
    # hs.scheduled's TensorFlow Adam (fused kernel, once a value follows a schedule) rounds
    # 1 - beta once more than Keras's Python float: 1e-5 on the weights, counters exact
    assert_same(run_ours(2, False, scheduled=True), run_optax(2), atol=1e-5)


def test_skips_in_fit_and_the_counters_are_saved(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    y = rng.normal(size=(64, 3)).astype("float32")
    x[20, 1] = np.nan  # in the second of four batches
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    inner = hs.StepOptimizer("adam", learning_rate="0.01 * 0.9 ** step")
    opt = hs.SkipNonFinite(inner, max_consecutive_errors=3)
    model.compile(optimizer=opt, loss="mse")
    model.fit(x, y, batch_size=16, epochs=2, verbose=0, shuffle=False)
    assert (int(opt.total_skips), int(opt.consecutive_skips)) == (2, 0)
    assert int(opt.clock.step) == int(opt.iterations) == 6
    assert np.isfinite(model.get_weights()[0]).all()
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras").optimizer
    assert (int(loaded.total_skips), int(loaded.clock.step)) == (2, 6)


def test_a_skipped_update_leaves_slots_and_iterations_alone():
    variables = [keras.Variable(W0)]
    opt = hs.SkipNonFinite(hs.StepOptimizer("adam"))
    opt.apply([keras.ops.ones((4, 3))], variables)
    before = [v.numpy().copy() for v in opt.inner_optimizer.variables]
    opt.apply([keras.ops.full((4, 3), np.nan)], variables)
    assert int(opt.iterations) == 1 and int(opt.clock.step) == 1
    for a, b in zip(before, opt.inner_optimizer.variables, strict=True):
        np.testing.assert_array_equal(a, b.numpy())


def test_config_round_trips():
    opt = hs.SkipNonFinite(hs.StepOptimizer("adam", learning_rate=0.01), max_consecutive_errors=3)
    again = hs.SkipNonFinite.from_config(opt.get_config())
    assert again.max_consecutive_errors == 3
    assert float(again.learning_rate) == pytest.approx(0.01)


def test_max_consecutive_errors_is_checked():
    with pytest.raises(ValueError, match="Received: max_consecutive_errors=-1"):
        hs.SkipNonFinite(hs.StepOptimizer("adam"), max_consecutive_errors=-1)
