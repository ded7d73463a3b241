"""Built-in rules against Keras's own optimizers, and user rules against numpy references."""

from collections import Counter

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError

X = np.random.RandomState(0).randn(64, 5).astype("float32")
Y = np.random.RandomState(1).randn(64, 3).astype("float32")

# (Keras optimizer factory, our rule, our hyperparameters): the same optimizer twice
PAIRS = {
    "sgd": (lambda: keras.optimizers.SGD(0.1), lambda: hs.rules.SGDRule(), {"learning_rate": 0.1}),
    "sgd-momentum": (
        lambda: keras.optimizers.SGD(0.1, momentum=0.9),
        lambda: hs.rules.SGDRule(),
        {"learning_rate": 0.1, "momentum": 0.9},
    ),
    "sgd-nesterov": (
        lambda: keras.optimizers.SGD(0.05, momentum=0.8, nesterov=True),
        lambda: hs.rules.SGDRule(nesterov=True),
        {"learning_rate": 0.05, "momentum": 0.8},
    ),
    "adam": (
        lambda: keras.optimizers.Adam(0.01, beta_1=0.8, epsilon=1e-6),
        lambda: hs.rules.AdamRule(),
        {"learning_rate": 0.01, "beta_1": 0.8, "epsilon": 1e-6},
    ),
    "adam-amsgrad": (
        lambda: keras.optimizers.Adam(0.01, amsgrad=True),
        lambda: hs.rules.AdamRule(amsgrad=True),
        {"learning_rate": 0.01},
    ),
    "adamw": (
        lambda: keras.optimizers.AdamW(0.01, weight_decay=0.05, beta_2=0.99),
        lambda: hs.rules.AdamWRule(),
        {"learning_rate": 0.01, "weight_decay": 0.05, "beta_2": 0.99},
    ),
    "lion": (
        lambda: keras.optimizers.Lion(0.003, beta_1=0.95),
        lambda: hs.rules.LionRule(),
        {"learning_rate": 0.003, "beta_1": 0.95},
    ),
}


def make_model() -> keras.Model:
    keras.utils.set_random_seed(1)
    return keras.Sequential(
        [
            keras.Input((5,)),
            keras.layers.Dense(8, activation="tanh"),
            keras.layers.Dense(6, activation="tanh"),
            keras.layers.Dense(3),
        ]
    )


def train_loop(optimizer: keras.optimizers.Optimizer, steps: int = 100) -> list[np.ndarray]:
    model = make_model()

    @tf.function
    def train_step() -> None:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(X) - Y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)

    for _ in range(steps):
        train_step()
    return [v.numpy() for v in model.trainable_variables]


def train_fit(optimizer: keras.optimizers.Optimizer, jit_compile: bool) -> list[np.ndarray]:
    model = make_model()
    model.compile(optimizer=optimizer, loss="mse", jit_compile=jit_compile)
    # 100 steps in one epoch: X repeated 25 times, in order
    model.fit(np.tile(X, (25, 1)), np.tile(Y, (25, 1)), batch_size=16, shuffle=False, verbose=0)
    return [v.numpy() for v in model.trainable_variables]


def assert_same_weights(ours: list[np.ndarray], theirs: list[np.ndarray]) -> None:
    assert len(ours) == len(theirs) == 6
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", sorted(PAIRS))
def test_builtin_rule_matches_keras_over_100_steps_in_a_custom_loop(name: str) -> None:
    keras_optimizer, rule, hyperparameters = PAIRS[name]
    theirs = train_loop(keras_optimizer())
    ours = train_loop(hs.StepOptimizer(rule(), **hyperparameters))
    assert_same_weights(ours, theirs)
    assert not all(
        np.array_equal(a, b) for a, b in zip(ours, make_model().get_weights(), strict=True)
    )


@pytest.mark.parametrize(
    ("name", "jit_compile"),
    [("adam", True), ("adamw", False)],
)
def test_builtin_rule_matches_keras_over_100_steps_in_fit(name: str, jit_compile: bool) -> None:
    keras_optimizer, rule, hyperparameters = PAIRS[name]
    theirs = train_fit(keras_optimizer(), jit_compile)
    ours = train_fit(hs.StepOptimizer(rule(), **hyperparameters), jit_compile)
    assert_same_weights(ours, theirs)


def full_size_ops(
    optimizer: keras.optimizers.Optimizer, shape: tuple[int, int] = (64, 64)
) -> Counter:  # type: ignore[type-arg]
    """Types of the ops of one traced update that make or assign a variable-sized tensor.

    Reads and identities are left out: they alias a buffer and copy nothing.
    """
    variables = [keras.Variable(np.ones(shape, "float32"))]
    optimizer.build(variables)
    grads = [tf.ones(shape)]

    @tf.function
    def update() -> None:
        optimizer.apply(grads, variables)

    counts: Counter = Counter()  # type: ignore[type-arg]
    for op in update.get_concrete_function().graph.get_operations():
        if op.type in ("ReadVariableOp", "Identity", "IdentityN", "Placeholder", "Const"):
            continue
        if op.type.startswith("Assign"):
            if op.inputs[1].shape == shape:
                counts[op.type] += 1
        elif any(output.shape == shape for output in op.outputs):
            counts[op.type] += 1
    return counts


# plain "sgd" is left out: Keras drops the momentum slot when momentum is 0, while our
# momentum is a hyperparameter that may change at run time, so the rule always keeps it
@pytest.mark.parametrize("name", sorted(set(PAIRS) - {"sgd"}))
def test_builtin_rule_makes_the_same_full_size_ops_as_keras(name: str) -> None:
    # the same passes over the variable, and in-place assign_add/assign_sub where Keras
    # uses them: an extra full-size temporary or `assign` costs a pass over every parameter
    keras_optimizer, rule, hyperparameters = PAIRS[name]
    theirs = full_size_ops(keras_optimizer())
    ours = full_size_ops(hs.StepOptimizer(rule(), **hyperparameters))
    assert ours == theirs
    assert sum(theirs.values()) >= 3


