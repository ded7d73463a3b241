"""StepOptimizer: clock, hyperparameters without retracing, fit/jit, save/load, config."""

import inspect
import json
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError
from hyperstep.optim.optimizer import KERAS_ARGUMENTS, check_names, pick_clock
from hyperstep.optim.rules import AdamWRule, SGDRule

X = np.random.RandomState(0).randn(32, 4).astype("float32")
Y = np.random.RandomState(1).randn(32, 2).astype("float32")


def make_model() -> keras.Model:
    keras.utils.set_random_seed(2)
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(5, activation="tanh"), keras.layers.Dense(2)]
    )


def weights(model: keras.Model) -> list[np.ndarray]:
    return [v.numpy() for v in model.trainable_variables]


def test_defaults_become_hyperparameters_on_one_clock() -> None:
    opt = hs.StepOptimizer("adam", learning_rate=0.01)
    assert list(opt.hyperparameters) == ["learning_rate", "beta_1", "beta_2", "epsilon"]
    assert all(isinstance(hp, hs.Hyperparameter) for hp in opt.hyperparameters.values())
    assert all(hp.clock is opt.clock for hp in opt.hyperparameters.values())
    assert float(opt.hyperparameters["beta_2"].value) == pytest.approx(0.999)
    assert float(opt.learning_rate) == pytest.approx(0.01)


def test_traced_once_across_100_hyperparameter_changes_and_matches_numpy() -> None:
    w = keras.Variable(np.linspace(-1, 1, 5).astype("float32"))
    target = np.linspace(2, 0, 5).astype("float32")
    opt = hs.StepOptimizer(
        hs.rules.SGDRule(), learning_rate=hs.parse("step") * 0.001 + 0.05, momentum=0.5
    )
    opt.build([w])  # slot variables are created before tracing, as in Keras
    traces = []

    @tf.function
    def train_step() -> None:
        traces.append(1)
        with tf.GradientTape() as tape:
            loss = 0.5 * tf.reduce_sum((w - target) ** 2)
        opt.apply(tape.gradient(loss, [w]), [w])

    lr, momentum = opt.hyperparameters["learning_rate"], opt.hyperparameters["momentum"]
    ref_w, ref_m = w.numpy().copy(), np.zeros(5, "float32")
    for step in range(100):
        if step % 3 == 0:
            lr.scale.assign(1.0 + step / 100)
        if step % 10 == 5:
            lr.set(0.02)
        if step % 10 == 8:
            lr.clear()
        momentum.set(0.9 if step % 2 else 0.1)
        rate = np.float32(lr.value.numpy())  # what the update at this step reads
        beta = np.float32(momentum.value.numpy())
        train_step()
        grad = ref_w - target
        ref_m = ref_m * beta - grad * rate
        ref_w = ref_w + ref_m
    assert len(traces) == 1
    np.testing.assert_allclose(w.numpy(), ref_w, rtol=1e-6, atol=1e-7)
    assert int(opt.clock.step) == 100


def test_fit_with_jit_compile_follows_a_schedule_like_keras() -> None:
    schedule = hs.schedules.exponential(0.1, 0.5, every=10)
    results = []
    for opt in [keras.optimizers.SGD(schedule), hs.StepOptimizer("sgd", learning_rate=schedule)]:
        model = make_model()
        model.compile(optimizer=opt, loss="mse", jit_compile=True)
        model.fit(np.tile(X, (5, 1)), np.tile(Y, (5, 1)), batch_size=8, shuffle=False, verbose=0)
        results.append(weights(model))
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert int(opt.clock.step) == int(opt.iterations) == 20


