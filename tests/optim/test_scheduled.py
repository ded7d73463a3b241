"""hs.scheduled against Keras's own optimizers: bit-identical constants, per-step references;
its update hooks (clipping, weight decay and the update per group). What an ``hs.scheduled``
optimizer holds: the hyperparameter table, a group's value for its variables, the nested
config and its round trip, and ``check_arguments``'s refusals naming argument and value; the
wrapped optimizer serialized as Keras serializes an instance, found again as Keras finds a
class, and the errors for a config that names none; which constructor arguments of Keras's
optimizers are numeric hyperparameters (against their documented signatures), and the
refusal wording of ``check_names``."""

import contextlib

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError
from hyperstep.optim import scheduled
from hyperstep.optim.scheduled import inner_config, serialized, wrapped_class
from hyperstep.schedules.expressions import Step

K = keras.optimizers
X = np.random.default_rng(0).normal(size=(16, 4)).astype("float32")
Y = np.random.default_rng(1).normal(size=(16, 2)).astype("float32")

#: every optimizer in keras.optimizers (except the wrappers), with settings that exercise
#: its optional branches (momentum, nesterov, centered, amsgrad, clipping, EMA, accumulation)
OPTIMIZERS = {
    "SGD": lambda: K.SGD(0.1),
    "SGD-momentum-nesterov": lambda: K.SGD(0.1, momentum=0.9, nesterov=True),
    "RMSprop": lambda: K.RMSprop(),
    "RMSprop-momentum-centered": lambda: K.RMSprop(momentum=0.5, centered=True),
    "Adam": lambda: K.Adam(),
    "Adam-amsgrad-decay": lambda: K.Adam(amsgrad=True, weight_decay=0.01),
    "AdamW": lambda: K.AdamW(),
    "Adamax": lambda: K.Adamax(),
    "Nadam": lambda: K.Nadam(),
    "Adagrad": lambda: K.Adagrad(),
    "Adadelta": lambda: K.Adadelta(),
    "Ftrl": lambda: K.Ftrl(
        l1_regularization_strength=0.01,
        l2_regularization_strength=0.01,
        l2_shrinkage_regularization_strength=0.01,
        beta=0.1,
    ),
    "Lion": lambda: K.Lion(),
    "Lamb": lambda: K.Lamb(),
    "Muon": lambda: K.Muon(),
    "Adafactor": lambda: K.Adafactor(),
    "ScheduleFreeAdamW": lambda: K.ScheduleFreeAdamW(),
    "Adam-clipnorm": lambda: K.Adam(clipnorm=0.1),
    "Adam-global-clipnorm": lambda: K.Adam(global_clipnorm=0.1),
    "SGD-clipvalue": lambda: K.SGD(clipvalue=0.01),
    "Adam-ema": lambda: K.Adam(use_ema=True, ema_overwrite_frequency=2),
    "Adam-accumulation": lambda: K.Adam(gradient_accumulation_steps=2),
}

#: for each optimizer, one hyperparameter besides the learning rate to put on a schedule
SCHEDULED = {
    "SGD-momentum-nesterov": "momentum",
    "RMSprop-momentum-centered": "rho",
    "Adam": "beta_1",
    "AdamW": "weight_decay",
    "Adamax": "beta_2",
    "Nadam": "beta_1",
    "Adagrad": "epsilon",
    "Adadelta": "rho",
    "Ftrl": "l2_regularization_strength",
    "Lion": "beta_1",
    "Lamb": "beta_2",
    "Muon": "momentum",
    "Adafactor": "clip_threshold",
    "ScheduleFreeAdamW": "beta_2",
}


def _older_keras(name):
    """A skip for an optimizer this Keras lacks or cannot run itself (make test-oldest)."""
    base = name.split("-")[0]
    if not hasattr(K, base):
        return pytest.mark.skip(reason=f"keras.optimizers.{base} is not in Keras {keras.version()}")
    if base == "Muon" and keras.version().startswith("3.10."):
        return pytest.mark.skip(
            reason="Keras 3.10's own Muon fails on TensorFlow variables ('ResourceVariable' "
            "object has no attribute 'path'); Keras 3.15 runs it"
        )
    return ()


