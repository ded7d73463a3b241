"""Averaged weights resume exactly: a run saved, rebuilt, loaded and continued ends bitwise
equal to the uninterrupted run, through ``.keras``, ``save_weights`` and
``tf.train.Checkpoint`` (SWA, EMA on a schedule, a schedule-free rule)."""

import keras
import numpy as np
import pytest

import hyperstep as hs

#: every backend runs these in its own pass (tf.train.Checkpoint cases: TensorFlow only)
pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

RNG = np.random.default_rng(7)
W0 = RNG.normal(size=(4, 3)).astype("float32")
B0 = RNG.normal(size=(3,)).astype("float32")
X = RNG.normal(size=(12, 8, 4)).astype("float32")
Y = RNG.normal(size=(12, 8, 3)).astype("float32")
STEPS, SAVED_AT = 12, 7
DECAY = "min(0.9, (1 + step) / (10 + step))"


def build(kind):
    """The program of a run, as a new process would execute it before loading."""
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.set_weights([W0, B0])
    if kind == "schedule_free":
        opt = hs.StepOptimizer(hs.rules.ScheduleFreeAdamWRule(), learning_rate=0.01, warmup_steps=3)
    elif kind == "swa":
        opt = hs.scheduled(keras.optimizers.SGD(momentum=0.9), learning_rate="0.05 * 0.9**step")
    else:
        opt = hs.StepOptimizer("adam", learning_rate=0.01)
    model.compile(optimizer=opt, loss="mse")
    if kind == "swa":
        hs.SWA(opt, start=3, every=2)
    elif kind == "ema":
        hs.EMA(opt, decay=DECAY, start=2)
    return model, opt


def train(model, opt, steps):
    for i in steps:
        w, b = (v.numpy() for v in model.trainable_variables)
        residual = 2 * (X[i] @ w + b - Y[i]) / Y[i].size
        grads = [(X[i].T @ residual).astype("float32"), residual.sum(0).astype("float32")]
        opt.apply([keras.ops.convert_to_tensor(g) for g in grads], model.trainable_variables)
        average = getattr(opt, "_hs_average", None)
        if average is not None:
            average.update()


def weights(model, opt):
    raw = [v.numpy() for v in model.trainable_variables]
    with hs.averaged_weights(opt):
        averaged = [v.numpy() for v in model.trainable_variables]
    assert not np.array_equal(raw[0], averaged[0])
    return raw, averaged


def save_and_load(kind, way, model, opt, path):
    if way == "keras":
        model.save(path / "run.keras")
        resumed = keras.models.load_model(path / "run.keras")
        opt = resumed.optimizer
        if kind == "swa":  # the same construction continues the restored average
            assert hs.SWA(opt, start=3, every=2).state is opt._hs_average_state
        elif kind == "ema":
            assert hs.EMA(opt, decay=DECAY, start=2).state is opt._hs_average_state
        return resumed, opt
    resumed, new_opt = build(kind)
    new_opt.build(resumed.trainable_variables)  # Keras restores an optimizer's slots once built
    if way == "weights":
        model.save_weights(path / "run.weights.h5")
        resumed.load_weights(path / "run.weights.h5")
    else:  # the averages do not exist yet: TensorFlow restores them when they are created
        import tensorflow as tf

        tf.train.Checkpoint(model=model, optimizer=opt).write(str(path / "ckpt"))
        tf.train.Checkpoint(model=resumed, optimizer=new_opt).read(str(path / "ckpt"))
    return resumed, new_opt


@pytest.mark.parametrize("way", ["keras", "weights", "checkpoint"])
@pytest.mark.parametrize("kind", ["swa", "ema", "schedule_free"])
def test_a_resumed_run_ends_bitwise_equal_to_the_uninterrupted_run(kind, way, tmp_path):
    if way == "checkpoint" and keras.backend.backend() != "tensorflow":
        pytest.skip("tf.train.Checkpoint saves TensorFlow variables only")
    whole, whole_opt = build(kind)
    train(whole, whole_opt, range(STEPS))
    expected = weights(whole, whole_opt)

    first, opt = build(kind)
    train(first, opt, range(SAVED_AT))
    resumed, opt = save_and_load(kind, way, first, opt, tmp_path)
    train(resumed, opt, range(SAVED_AT, STEPS))
    for got, want in zip(weights(resumed, opt), expected, strict=True):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
    assert int(opt.clock.step) == STEPS
    if kind != "schedule_free":
        n = whole_opt._hs_average_state.n_averaged
        assert int(opt._hs_average_state.n_averaged) == int(n) > 0
    for a, b in zip(whole_opt.variables, opt.variables, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_fit_resumed_from_a_keras_file_saved_inside_the_swap(tmp_path):
    """``fit`` with the SWA callback, saved with the averaged weights in the variables:
    ``AveragedWeights`` puts the training weights back before the next epoch."""
    data = (X.reshape(-1, 4), Y.reshape(-1, 3))

    def fit(model, opt, epochs, *extra):
        callbacks = [opt._hs_average, *extra]
        model.fit(*data, batch_size=8, epochs=epochs, shuffle=False, verbose=0, callbacks=callbacks)

    whole, whole_opt = build("swa")
    fit(whole, whole_opt, 2)
    first, opt = build("swa")
    fit(first, opt, 1)
    with hs.averaged_weights(opt):
        first.save(tmp_path / "run.keras")
    resumed = keras.models.load_model(tmp_path / "run.keras")
    opt = resumed.optimizer
    hs.SWA(opt, start=3, every=2)
    fit(resumed, opt, 1, hs.callbacks.AveragedWeights(opt, at_end="training"))
    for got, want in zip(weights(resumed, opt), weights(whole, whole_opt), strict=True):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


def test_averaged_weights_works_on_a_restored_optimizer_before_the_average_is_constructed(
    tmp_path,
):
    model, opt = build("ema")
    train(model, opt, range(4))
    expected = weights(model, opt)
    model.save(tmp_path / "run.keras")
    resumed = keras.models.load_model(tmp_path / "run.keras")
    got = weights(resumed, resumed.optimizer)
    for a, b in zip(got[1], expected[1], strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_different_average_replaces_the_restored_one():
    _, opt = build("swa")
    held = opt._hs_average_state
    assert hs.SWA(opt, start=3, every=2).state is held
    assert hs.SWA(opt, start=4, every=2).state is not held
    assert opt._hs_average_state.get_config()["start"] == 4


@pytest.mark.parametrize("copy_of", ["pickle", "deepcopy"])
def test_pickle_and_deepcopy_keep_the_average(copy_of):
    """A copied optimizer is not built (Keras's pickle of an optimizer alone): its average's
    counters come back at once, the averages when the copy is built."""
    import copy
    import pickle

    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
    w = keras.Variable(W0)
    ema = hs.EMA(opt, decay=DECAY, start=1)
    for i in range(4):
        opt.apply([keras.ops.convert_to_tensor(X[i, :4, :3])], [w])
        ema.update()
    copied = pickle.loads(pickle.dumps(opt)) if copy_of == "pickle" else copy.deepcopy(opt)
    state = copied._hs_average_state
    assert state is not opt._hs_average_state and state.matches(opt._hs_average_state)
    assert int(state.n_averaged) == int(ema.n_averaged) == 4
    copied.build([keras.Variable(W0)])
    np.testing.assert_array_equal(
        state.build_averages(copied._trainable_variables)[0].numpy(), ema.averages[0].numpy()
    )
