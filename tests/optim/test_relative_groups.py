"""Group values relative to the optimizer's own: ``learning_rate="10 * learning_rate"``.

The group's value is the optimizer's effective value (schedule, scale, override, cooldown)
times 10 in float32 at every step; the oracle is that product computed by NumPy from the
optimizer's own value. What training uses is read from the weights: with ``loss =
mean(model(x))`` the gradient of a Dense layer's bias is exactly 1, so one SGD update moves
the bias by minus the learning rate it used.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError, ScheduleSyntaxError

STEPS = np.arange(0, 130)
TEN = np.float32(10)


def _optimizer(**kwargs):
    return hs.scheduled(
        keras.optimizers.SGD(),
        learning_rate="warmup(cosine(0.1, steps=100), steps=10)",
        groups=[hs.Group("head", match="*bias", learning_rate="10 * learning_rate")],
        **kwargs,
    )


def _values(opt):
    main = keras.ops.convert_to_numpy(opt.hyperparameters["learning_rate"].at(STEPS))
    group = keras.ops.convert_to_numpy(opt.hyperparameters["head/learning_rate"].at(STEPS))
    return main, group


def _assert_ten_times(opt):
    main, group = _values(opt)
    np.testing.assert_array_equal(group, TEN * main)
    return main


def test_group_follows_schedule_scale_override_and_cooldown():
    opt = _optimizer()
    main_hp = opt.hyperparameters["learning_rate"]
    scheduled = _assert_ten_times(opt)
    assert scheduled[50] != scheduled[10]  # the main value does follow its schedule
    main_hp.scale.assign(0.25)
    np.testing.assert_array_equal(_assert_ten_times(opt), np.float32(0.25) * scheduled)
    main_hp.set(0.003)
    np.testing.assert_array_equal(_assert_ten_times(opt), np.full(STEPS.shape, np.float32(0.003)))
    main_hp.clear()
    np.testing.assert_array_equal(_assert_ten_times(opt), np.float32(0.25) * scheduled)
    hs.Cooldown(main_hp, steps=20, shape="linear").start(at=30)
    cooled = _assert_ten_times(opt)
    assert cooled[60] == 0.0 and cooled[20] == np.float32(0.25) * scheduled[20]


def test_repr_reads_back_and_errors_name_the_known_names_and_the_cycle():
    opt = _optimizer()
    assert repr(opt.groups["head"].hyperparameters["learning_rate"].schedule) == (
        "10.0 * learning_rate"
    )
    with pytest.raises(ScheduleSyntaxError, match=r"unknown name 'lerning_rate'; did you mean "):
        hs.scheduled(
            keras.optimizers.SGD(),
            groups=[hs.Group("head", match="*", learning_rate="10 * lerning_rate")],
        )
    with pytest.raises(
        ScheduleSyntaxError, match=r"names: step, epoch, total, progress, pi, e, learning_rate"
    ):
        hs.scheduled(keras.optimizers.SGD(), groups=[hs.Group("h", match="*", momentum="lr")])
    with pytest.raises(InvalidArgumentError, match=r"cycle: learning_rate -> learning_rate"):
        hs.scheduled(keras.optimizers.SGD(), learning_rate="0.5 * learning_rate")
    with pytest.raises(
        InvalidArgumentError, match=r"cycle: learning_rate -> momentum -> learning_rate"
    ):
        hs.scheduled(
            keras.optimizers.SGD(), learning_rate="0.1 * momentum", momentum="learning_rate"
        )
    with pytest.raises(InvalidArgumentError, match=r"cycle: learning_rate -> momentum ->"):
        hs.StepOptimizer("sgd", learning_rate="momentum / 10", momentum="10 * learning_rate")


def test_optimizer_values_may_name_each_other_without_a_cycle():
    opt = hs.scheduled(
        keras.optimizers.AdamW(),
        learning_rate="cosine(0.1, steps=50)",
        weight_decay="learning_rate",
    )
    main = keras.ops.convert_to_numpy(opt.hyperparameters["learning_rate"].at(STEPS))
    decay = keras.ops.convert_to_numpy(opt.hyperparameters["weight_decay"].at(STEPS))
    np.testing.assert_array_equal(decay, main)


def test_get_config_round_trip_keeps_the_text_and_the_link():
    opt = _optimizer()
    config = opt.get_config()
    assert config["groups"][0]["hyperparameters"] == {"learning_rate": "10.0 * learning_rate"}
    loaded = type(opt).from_config(config)
    loaded.hyperparameters["learning_rate"].scale.assign(0.5)
    _assert_ten_times(loaded)

    step = hs.StepOptimizer(
        "sgd",
        learning_rate="cosine(0.1, steps=100)",
        momentum="0.9 - learning_rate",
        groups=[hs.Group("head", match="*bias", learning_rate="10 * learning_rate")],
    )
    config = step.get_config()
    assert config["momentum"] == "0.9 - learning_rate"
    assert config["groups"][0]["hyperparameters"] == {"learning_rate": "10.0 * learning_rate"}
    loaded_step = hs.StepOptimizer.from_config(config)
    loaded_step.hyperparameters["learning_rate"].set(0.02)
    hps = loaded_step.hyperparameters
    assert float(hps["head/learning_rate"].value) == np.float32(10) * np.float32(0.02)
    assert float(hps["momentum"].value) == np.float32(np.float32(0.9) - np.float32(0.02))


def _model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="head")])
    model.set_weights([np.ones((3, 1), "float32"), np.zeros((1,), "float32")])
    return model


def _mean(y_true, y_pred):
    del y_true
    return keras.ops.mean(y_pred)  # d loss / d bias = 1 exactly


def test_plateau_reduction_of_the_main_rate_reaches_the_group_in_fit():
    model, opt = _model(), _optimizer()
    main_hp = opt.hyperparameters["learning_rate"]
    # min_delta=10: no later epoch improves on the first, so each one halves the main rate
    plateau = hs.ReduceOnPlateau(main_hp, monitor="loss", factor=0.5, patience=0, min_delta=10)
    rows = []

    class Used(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            bias = float(model.layers[0].bias.numpy()[0])
            rows.append([bias, float(main_hp.value)])

        def on_train_batch_end(self, batch, logs=None):
            rows[-1].append(float(model.layers[0].bias.numpy()[0]))

    model.compile(opt, _mean)
    x = np.random.default_rng(0).normal(size=(32, 3)).astype("float32")
    model.fit(
        x, x[:, :1], batch_size=8, epochs=4, shuffle=False, verbose=0, callbacks=[Used(), plateau]
    )
    assert plateau.reductions == 3 and float(main_hp.scale.numpy()) == 0.5**3
    before, main, after = np.array(rows).T
    used = before - after  # the group's rate each update used (up to the bias's rounding)
    np.testing.assert_allclose(used, 10 * main, rtol=1e-5)
    # the main rate did drop: before epoch e it was halved max(0, e - 1) times
    halved = np.float32(0.5) ** np.maximum(0, np.arange(16) // 4 - 1)
    schedule = keras.ops.convert_to_numpy(main_hp.schedule(np.arange(16)))
    np.testing.assert_array_equal(main, (schedule * halved).astype("float32"))


def test_traced_once_across_main_value_changes():
    model, opt = _model(), _optimizer()
    main_hp = opt.hyperparameters["learning_rate"]
    traces = []

    @tf.function
    def step(x):
        traces.append(1)
        with tf.GradientTape() as tape:
            loss = _mean(None, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply(grads, model.trainable_variables)

    x = np.ones((4, 3), "float32")
    changes = {3: lambda: main_hp.scale.assign(0.5), 5: lambda: main_hp.set(0.01), 7: main_hp.clear}
    for t in range(10):
        if t in changes:
            changes[t]()
        expected = TEN * np.float32(main_hp.value.numpy())
        before = model.layers[0].bias.numpy()[0]
        step(x)
        used = before - model.layers[0].bias.numpy()[0]
        assert used == pytest.approx(float(expected), rel=1e-5), t
    assert len(traces) == 1


def test_pickle_and_deepcopy_link_the_copy_to_its_own_main_value():
    import copy
    import pickle

    opt = _optimizer()
    opt.hyperparameters["learning_rate"].scale.assign(0.5)
    for copied in (pickle.loads(pickle.dumps(opt)), copy.deepcopy(opt)):
        copied.hyperparameters["learning_rate"].set(0.01)
        _assert_ten_times(copied)
        assert float(copied.hyperparameters["head/learning_rate"].value) == TEN * np.float32(0.01)
    _assert_ten_times(opt)  # the original still follows its own (scaled, not set) value
    assert not bool(opt.hyperparameters["learning_rate"].is_set)


def test_parse_takes_extra_names():
    three = hs.schedules.constant(3.0)
    schedule = hs.parse("2 * x + step", names={"x": three})
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(schedule([0, 5])), [6.0, 11.0])
    with pytest.raises(
        ScheduleSyntaxError,
        match=r"unknown name 'y' \(names: step, epoch, total, progress, pi, e, x\)",
    ):
        hs.parse("2 * y", names={"x": three})