def _cases(names):
    return [pytest.param(*name, marks=_older_keras(name[0])) for name in names]


def test_the_optimizer_table_covers_every_keras_optimizer():
    names = {
        n
        for n in dir(K)
        if isinstance(getattr(K, n), type) and issubclass(getattr(K, n), K.Optimizer)
    }
    # the table holds optimizers of newer Kerases too (skipped where missing)
    covered = {key.split("-")[0] for key in OPTIMIZERS if hasattr(K, key.split("-")[0])}
    wrappers = {"Optimizer", "LossScaleOptimizer", "MultiOptimizer"}
    assert names - covered == wrappers & names


def _model():
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(2)]
    )


def _train(optimizer, steps, compiled, before_step=None):
    model = _model()
    optimizer.build(model.trainable_variables)  # slots created eagerly, outside any trace

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(X) - Y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)

    run = tf.function(step) if compiled else step
    for i in range(steps):
        if before_step is not None:
            before_step(i)
        run()
    return [v.numpy() for v in model.trainable_variables]


@contextlib.contextmanager
def _no_arithmetic_rewrites():
    # Grappler rewrites Keras's constant expressions (pow(x, 0.5) -> sqrt(x), x / c ->
    # x * (1 / c)) when they are Python floats, but not when they are read from variables.
    tf.config.optimizer.set_experimental_options({"arithmetic_optimization": False})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options({"arithmetic_optimization": True})


#: the optimizers also checked inside tf.function (tracing is slow; eager covers all)
COMPILED = ["SGD-momentum-nesterov", "AdamW", "Nadam", "Ftrl", "Adam-ema", "Adam-accumulation"]
CASES = [(name, False) for name in OPTIMIZERS] + [(name, True) for name in COMPILED]


@pytest.mark.parametrize(("name", "compiled"), _cases(CASES))
def test_constant_values_give_bit_identical_weights(name, compiled):
    make = OPTIMIZERS[name]
    with _no_arithmetic_rewrites():
        expected = _train(make(), 5, compiled)
        actual = _train(hs.scheduled(make()), 5, compiled)
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_array_equal(a, e)


def _schedules(name, optimizer):
    other = SCHEDULED[name]
    initial = float(optimizer.get_config()[other])
    lr = float(optimizer.get_config()["learning_rate"])
    return {
        "learning_rate": lr * 0.7 ** (Step() / 2),
        other: initial * (1 - Step() / 20),
    }


@pytest.mark.parametrize("name", _cases([(n,) for n in SCHEDULED]))
def test_schedules_match_setting_the_plain_optimizer_before_each_step(name):
    make = OPTIMIZERS[name]
    schedules = _schedules(name, make())
    reference = make()

    def set_values(step):
        for key, schedule in schedules.items():
            setattr(reference, key, float(schedule(step)))

    expected = _train(reference, 6, compiled=False, before_step=set_values)
    actual = _train(hs.scheduled(make(), **schedules), 6, compiled=False)
    for a, e in zip(actual, expected, strict=True):  # Keras's own code (fused=False)
        np.testing.assert_array_equal(a, e)
    if name in ("AdamW", "Nadam", "SGD-momentum-nesterov"):  # and traced, for a few
        with _no_arithmetic_rewrites():
            compiled = _train(hs.scheduled(make(), **schedules), 6, compiled=True)
        for a, e in zip(compiled, expected, strict=True):
            np.testing.assert_allclose(a, e, rtol=1e-6, atol=1e-7)


def test_hyperparameters_lists_every_numeric_one_and_keeps_unset_features_off():
    opt = hs.scheduled(K.Adam(beta_1=0.8))
    assert set(opt.hyperparameters) == {
        "learning_rate",
        "beta_1",
        "beta_2",
        "epsilon",
        "ema_momentum",
    }
    assert opt.weight_decay is None and opt.clipnorm is None
    assert float(opt.beta_1) == pytest.approx(0.8)
    decayed = hs.scheduled(K.Adam(), weight_decay=0.01)
    assert "weight_decay" in decayed.hyperparameters
    assert isinstance(decayed.hyperparameters["weight_decay"], hs.Hyperparameter)