def test_keras_file_round_trip_continues_identically(tmp_path) -> None:  # type: ignore[no-untyped-def]
    model = make_model()
    opt = hs.StepOptimizer(
        hs.rules.AdamRule(amsgrad=True),
        learning_rate=hs.schedules.cosine(0.05, steps=40),
        beta_1="0.8 + 0.1 * min(step / 20, 1)",
    )
    model.compile(optimizer=opt, loss="mse")
    model.fit(X, Y, batch_size=8, shuffle=False, verbose=0)
    opt.hyperparameters["learning_rate"].scale.assign(0.5)  # as a plateau controller would
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    restored = loaded.optimizer
    assert isinstance(restored, hs.StepOptimizer)
    assert restored.rule == hs.rules.AdamRule(amsgrad=True)
    assert int(restored.clock.step) == 4
    assert float(restored.hyperparameters["learning_rate"].scale) == 0.5
    for m in (model, loaded):
        m.fit(X, Y, batch_size=8, shuffle=False, verbose=0)
    for a, b in zip(weights(model), weights(loaded), strict=True):
        np.testing.assert_array_equal(a, b)
    assert int(restored.clock.step) == 8


def test_checkpoint_round_trip_continues_identically(tmp_path) -> None:  # type: ignore[no-untyped-def]
    def setup() -> tuple[keras.Model, hs.StepOptimizer, tf.function]:
        model = make_model()
        opt = hs.StepOptimizer("lion", learning_rate=hs.parse("step") * -1e-4 + 0.01)
        opt.build(model.trainable_variables)

        @tf.function
        def train_step() -> None:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((model(X) - Y) ** 2)
            opt.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)

        return model, opt, train_step

    model, opt, train_step = setup()
    for _ in range(7):
        train_step()
    opt.hyperparameters["beta_2"].set(0.5)
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "ckpt"))
    model2, opt2, train_step2 = setup()
    tf.train.Checkpoint(model=model2, optimizer=opt2).restore(path).assert_consumed()
    assert int(opt2.clock.step) == 7 and bool(opt2.hyperparameters["beta_2"].is_set)
    for _ in range(7):
        train_step()
        train_step2()
    for a, b in zip(weights(model), weights(model2), strict=True):
        np.testing.assert_array_equal(a, b)


def test_config_round_trips_through_json() -> None:
    opt = hs.StepOptimizer(
        hs.rules.SGDRule(nesterov=True),
        learning_rate=hs.schedules.linear(0.1, 0.01, steps=100),
        momentum=0.9,
        clipnorm=1.0,
        name="sgd_n",
    )
    config = json.loads(json.dumps(keras.saving.serialize_keras_object(opt)))
    again = keras.saving.deserialize_keras_object(config)
    assert isinstance(again, hs.StepOptimizer)
    assert again.rule == hs.rules.SGDRule(nesterov=True)
    assert again.name == "sgd_n" and again.clipnorm == 1.0
    steps = np.array([0, 1, 50, 99, 100, 101, 10_000])
    for key, hp in opt.hyperparameters.items():
        np.testing.assert_array_equal(again.hyperparameters[key].at(steps), hp.at(steps))


def test_learning_rate_reads_and_sets_the_default_group() -> None:
    opt = hs.StepOptimizer("adam", learning_rate="0.01 * 0.5 ** floor(step / 10)")
    opt.clock.step.assign(10)
    assert float(opt.learning_rate) == pytest.approx(0.005)
    opt.learning_rate = 0.2  # what Keras's LearningRateScheduler / ReduceLROnPlateau do
    # (since issue 14: rescales the running schedule, as on hs.scheduled; set() overrides)
    assert not bool(opt.hyperparameters["learning_rate"].is_set)
    assert float(opt.learning_rate) == pytest.approx(0.2)
    opt.clock.step.assign(20)
    assert float(opt.learning_rate) == pytest.approx(0.1)  # the schedule ran on, halved