def test_rule_defaults_are_keras_defaults() -> None:
    for rule, keras_class in [
        (hs.rules.SGDRule, keras.optimizers.SGD),
        (hs.rules.AdamRule, keras.optimizers.Adam),
        (hs.rules.AdamWRule, keras.optimizers.AdamW),
        (hs.rules.LionRule, keras.optimizers.Lion),
    ]:
        config = keras_class().get_config()
        for key, default in rule.hyperparameters.items():
            assert config[key] == pytest.approx(default), (rule, key)


# ---- user rules --------------------------------------------------------------------------
class Seed000(hs.rules.Rule):
    """Seed 000: ``w -= (step / 1000 + 0.01) * grad``."""

    def update(self, variable, gradient, slots, hp, step):  # type: ignore[no-untyped-def]
        return variable - (step / 1000 + 0.01) * gradient


class Coefficient(hs.rules.Rule):
    """The same update with the coefficient as a (schedulable) hyperparameter."""

    hyperparameters = {"coefficient": 0.01}  # noqa: RUF012

    def update(self, variable, gradient, slots, hp, step):  # type: ignore[no-untyped-def]
        return variable - hp.coefficient * gradient


def numpy_seed000(w0: np.ndarray, target: np.ndarray, steps: int) -> np.ndarray:
    """``w -= (t / 1000 + 0.01) * (w - target)``, in float32 like the graph."""
    w = w0.astype("float32").copy()
    for t in range(steps):
        coefficient = np.float32(t) / np.float32(1000) + np.float32(0.01)
        w = (w - coefficient * (w - target)).astype("float32")
    return w


@pytest.mark.parametrize(
    "optimizer",
    [
        lambda: hs.StepOptimizer(Seed000()),
        lambda: hs.StepOptimizer(Coefficient(), coefficient=hs.parse("step") / 1000 + 0.01),
    ],
    ids=["step-in-rule", "step-in-schedule"],
)
def test_seed000_rule_using_step_matches_numpy(optimizer) -> None:  # type: ignore[no-untyped-def]
    w0 = np.linspace(-1.0, 2.0, 7).astype("float32")
    target = np.linspace(3.0, 0.5, 7).astype("float32")
    w = keras.Variable(w0)
    opt = optimizer()

    @tf.function
    def train_step() -> None:
        with tf.GradientTape() as tape:
            loss = 0.5 * tf.reduce_sum((w - target) ** 2)  # gradient: w - target
        opt.apply(tape.gradient(loss, [w]), [w])

    for _ in range(200):
        train_step()
    np.testing.assert_allclose(w.numpy(), numpy_seed000(w0, target, 200), rtol=1e-6, atol=1e-7)
    assert int(opt.clock.step) == 200


def test_first_update_sees_step_zero_and_the_clock_advances_after() -> None:
    class AddStep(hs.rules.Rule):
        slots = ("seen",)

        def update(self, variable, gradient, slots, hp, step):  # type: ignore[no-untyped-def]
            return variable, {"seen": slots.seen * 10 + step + 1}

    opt = hs.StepOptimizer(AddStep())
    w = keras.Variable([0.0])
    for _ in range(3):
        opt.apply([keras.ops.zeros(1)], [w])
    # seen = ((0*10 + 1)*10 + 2)*10 + 3: steps 0, 1, 2 in order
    assert float(opt._slots["seen"][0].numpy()[0]) == 123.0
    assert int(opt.clock.step) == 3


def test_values_read_by_attribute_and_by_key() -> None:
    values = hs.rules.Values({"learning_rate": 0.5})
    assert values.learning_rate == values["learning_rate"] == 0.5
    with pytest.raises(AttributeError, match=r"'beta_1'.*available ones are \['learning_rate'\]"):
        _ = values.beta_1


def test_rule_by_name_and_by_class() -> None:
    assert hs.rules.get_rule("AdamW") == hs.rules.AdamWRule()
    assert hs.rules.get_rule(hs.rules.LionRule) == hs.rules.LionRule()
    assert hs.rules.get_rule("hyperstep>SGDRule") == hs.rules.SGDRule()
    with pytest.raises(InvalidArgumentError, match=r"Built-in rules: .*Received: rule='adamax'"):
        hs.rules.get_rule("adamax")
    with pytest.raises(InvalidTypeError, match="Received: rule=3"):
        hs.rules.get_rule(3)


def test_rule_options_are_validated() -> None:
    with pytest.raises(InvalidTypeError, match=r"nesterov.*Received: nesterov=1"):
        hs.rules.SGDRule(nesterov=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="Received: cls=<class 'int'>"):
        hs.rules.register_rule(int)


def test_registered_rule_round_trips_through_keras_serialization() -> None:
    @hs.rules.register_rule(package="test_rules")
    class Scaled(hs.rules.Rule):
        hyperparameters = {"learning_rate": 0.1}  # noqa: RUF012

        def __init__(self, power: int = 1) -> None:
            self.power = power

        def update(self, variable, gradient, slots, hp, step):  # type: ignore[no-untyped-def]
            return variable - hp.learning_rate * gradient**self.power

        def get_config(self):  # type: ignore[no-untyped-def]
            return {"power": self.power}

    config = keras.saving.serialize_keras_object(Scaled(power=3))
    assert config["registered_name"] == "test_rules>Scaled"
    restored = keras.saving.deserialize_keras_object(config)
    assert isinstance(restored, Scaled) and restored.power == 3
    assert hs.rules.get_rule("test_rules>Scaled") == Scaled()