def test_values_at_step_t_are_used_before_the_clock_advances():
    # SGD without momentum: w_{t+1} = w_t - lr(t) * g_t, and lr(t) = t + 1 is exact in float32
    opt = hs.scheduled(K.SGD(), learning_rate=Step() + 1.0)
    w = keras.Variable(np.zeros(3, "float32"))
    seen = []
    for _ in range(4):
        before = w.numpy().copy()
        opt.apply([tf.ones(3)], [w])
        seen.append(float(before[0] - w.numpy()[0]))
    assert seen == [1.0, 2.0, 3.0, 4.0]
    assert int(opt.clock.step) == 4


def test_setting_attributes_rescales_the_hyperparameter():
    # the contract changed (issue 14): `opt.x = number` (what Keras's callbacks do) rescales
    # the schedule, which keeps running; `Hyperparameter.set` overrides (freezes) it
    opt = hs.scheduled(K.Adam(), learning_rate=0.01 * 0.5 ** (Step() / 10))
    opt.learning_rate = 0.5
    opt.beta_1 = 0.25
    assert not bool(opt.hyperparameters["learning_rate"].is_set)
    assert float(opt.learning_rate) == pytest.approx(0.5, rel=1e-7)
    assert float(opt.beta_1) == pytest.approx(0.25, rel=1e-7)
    opt.clock.step.assign(10)
    assert float(opt.learning_rate) == pytest.approx(0.25, rel=1e-6)  # the schedule runs on
    opt.hyperparameters["learning_rate"].set(0.5)
    assert bool(opt.hyperparameters["learning_rate"].is_set)
    assert float(opt.learning_rate) == 0.5


def test_learning_rate_from_a_keras_schedule_on_the_wrapped_optimizer_is_kept():
    keras_schedule = K.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    opt = hs.scheduled(K.SGD(learning_rate=keras_schedule))
    steps = np.array([0, 5, 10, 33])
    np.testing.assert_allclose(
        opt.hyperparameters["learning_rate"].at(steps),
        [float(keras_schedule(s)) for s in steps],
        rtol=1e-6,
    )


def test_families_and_expressions_are_accepted():
    opt = hs.scheduled(
        K.AdamW(),
        learning_rate=hs.schedules.warmup(hs.schedules.cosine(1e-3, steps=100), steps=10),
        weight_decay=hs.schedules.linear(0.0, 0.05, steps=100),
        beta_1="0.95 - 0.1 * min(step / 100, 1)",
    )
    hps = opt.hyperparameters
    np.testing.assert_allclose(float(hps["weight_decay"].at(50)), 0.025, rtol=1e-6)
    np.testing.assert_allclose(float(hps["beta_1"].at(50)), 0.9, rtol=1e-6)
    np.testing.assert_allclose(float(hps["learning_rate"].at(10)), 1e-3, rtol=1e-6)


@pytest.mark.parametrize("build_first", [True, False])
def test_a_momentum_schedule_starting_at_zero_still_gets_momentum_slots(build_first):
    # Keras creates SGD's momentum slots only `if self.momentum != 0`; a schedule counts as
    # nonzero whether the optimizer is built explicitly or by its first `apply`.
    opt = hs.scheduled(K.SGD(0.1), momentum=hs.schedules.linear(0.0, 0.9, steps=10))
    w = keras.Variable(np.zeros(2, "float32"))
    if build_first:
        opt.build([w])
    for _ in range(3):
        opt.apply([tf.ones(2)], [w])
    assert len(opt.momentums) == 1
    # m_t = momentum(t) * m_{t-1} - 0.1 * g with momentum(t) = 0.09 t
    m = 0.0
    for t in range(3):
        m = np.float32(0.09 * t) * np.float32(m) - np.float32(0.1)
    np.testing.assert_allclose(opt.momentums[0].numpy(), [m, m], rtol=1e-6)