def test_shared_clock_advances_once_per_training_step() -> None:
    clock = hs.Clock()
    generator = hs.StepOptimizer("sgd", clock=clock, learning_rate=0.1)
    discriminator = hs.StepOptimizer("sgd", clock=clock, learning_rate="0.1 / (1 + step)")
    assert generator.advance and not discriminator.advance
    g, d = keras.Variable([1.0]), keras.Variable([1.0])
    seen = []
    for _ in range(5):
        for _ in range(2):  # two discriminator updates per generator update
            seen.append(int(clock.step))
            discriminator.apply([keras.ops.ones(1)], [d])
        generator.apply([keras.ops.ones(1)], [g])
    assert int(clock.step) == 5 and seen == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    expected = 1.0 - sum(2 * 0.1 / (1 + t) for t in range(5))
    assert float(d.numpy()[0]) == pytest.approx(expected, rel=1e-6)


def test_gradient_accumulation_counts_applied_updates_like_keras() -> None:
    grads = [np.array([0.5, -1.0], "float32") * (i + 1) for i in range(6)]
    results = []
    for opt in [
        keras.optimizers.SGD(0.1, momentum=0.5, gradient_accumulation_steps=3),
        hs.StepOptimizer("sgd", learning_rate=0.1, momentum=0.5, gradient_accumulation_steps=3),
    ]:
        w = keras.Variable([1.0, 2.0])
        for g in grads:
            opt.apply([g], [w])
        results.append(w.numpy())
    np.testing.assert_array_equal(results[0], results[1])
    assert int(opt.clock.step) == 2


def test_rule_may_return_new_slot_values() -> None:
    class Averaged(hs.rules.Rule):
        hyperparameters = {"learning_rate": 0.1}  # noqa: RUF012
        slots = ("average",)

        def update(self, variable, gradient, slots, hp, step):  # type: ignore[no-untyped-def]
            average = (slots.average * step + gradient) / (step + 1)
            return variable - hp.learning_rate * average, {"average": average}

    opt = hs.StepOptimizer(Averaged())
    w = keras.Variable([0.0])
    for g in [1.0, 3.0, 5.0]:  # running means 1, 2, 3
        opt.apply([keras.ops.convert_to_tensor([g])], [w])
    assert float(w.numpy()[0]) == pytest.approx(-0.6)


def test_unknown_slot_in_a_returned_dict_is_an_error() -> None:
    class Wrong(hs.rules.Rule):
        def update(self, variable, gradient, slots, hp, step):  # type: ignore[no-untyped-def]
            return variable, {"m": gradient}

    with pytest.raises(InvalidArgumentError, match="slot 'm', which it does not declare"):
        hs.StepOptimizer(Wrong()).apply([keras.ops.ones(1)], [keras.Variable([0.0])])


def test_invalid_arguments_name_what_was_received() -> None:
    with pytest.raises(
        InvalidArgumentError, match=r"Valid ones: \['learning_rate', 'beta_1'.*Received: beta1=0.9"
    ):
        hs.StepOptimizer("adam", beta1=0.9)
    with pytest.raises(InvalidTypeError, match="Received: rule=None"):
        hs.StepOptimizer(None)
    with pytest.raises(InvalidTypeError, match="Received: clock=3"):
        hs.StepOptimizer("sgd", clock=3)
    with pytest.raises(InvalidTypeError, match="Received: group='x'"):
        hs.StepOptimizer("sgd", groups=["x"])
    with pytest.raises(InvalidTypeError, match="Received: advance=1"):
        hs.StepOptimizer("sgd", advance=1)
    elsewhere = hs.Hyperparameter(0.1, clock=hs.Clock())
    with pytest.raises(InvalidArgumentError, match=r"another clock.*Received: learning_rate="):
        hs.StepOptimizer("sgd", clock=hs.Clock(), learning_rate=elsewhere)


def test_a_hyperparameter_passed_in_lends_its_clock() -> None:
    clock = hs.Clock()
    rate = hs.Hyperparameter(0.1, clock=clock, name="rate")
    opt = hs.StepOptimizer("sgd", learning_rate=rate)
    assert opt.clock is clock and opt.hyperparameters["learning_rate"] is rate


