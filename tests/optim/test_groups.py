"""Groups: own hyperparameters per set of variables, on one clock; build-time errors; saving."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError
from hyperstep.optim.groups import assign_groups

X = np.random.RandomState(0).randn(32, 4).astype("float32")
Y = np.random.RandomState(1).randn(32, 3).astype("float32")


@keras.saving.register_keras_serializable(package="test_groups")
class Tempered(keras.Model):
    """Seed 001: a custom variable (a temperature) trained with the weights."""

    def __init__(self, **kwargs):  # type: ignore[no-untyped-def]
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(3, name="dense")
        self.temperature = self.add_weight(shape=(), initializer="ones", name="temperature")

    def call(self, x):  # type: ignore[no-untyped-def]
        return self.dense(x) / self.temperature


def make_model() -> Tempered:
    keras.utils.set_random_seed(3)
    model = Tempered(name="tempered")
    model(X[:1])
    return model


def weights(model: keras.Model) -> list[np.ndarray]:
    return [v.numpy() for v in model.trainable_variables]


def loss_and_grads(model: keras.Model) -> list:  # type: ignore[type-arg]
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(X) - Y) ** 2)
    return tape.gradient(loss, model.trainable_variables)


def test_temperature_with_ten_times_the_rate_and_its_own_schedule_matches_two_keras_adams() -> None:
    rest = hs.schedules.exponential(0.01, 0.5, every=20)
    hot = 10 * hs.schedules.cosine(0.01, steps=50)
    ours = make_model()
    opt = hs.StepOptimizer(
        "adam",
        groups=[hs.Group("temperature", match="*/temperature", learning_rate=hot)],
        learning_rate=rest,
    )
    reference = make_model()
    paths = [v.path for v in reference.trainable_variables]
    assert paths == ["tempered/temperature", "tempered/dense/kernel", "tempered/dense/bias"]
    adam_rest, adam_hot = keras.optimizers.Adam(rest), keras.optimizers.Adam(hot)

    @tf.function
    def train_step() -> None:
        opt.apply(loss_and_grads(ours), ours.trainable_variables)
        temperature, kernel, bias = reference.trainable_variables
        g_temperature, g_kernel, g_bias = loss_and_grads(reference)
        adam_rest.apply([g_kernel, g_bias], [kernel, bias])
        adam_hot.apply([g_temperature], [temperature])

    for _ in range(50):
        train_step()
    for a, b in zip(weights(ours), weights(reference), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert abs(float(ours.temperature.numpy()) - 1.0) > 0.1  # it did train, fast
    lr = opt.groups["temperature"].hyperparameters["learning_rate"]
    assert lr is opt.hyperparameters["temperature/learning_rate"] and lr.clock is opt.clock


def test_group_hyperparameters_apply_only_to_the_group() -> None:
    model = make_model()
    before = weights(model)
    opt = hs.StepOptimizer(
        "sgd", groups=[hs.Group("temperature", match=[model.temperature], learning_rate=0.5)]
    )
    opt.hyperparameters["learning_rate"].set(0.0)  # freezes everything but the group
    opt.apply(loss_and_grads(model), model.trainable_variables)
    after = weights(model)
    assert np.array_equal(after[1], before[1]) and np.array_equal(after[2], before[2])
    assert after[0] != before[0]
    opt.hyperparameters["learning_rate"].clear()
    opt.groups["temperature"].hyperparameters["learning_rate"].scale.assign(0.0)
    opt.apply(loss_and_grads(model), model.trainable_variables)
    final = weights(model)
    assert final[0] == after[0] and not np.array_equal(final[1], after[1])
    # hyperparameters a group does not set are the optimizer's own
    assert "temperature/momentum" not in opt.hyperparameters


def test_pattern_matching_nothing_is_an_error_at_build_naming_pattern_and_paths() -> None:
    model = make_model()
    opt = hs.StepOptimizer("adam", groups=[hs.Group("head", match="*/head/*", learning_rate=0.1)])
    with pytest.raises(
        InvalidArgumentError,
        match=r"Group 'head': the pattern '\*/head/\*' matched no variable.*"
        r"'tempered/temperature', 'tempered/dense/kernel', 'tempered/dense/bias'",
    ):
        opt.build(model.trainable_variables)


def test_variable_matched_twice_is_an_error_naming_it_and_both_groups() -> None:
    model = make_model()
    opt = hs.StepOptimizer(
        "sgd",
        groups=[
            hs.Group("dense", match="*/dense/*", learning_rate=0.1),
            hs.Group("kernels", match=lambda v: v.path.endswith("kernel"), learning_rate=0.2),
        ],
    )
    with pytest.raises(
        InvalidArgumentError,
        match=r"'tempered/dense/kernel' is matched by two groups: 'dense' "
        r"\(match='\*/dense/\*'\) and 'kernels'",
    ):
        opt.build(model.trainable_variables)


def test_a_listed_variable_or_predicate_matching_nothing_is_an_error() -> None:
    model, other = make_model(), keras.Variable(0.0, name="stray")
    with pytest.raises(InvalidArgumentError, match="listed variable 'stray' matched no variable"):
        assign_groups([hs.Group("x", match=[other])], model.trainable_variables)
    with pytest.raises(InvalidArgumentError, match=r"Group 'y': the predicate .* matched no"):
        assign_groups([hs.Group("y", match=lambda v: False)], model.trainable_variables)


def test_groups_survive_keras_save_and_load(tmp_path) -> None:  # type: ignore[no-untyped-def]
    model = make_model()
    opt = hs.StepOptimizer(
        hs.rules.AdamWRule(),
        groups=[
            hs.Group(
                "temperature",
                match=[model.temperature],
                learning_rate=hs.schedules.linear(0.1, 0.01, steps=20),
                weight_decay=0.0,
            )
        ],
        learning_rate=0.01,
    )
    model.compile(optimizer=opt, loss="mse")
    model.fit(X, Y, batch_size=8, shuffle=False, verbose=0)
    target = opt.groups["temperature"].hyperparameters["learning_rate"]
    target.scale.assign(0.25)  # what a plateau controller on this group does, with its state:
    target.add_state("plateau_best", 0.0).assign(7.0)
    model.save(tmp_path / "m.keras")
    loaded = keras.models.load_model(tmp_path / "m.keras")
    group = loaded.optimizer.groups["temperature"]
    assert group.match == ["tempered/temperature"]
    hp = group.hyperparameters["learning_rate"]
    assert float(hp.scale) == 0.25
    assert float(hp.add_state("plateau_best", 0.0)) == 7.0  # state added after construction
    steps = np.array([0, 4, 19, 20, 100])
    np.testing.assert_array_equal(
        hp.at(steps), opt.groups["temperature"].hyperparameters["learning_rate"].at(steps)
    )
    for m in (model, loaded):
        m.fit(X, Y, batch_size=8, shuffle=False, verbose=0)
    for a, b in zip(weights(model), weights(loaded), strict=True):
        np.testing.assert_array_equal(a, b)


def test_group_config_saves_a_predicate_as_the_paths_it_matched() -> None:
    model = make_model()
    opt = hs.StepOptimizer(
        "sgd", groups=[hs.Group("bias", match=lambda v: "bias" in v.path, learning_rate=0.3)]
    )
    with pytest.raises(InvalidArgumentError, match="build the optimizer"):
        opt.get_config()
    opt.build(model.trainable_variables)
    config = json.loads(json.dumps(opt.get_config()))
    assert config["groups"] == [
        {
            "name": "bias",
            "match": ["tempered/dense/bias"],
            "hyperparameters": {"learning_rate": 0.3},
        }
    ]
    again = hs.StepOptimizer.from_config(config)
    again.build(model.trainable_variables)
    assert again._variable_group == opt._variable_group == [0, 0, 1]


def test_group_arguments_are_validated() -> None:
    with pytest.raises(InvalidArgumentError, match="Received: name='a/b'"):
        hs.Group("a/b", match="*")
    with pytest.raises(InvalidTypeError, match="Received: match=3"):
        hs.Group("a", match=3)
    with pytest.raises(InvalidTypeError, match=r"Received: match=\[3\]"):
        hs.Group("a", match=[3])
    with pytest.raises(
        InvalidArgumentError,
        match=r"group 't' sets \['beta1'\].*Received: group=Group\('t', match='\*', beta1=0.5\)",
    ):
        hs.StepOptimizer("adam", groups=[hs.Group("t", match="*", beta1=0.5)])
    with pytest.raises(InvalidArgumentError, match=r"unique. Received: groups named \['t', 't'\]"):
        hs.StepOptimizer("adam", groups=[hs.Group("t", match="a"), hs.Group("t", match="b")])


def test_glob_special_characters_in_paths_are_escaped_in_configs() -> None:
    odd = keras.Variable(1.0, name="w[0]")
    group = hs.Group("odd", match=[odd])
    config = group.get_config()
    assert config["match"] == ["w[[]0]"]
    assert hs.Group.from_config(config).select([odd, keras.Variable(1.0, name="w0")]) == [0]