# ---- the update hooks: clipping bounds read at the update's step (float64 closed forms),
# Keras's non-finite global norm, weight decay and update per group with its own values
def test_a_scheduled_clipnorm_bounds_each_update_at_its_step() -> None:
    opt = hs.scheduled(K.SGD(learning_rate=1.0), clipnorm="1 + step")
    w = keras.Variable(np.zeros(2, "float32"))
    g = np.array([3.0, 4.0], "float32")  # norm 5
    expected = np.zeros(2)
    for step in range(6):
        opt.apply([g], [w])
        c = 1.0 + step
        expected -= g * c / max(5.0, c)  # Keras's g * c / max(norm, c)
        np.testing.assert_allclose(w.numpy(), expected, rtol=1e-6)


def test_a_scheduled_clipvalue_and_global_clipnorm() -> None:
    opt = hs.scheduled(K.SGD(learning_rate=1.0), clipvalue="0.5 * (1 + step)")
    w = keras.Variable(np.zeros(3, "float32"))
    g = np.array([2.0, -0.2, -5.0], "float32")
    opt.apply([g], [w])
    opt.apply([g], [w])
    np.testing.assert_allclose(w.numpy(), -(np.clip(g, -0.5, 0.5) + np.clip(g, -1.0, 1.0)))
    opt = hs.scheduled(K.SGD(learning_rate=1.0), global_clipnorm="2 ** step")
    a, b = keras.Variable(np.zeros(1, "float32")), keras.Variable(np.zeros(1, "float32"))
    grads = [np.array([6.0], "float32"), np.array([8.0], "float32")]  # global norm 10
    total = np.zeros(2)
    for step in range(5):
        opt.apply(grads, [a, b])
        c = 2.0**step
        total -= np.array([6.0, 8.0]) * min(1.0, c / 10.0)
    np.testing.assert_allclose([a.numpy()[0], b.numpy()[0]], total, rtol=1e-6)


def test_an_infinite_global_norm_gives_what_keras_gives() -> None:
    grads = [keras.ops.convert_to_tensor(np.array([np.inf, 1.0], "float32"))]
    plain = K.SGD(global_clipnorm=1.0)._clip_gradients(grads)
    ours = hs.scheduled(K.SGD(global_clipnorm=1.0))._clip_gradients(grads)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(ours[0]), keras.ops.convert_to_numpy(plain[0])
    )
    assert np.isnan(keras.ops.convert_to_numpy(ours[0])).all()