@hs.rules.register_rule(package="test_optimizer")
class SignDescent(hs.rules.Rule):
    hyperparameters = {"learning_rate": 0.1}  # noqa: RUF012

    def update(self, variable, gradient, slots, hp, step):  # type: ignore[no-untyped-def]
        return variable - hp.learning_rate * keras.ops.sign(gradient)


def test_custom_registered_rule_is_saved_by_name() -> None:
    opt = hs.StepOptimizer(SignDescent(), learning_rate="0.1 / (1 + step)")
    config = json.loads(json.dumps(keras.saving.serialize_keras_object(opt)))
    assert config["config"]["rule"]["registered_name"] == "test_optimizer>SignDescent"
    again = keras.saving.deserialize_keras_object(config)
    assert isinstance(again.rule, SignDescent)
    w = keras.Variable([1.0, -1.0])
    for _ in range(3):
        again.apply([keras.ops.convert_to_tensor([2.0, -3.0])], [w])
    step = 1 / 1 + 1 / 2 + 1 / 3
    np.testing.assert_allclose(w.numpy(), [1.0 - 0.1 * step, -1.0 + 0.1 * step], rtol=1e-6)


def test_save_weights_restores_clock_and_hyperparameter_state(tmp_path) -> None:  # type: ignore[no-untyped-def]
    def setup() -> keras.Model:
        model = make_model()
        opt = hs.StepOptimizer(
            "adam", groups=[hs.Group("kernels", match="*kernel", learning_rate=0.1)]
        )
        model.compile(optimizer=opt, loss="mse")
        opt.build(model.trainable_variables)
        return model

    model = setup()
    model.fit(X, Y, batch_size=8, shuffle=False, verbose=0)
    model.optimizer.hyperparameters["kernels/learning_rate"].scale.assign(0.3)
    model.save_weights(tmp_path / "w.weights.h5")
    again = setup()
    again.load_weights(tmp_path / "w.weights.h5")
    assert int(again.optimizer.clock.step) == 4
    assert float(again.optimizer.groups["kernels"].hyperparameters["learning_rate"].scale) == (
        pytest.approx(0.3)
    )
    for m in (model, again):
        m.fit(X, Y, batch_size=8, shuffle=False, verbose=0)
    for a, b in zip(weights(model), weights(again), strict=True):
        np.testing.assert_array_equal(a, b)


def ancestors(tensor: tf.Tensor) -> set[tf.Operation]:
    """Every op ``tensor`` waits for in its graph, through data and control edges."""
    seen: set[tf.Operation] = set()
    stack = [tensor.op]
    while stack:
        op = stack.pop()
        if op not in seen:
            seen.add(op)
            stack.extend(t.op for t in op.inputs)
            stack.extend(op.control_inputs)
    return seen


def test_gradients_reach_the_rule_after_the_hyperparameter_values() -> None:
    # TensorFlow runs ready ops in any order: unless the gradients wait for the scalar
    # hyperparameter values, the full-size ops of every variable may all run (and hold
    # their temporaries) before the first scalar they are multiplied by is computed
    seen = []

    class Record(hs.rules.Rule):
        hyperparameters = {"learning_rate": 0.1}  # noqa: RUF012

        def update(self, variable, gradient, slots, hp, step):  # type: ignore[no-untyped-def]
            seen.append((gradient, hp.learning_rate, step))
            return variable - hp.learning_rate * gradient

    variables = [keras.Variable(np.ones(3, "float32")), keras.Variable(np.ones((2, 2), "float32"))]
    opt = hs.StepOptimizer(Record())
    opt.build(variables)

    @tf.function
    def update() -> None:
        opt.apply([tf.ones(3), tf.ones((2, 2))], variables)

    update.get_concrete_function()
    assert len(seen) == 2
    for gradient, learning_rate, step in seen:
        before = ancestors(gradient)
        assert learning_rate.op in before
        assert step.op in before


