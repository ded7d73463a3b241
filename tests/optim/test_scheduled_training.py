"""hs.scheduled in training: traced once, fit, saving (four ways), the GAN clock, errors."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs
from hyperstep.schedules.expressions import Function, Step

K = keras.optimizers
X = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
Y = np.random.default_rng(1).normal(size=(32, 2)).astype("float32")


class CountingModel(keras.Sequential):
    """A Sequential model that counts how often its train step is traced."""

    traces = 0

    def train_step(self, data):
        self.traces += 1
        return super().train_step(data)


def _model(cls=keras.Sequential):
    keras.utils.set_random_seed(0)
    return cls([keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(2)])


def _adamw(clock=None):
    return hs.scheduled(
        K.AdamW(),
        clock=clock,
        learning_rate=0.01 * 0.9 ** (Step() / 10),
        weight_decay=0.01 * (1 + Step() / 100),
        beta_1=Function("min", [0.8 + Step() / 1000, 0.95]),
    )


def test_custom_loop_of_1000_steps_with_schedules_and_overrides_traces_once():
    model = _model()
    opt = _adamw()
    lr = opt.hyperparameters["learning_rate"]
    opt.build(model.trainable_variables)

    @tf.function
    def step(x, y):
        used = lr.value  # the value the update at this step uses
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        opt.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        return used

    seen, expected = [], []
    x, y = tf.constant(X[:8]), tf.constant(Y[:8])
    for t in range(1000):
        if t % 20 == 0:
            opt.hyperparameters["beta_1"].set(0.5 + t / 4000)  # 50 sets ...
        if t % 20 == 10:
            opt.hyperparameters["beta_1"].clear()  # ... and 50 clears
        if t % 100 == 50:
            lr.scale.assign(lr.scale * 0.5)  # 10 plateau-like reductions
        if t % 50 == 0:  # the next 50 steps' values under the scale now in force, read at once
            expected += keras.ops.convert_to_numpy(lr.at(np.arange(t, t + 50))).tolist()
        seen.append(float(step(x, y)))
    assert step.experimental_get_tracing_count() == 1
    assert int(opt.clock.step) == 1000 and int(opt.iterations) == 1000
    np.testing.assert_allclose(seen, expected, rtol=1e-6)  # graph vs eager pow: 1 ulp


@pytest.mark.parametrize("jit_compile", [False, True])
def test_fit_traces_its_train_step_once_and_advances_the_clock_per_batch(jit_compile):
    model = _model(CountingModel)
    opt = _adamw()
    model.compile(opt, "mse", jit_compile=jit_compile)
    opt.build(model.trainable_variables)  # unbuilt, Keras traces twice (plain Adam too)
    history = model.fit(X, Y, batch_size=8, epochs=3, verbose=0)
    assert model.traces == 1
    assert int(opt.clock.step) == 12 and int(opt.iterations) == 12
    assert np.isfinite(history.history["loss"]).all()
    np.testing.assert_allclose(float(opt.learning_rate), 0.01 * 0.9**1.2, rtol=1e-6)


# ---- saving ----------------------------------------------------------------------------
def _compiled(clock=None):
    model = _model()
    opt = _adamw(clock)
    model.compile(opt, "mse")
    opt.build(model.trainable_variables)
    return model, opt


def _mutate(opt):
    hps = opt.hyperparameters
    hps["learning_rate"].scale.assign(0.25)
    hps["beta_1"].set(0.7)
    hps["learning_rate"].add_state("best", 0.0).assign(1.5)


def _state(model, opt):
    hps = opt.hyperparameters
    return {
        "clock": int(opt.clock.step),
        "hyperparameters": {k: [v.numpy().tolist() for v in hp.variables] for k, hp in hps.items()},
        "optimizer": [v.numpy() for v in opt.variables],
        "weights": [v.numpy() for v in model.weights],
    }


def _assert_same(a, b):
    assert a["clock"] == b["clock"]
    np.testing.assert_equal(a["hyperparameters"], b["hyperparameters"])  # nan: no override
    for x, y in zip(a["optimizer"] + a["weights"], b["optimizer"] + b["weights"], strict=True):
        np.testing.assert_array_equal(x, y)


def _continue(model, epochs=1):
    model.fit(X, Y, batch_size=8, epochs=epochs, verbose=0, shuffle=False)
    return [v.numpy() for v in model.weights]


def _trained():
    model, opt = _compiled()
    model.fit(X, Y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    _mutate(opt)
    return model, opt


def _restored_and_continued(model, opt, restored_model, restored_opt):
    restored_opt.hyperparameters["learning_rate"].add_state("best", 0.0)  # e.g. a controller
    _assert_same(_state(restored_model, restored_opt), _state(model, opt))
    for a, b in zip(_continue(restored_model), _continue(model), strict=True):
        np.testing.assert_array_equal(a, b)
    assert int(restored_opt.clock.step) == int(opt.clock.step) == 8


def test_keras_format_restores_clock_and_hyperparameter_state_exactly(tmp_path):
    model, opt = _trained()
    model.save(tmp_path / "m.keras")
    restored = keras.models.load_model(tmp_path / "m.keras")
    _restored_and_continued(model, opt, restored, restored.optimizer)


def test_save_weights_restores_clock_and_hyperparameter_state_exactly(tmp_path):
    model, opt = _trained()
    model.save_weights(tmp_path / "m.weights.h5")
    restored, restored_opt = _compiled()
    restored.load_weights(tmp_path / "m.weights.h5")
    _restored_and_continued(model, opt, restored, restored_opt)


def test_tf_checkpoint_restores_clock_and_hyperparameter_state_exactly(tmp_path):
    model, opt = _trained()
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "ckpt"))
    restored, restored_opt = _compiled()
    tf.train.Checkpoint(model=restored, optimizer=restored_opt).restore(path)
    _restored_and_continued(model, opt, restored, restored_opt)


def test_backup_and_restore_resumes_to_the_uninterrupted_result(tmp_path):
    uninterrupted, opt = _compiled()
    expected = _continue(uninterrupted, epochs=3)

    class _Stop(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise KeyboardInterrupt  # the run dies after two epochs were backed up

    backup = str(tmp_path / "backup")
    first, _ = _compiled()
    with pytest.raises(KeyboardInterrupt):
        first.fit(X, Y, batch_size=8, epochs=3, verbose=0, shuffle=False,
                  callbacks=[keras.callbacks.BackupAndRestore(backup), _Stop()])  # fmt: skip
    resumed, resumed_opt = _compiled()
    resumed.fit(X, Y, batch_size=8, epochs=3, verbose=0, shuffle=False,
                callbacks=[keras.callbacks.BackupAndRestore(backup)])  # fmt: skip
    assert int(resumed_opt.clock.step) == int(opt.clock.step) == 12
    for a, b in zip([v.numpy() for v in resumed.weights], expected, strict=True):
        np.testing.assert_array_equal(a, b)


def test_get_config_round_trips_through_json():
    opt = _adamw()
    config = json.loads(json.dumps(K.serialize(opt)))
    restored = K.deserialize(config)
    assert type(restored) is type(opt) and isinstance(restored, K.AdamW)
    assert set(restored.hyperparameters) == set(opt.hyperparameters)
    steps = np.array([0, 1, 99, 100, 150, 10_000])
    for name, hp in opt.hyperparameters.items():
        np.testing.assert_array_equal(restored.hyperparameters[name].at(steps), hp.at(steps))


# ---- GAN: one clock, two optimizers ----------------------------------------------------
def test_gan_optimizers_share_one_clock_that_advances_once_per_generator_step():
    clock = hs.Clock()
    schedule = 1e-3 * 0.5 ** (Step() / 10)
    g_opt = hs.scheduled(K.Adam(), clock=clock, learning_rate=schedule)  # first: owns it
    d_opt = hs.scheduled(K.Adam(), clock=clock, learning_rate=schedule)
    g, d = keras.Variable(np.ones(3, "float32")), keras.Variable(np.ones(3, "float32"))
    seen = []

    @tf.function
    def train_step():
        d_lrs = []
        for _ in range(2):  # two discriminator steps ...
            d_lrs.append(d_opt.learning_rate)
            d_opt.apply([tf.ones(3)], [d])
        g_lr = g_opt.learning_rate
        g_opt.apply([tf.ones(3)], [g])  # ... then one generator step, which advances
        return d_lrs, g_lr

    for _ in range(50):
        d_lrs, g_lr = train_step()
        seen.append([float(v) for v in d_lrs] + [float(g_lr)])
    seen = np.array(seen)
    np.testing.assert_array_equal(seen[:, 0], seen[:, 2])  # D and G see the same value
    np.testing.assert_array_equal(seen[:, 1], seen[:, 2])
    expected = [float(schedule(t)) for t in range(50)]
    np.testing.assert_allclose(seen[:, 2], expected, rtol=1e-6)
    assert int(clock.step) == 50
    assert int(g_opt.iterations) == 50 and int(d_opt.iterations) == 100


def test_a_second_optimizer_cannot_also_advance_a_shared_clock():
    clock = hs.Clock()
    owner = hs.scheduled(K.SGD(), clock=clock)
    with pytest.raises(ValueError, match=r"already advanced.*Received: advance=True"):
        hs.scheduled(K.SGD(), clock=clock, advance=True)
    reader = hs.scheduled(K.SGD(), clock=clock, advance=False)
    reader.apply([tf.ones(1)], [keras.Variable(np.ones(1, "float32"))])
    assert int(clock.step) == 0
    owner.apply([tf.ones(1)], [keras.Variable(np.ones(1, "float32"))])
    assert int(clock.step) == 1


# ---- errors ----------------------------------------------------------------------------
def test_unknown_name_suggests_the_close_one_and_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"Did you mean 'beta_1'\?.*Valid: learning_rate, beta_1"):
        hs.scheduled(K.Adam(), beta1=0.9)


def test_non_numeric_and_structural_arguments_are_refused_by_name():
    with pytest.raises(ValueError, match=r"`amsgrad` is not a numeric hyperparameter.*bool"):
        hs.scheduled(K.Adam(), amsgrad=True)
    with pytest.raises(ValueError, match=r"`gradient_accumulation_steps` cannot be scheduled"):
        hs.scheduled(K.Adam(), gradient_accumulation_steps=2)


def test_wrappers_applied_optimizers_and_wrong_types_are_refused():
    with pytest.raises(ValueError, match=r"schedule the optimizer inside"):
        hs.scheduled(K.LossScaleOptimizer(K.Adam()))
    used = K.SGD()
    used.apply([tf.ones(1)], [keras.Variable(np.ones(1, "float32"))])
    with pytest.raises(ValueError, match=r"needs a fresh optimizer"):
        hs.scheduled(used)
    with pytest.raises(ValueError, match=r"already scheduled"):
        hs.scheduled(hs.scheduled(K.SGD()))
    with pytest.raises(TypeError, match=r"Received: optimizer='adam'"):
        hs.scheduled("adam")
    with pytest.raises(TypeError, match=r"Received: clock=5"):
        hs.scheduled(K.SGD(), clock=5)
    with pytest.raises(TypeError, match=r"Received: learning_rate=\[0.1\]"):
        hs.scheduled(K.SGD(), learning_rate=[0.1])


def test_a_scheduled_optimizer_inside_a_loss_scale_optimizer_trains_and_saves(tmp_path):
    model = _model()
    inner = hs.scheduled(K.Adam(), learning_rate="0.01 * 0.5 ** (step / 4)")
    model.compile(K.LossScaleOptimizer(inner), "mse")
    model.fit(X, Y, batch_size=8, epochs=2, verbose=0)
    assert int(inner.clock.step) == int(inner.iterations) == 8
    np.testing.assert_allclose(float(inner.learning_rate), 0.0025, rtol=1e-6)
    model.save(tmp_path / "m.keras")
    restored = keras.models.load_model(tmp_path / "m.keras").optimizer.inner_optimizer
    assert int(restored.clock.step) == 8


def test_keras_reduce_lr_on_plateau_multiplies_the_schedule_instead_of_raising():
    # plain Keras raises "learning rate is not settable" with a schedule (DESIGN fact 1);
    # on a scheduled optimizer each reduction multiplies the running schedule (issue 14)
    model = _model()
    opt = hs.scheduled(K.Adam(), learning_rate=0.01 * 0.5 ** (Step() / 100))
    model.compile(opt, "mse")
    plateau = keras.callbacks.ReduceLROnPlateau(
        monitor="loss", factor=0.5, patience=0, min_delta=10
    )
    model.fit(X, Y, batch_size=8, epochs=3, verbose=0, callbacks=[plateau])
    lr = opt.hyperparameters["learning_rate"]
    assert not bool(lr.is_set)
    assert float(lr.scale) == 0.25  # reduced at the ends of epochs 2 and 3, each exact
    np.testing.assert_allclose(float(lr.value), 0.01 * 0.5 ** (12 / 100) * 0.25, rtol=1e-5)