def test_weight_decay_and_the_rate_are_each_groups_own() -> None:
    lr, wd, head_wd = 0.1, 0.5, 0.0
    opt = hs.scheduled(
        K.SGD(learning_rate=lr),
        weight_decay=wd,
        groups=[hs.Group("head", match="*head*", weight_decay=head_wd, learning_rate=0.2)],
    )
    body = keras.Variable(np.full(2, 2.0, "float32"), name="body")
    head = keras.Variable(np.full(2, 2.0, "float32"), name="head")
    g = np.ones(2, "float32")
    opt.apply([g, g], [body, head])
    # Keras's decoupled decay first (w -= w * wd * lr), then SGD's w -= lr * g
    np.testing.assert_allclose(body.numpy(), 2.0 - 2.0 * wd * lr - lr * 1.0, rtol=1e-6)
    np.testing.assert_allclose(head.numpy(), 2.0 - 2.0 * head_wd * 0.2 - 0.2 * 1.0, rtol=1e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_without_groups_a_constant_update_is_kerass_bit_for_bit(name) -> None:
    plain_w = keras.Variable(np.array([1.0, -1.0], "float32"))
    ours_w = keras.Variable(np.array([1.0, -1.0], "float32"))
    plain = getattr(K, name)(learning_rate=0.01, clipnorm=0.5, weight_decay=0.1)
    ours = hs.scheduled(getattr(K, name)(learning_rate=0.01, clipnorm=0.5, weight_decay=0.1))
    for g in ([0.3, -2.0], [1.0, 1.0], [-0.5, 0.25]):
        plain.apply([np.array(g, "float32")], [plain_w])
        ours.apply([np.array(g, "float32")], [ours_w])
    np.testing.assert_array_equal(ours_w.numpy(), plain_w.numpy())


def number(x) -> float:
    return float(keras.ops.convert_to_numpy(keras.ops.convert_to_tensor(x)))


def test_hyperparameters_hold_every_numeric_name_and_each_groups_own() -> None:
    opt = hs.scheduled(
        K.Adam(), beta_1="0.9", groups=[hs.Group("head", match="*head*", learning_rate=0.5)]
    )
    names = scheduled.numeric_names(K.Adam)
    on = {"learning_rate", "beta_1", "beta_2", "epsilon", "ema_momentum"}  # the others: None
    assert on <= set(names)
    assert set(opt.hyperparameters) == {*on, "head/learning_rate"}
    assert list(opt.groups) == ["head"] and opt.groups["head"].name == "head"
    assert opt.hyperparameters is not opt.hyperparameters  # a copy each time


def test_a_groups_variable_trains_with_the_groups_value() -> None:
    opt = hs.scheduled(
        K.SGD(learning_rate=0.1),
        groups=[hs.Group("head", match="*head*", learning_rate="0.5 + step")],
    )
    body, head = keras.Variable(np.ones(2), name="body"), keras.Variable(np.ones(2), name="head")
    opt.clock.step.assign(2)
    opt.apply([np.ones(2, "float32")] * 2, [body, head])
    np.testing.assert_allclose(head.numpy(), 1.0 - 2.5)  # SGD: w - lr * g, the group's lr
    np.testing.assert_allclose(body.numpy(), 1.0 - 0.1)


def test_the_config_nests_the_wrapped_optimizer_with_kerass_own_values() -> None:
    opt = hs.scheduled(K.Adam(beta_1=0.8, amsgrad=True), learning_rate="1e-3 * 0.5 ** step")
    config = opt.get_config()
    inner = config["optimizer"]
    assert inner["module"] == "keras.optimizers" and inner["class_name"] == "Adam"
    assert inner["config"]["beta_1"] == 0.8 and inner["config"]["amsgrad"] is True
    assert {"hyperparameters", "clock"} <= set(config)
    again = type(opt).from_config(config)
    again.clock.step.assign(3)
    opt.clock.step.assign(3)
    assert number(again.learning_rate) == pytest.approx(number(opt.learning_rate))
    assert number(again.learning_rate) == pytest.approx(1e-3 * 0.5**3)
    assert again.amsgrad is True and number(again.beta_1) == pytest.approx(0.8)


def test_features_left_off_read_none_and_the_others_their_value_now() -> None:
    opt = hs.scheduled(K.SGD(), momentum="0.5 + step / 100")
    assert opt.weight_decay is None and opt.clipnorm is None
    opt.clock.step.assign(10)
    assert number(opt.momentum) == pytest.approx(0.6)
    opt.clock.step.assign(30)
    assert number(opt.momentum) == pytest.approx(0.8)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        (
            {"advance": "yes"},
            TypeError,
            r"scheduled\(advance=.*Received: advance='yes'",
        ),
        ({"groups": "head"}, TypeError, r"list of `hs.Group`.*Received: groups='head'"),
        ({"groups": {"a": 1}}, TypeError, r"Received: groups=\{'a': 1\}"),
        ({"fused": 1}, TypeError, r"`hs.scheduled\(fused=\.\.\.\)`.*Received: fused=1"),
        ({"beta1": 0.9}, ValueError, r"Did you mean 'beta_1'\?.*Received: beta1=0\.9"),
    ],
)
def test_bad_arguments_are_refused_naming_them(kwargs, error, pattern) -> None:
    with pytest.raises(error, match=pattern):
        hs.scheduled(K.Adam(), **kwargs)


# ---- the nested config: serialized, wrapped_class, inner_config ---------------------------
@keras.saving.register_keras_serializable(package="test_scheduled_config")
class Halved(K.SGD):
    """A registered optimizer class of a user's."""


class Unregistered(K.SGD):
    pass


def test_a_builtin_is_serialized_under_its_public_name_as_keras_does() -> None:
    found = serialized(K.Adam, {"beta_1": 0.8})
    expected = keras.saving.serialize_keras_object(K.Adam(beta_1=0.8))
    assert {k: found[k] for k in ("module", "class_name", "registered_name")} == {
        k: expected[k] for k in ("module", "class_name", "registered_name")
    }
    assert found["config"] == {"beta_1": 0.8}
    # Keras's backend class (e.g. TensorFlow's Adam) is written as the public one
    backend_class = type(K.Adam())
    assert serialized(backend_class, {})["class_name"] == "Adam"