def test_fused_is_checked_and_kept_in_the_config():
    with pytest.raises(TypeError, match="fused"):
        hs.StepOptimizer("adam", fused="yes")
    opt = hs.StepOptimizer("adamw", learning_rate=1e-3, fused=True)
    assert opt.get_config()["fused"] is True
    assert hs.StepOptimizer.from_config(opt.get_config()).fused is True
    default = hs.StepOptimizer.from_config(hs.StepOptimizer("adam").get_config())
    assert default.fused is None and default._fuses is False  # None: the rule's default
    assert hs.StepOptimizer("adam", fused=False).get_config()["fused"] is False


# ---- the arguments: Keras's passed through, the rule's names, the clock ----------------


def test_keras_arguments_are_keras_optimizer_arguments_but_weight_decay() -> None:
    keras_names = set(inspect.signature(keras.optimizers.SGD.__init__).parameters)
    assert set(KERAS_ARGUMENTS) <= keras_names
    assert len(set(KERAS_ARGUMENTS)) == len(KERAS_ARGUMENTS)
    assert "weight_decay" in keras_names and "weight_decay" not in KERAS_ARGUMENTS
    assert "learning_rate" not in KERAS_ARGUMENTS  # every rule's own


def test_check_names_accepts_the_names_the_rule_declares() -> None:
    rule = AdamWRule()
    check_names(rule, dict.fromkeys(rule.hyperparameters, 0.1))
    check_names(SGDRule(), {})


def test_check_names_names_the_unknown_the_valid_and_what_was_received() -> None:
    rule = SGDRule()
    with pytest.raises(InvalidArgumentError) as error:
        check_names(rule, {"momentum": 0.9, "beta_1": 0.8, "decay": "x"})
    text = str(error.value)
    assert "`StepOptimizer`" in text and "SGDRule" in text
    assert "['beta_1', 'decay']" in text  # the unknown ones, in order; not momentum
    assert f"Valid ones: {list(rule.hyperparameters)}" in text
    assert f"the Keras arguments {list(KERAS_ARGUMENTS)}" in text
    assert text.endswith("Received: beta_1=0.8, decay='x'")


def test_a_group_setting_what_the_rule_lacks_names_it_and_the_valid_ones() -> None:
    head = hs.Group("head", match="*", clipnorm=1.0)
    sets = re.escape("group 'head' sets ['clipnorm']")
    with pytest.raises(InvalidArgumentError, match=sets) as error:
        hs.StepOptimizer(SGDRule(), groups=[head])
    assert "Keras arguments" not in str(error.value)  # a group takes none of them
    assert "Valid: ['learning_rate', 'momentum']" in str(error.value)
    assert str(error.value).endswith(f"Received: group={head!r}")


def test_pick_clock_returns_the_clock_given() -> None:
    clock = hs.Clock(name="given")
    other = hs.Hyperparameter(0.1, clock=hs.Clock(name="other"))
    assert pick_clock(clock, [{"learning_rate": other}], "fallback") is clock


def test_a_clock_that_is_not_a_clock_is_refused_naming_it() -> None:
    with pytest.raises(InvalidTypeError, match=re.escape("Received: clock='clock'")):
        hs.StepOptimizer("sgd", clock="clock")
    with pytest.raises(InvalidTypeError, match=r"`StepOptimizer\(clock=\.\.\.\)` must be"):
        hs.StepOptimizer("sgd", clock=3)


def test_pick_clock_takes_the_first_hyperparameters_clock() -> None:
    first, second = hs.Clock(name="first"), hs.Clock(name="second")
    tables = [
        {"momentum": 0.9},
        {"learning_rate": 0.1, "beta_1": hs.Hyperparameter(0.9, clock=first)},
        {"weight_decay": hs.Hyperparameter(0.01, clock=second)},
    ]
    assert pick_clock(None, tables, "fallback") is first


def test_pick_clock_without_any_makes_a_new_clock_named_name() -> None:
    clock = pick_clock(None, [{"learning_rate": 0.1}, {}], "fresh_clock")
    assert isinstance(clock, hs.Clock) and clock.name == "fresh_clock"
    assert pick_clock(None, [], "fresh_clock") is not clock