def test_a_registered_class_is_serialized_by_module_and_registered_name() -> None:
    found = serialized(Halved, {})
    assert found["module"] == Halved.__module__ and found["class_name"] == "Halved"
    assert found["registered_name"] == "test_scheduled_config>Halved"


def test_wrapped_class_finds_builtins_registered_and_custom_classes() -> None:
    assert wrapped_class(serialized(K.Adam, {}), None) is K.Adam
    assert wrapped_class(serialized(Halved, {}), None) is Halved
    nested = serialized(Unregistered, {})
    assert wrapped_class(nested, {"Unregistered": Unregistered}) is Unregistered
    with pytest.raises(InvalidArgumentError, match=r"'Unregistered'.*register it.*custom_objects"):
        wrapped_class(nested, None)
    with pytest.raises(InvalidArgumentError, match=r"module, class_name.*optimizer='Adam'"):
        wrapped_class("Adam", None)
    with pytest.raises(InvalidArgumentError, match=r"Cannot find the optimizer class 'Dense'"):
        wrapped_class({"module": "keras.optimizers", "class_name": "Dense"}, None)


def test_inner_config_is_the_nested_dict() -> None:
    assert inner_config({"config": {"beta_1": 0.8}}) == {"beta_1": 0.8}
    assert inner_config({}) == {}
    with pytest.raises(InvalidArgumentError, match=r"must be a dict\. Received: config=\[1\]"):
        inner_config({"config": [1]})


# ---- numeric hyperparameters: numeric_names, constructor_arguments, check_names -----------
BASE = ["weight_decay", "clipnorm", "clipvalue", "global_clipnorm", "ema_momentum",
        "loss_scale_factor"]  # fmt: skip


@pytest.mark.parametrize(
    ("cls", "own"),
    [
        (K.SGD, ["momentum"]),  # nesterov is a bool
        (K.Adam, ["beta_1", "beta_2", "epsilon"]),  # amsgrad is a bool
        (K.AdamW, ["beta_1", "beta_2", "epsilon"]),  # its weight_decay is a base one
        (K.RMSprop, ["rho", "momentum", "epsilon"]),  # centered is a bool
        (K.Adagrad, ["epsilon"]),  # initial_accumulator_value is structural
    ],
)
def test_numeric_names_are_the_learning_rate_the_own_numbers_then_the_base_ones(cls, own):
    assert scheduled.numeric_names(cls) == ["learning_rate", *own, *BASE]


def test_constructor_arguments_collect_the_bases_defaults() -> None:
    found = scheduled.constructor_arguments(K.SGD)
    assert found["momentum"] == 0.0 and found["nesterov"] is False
    assert found["gradient_accumulation_steps"] is None  # BaseOptimizer's
    assert "self" not in found and "kwargs" not in found


def test_check_names_words_each_kind_of_refusal() -> None:
    scheduled.check_names(K.Adam, {"beta_1": 0.8, "clipnorm": 1.0})  # accepted
    with pytest.raises(InvalidArgumentError) as caught:
        scheduled.check_names(K.Adam, {"amsgrad": True}, where="hs.StepOptimizer")
    text = str(caught.value)
    assert text.startswith("`hs.StepOptimizer(Adam(), amsgrad=...)`: `amsgrad` is not a numeric")
    assert "(it is a bool" in text and text.endswith("Received: amsgrad=True")
    assert f"Valid: {', '.join(scheduled.numeric_names(K.Adam))}." in text
    with pytest.raises(InvalidArgumentError, match=r"SGD has no hyperparameter 'zzz'\. Valid"):
        scheduled.check_names(K.SGD, {"zzz": 1})  # no close name: no suggestion
    with pytest.raises(InvalidArgumentError, match=r"'momentun'\. Did you mean 'momentum'\?"):
        scheduled.check_names(K.SGD, {"momentun": 1})
    with pytest.raises(InvalidArgumentError, match=r"cannot be scheduled: it only initializes"):
        scheduled.check_names(K.Adagrad, {"initial_accumulator_value": 0.2})
