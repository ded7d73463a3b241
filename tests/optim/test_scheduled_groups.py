"""Parameter groups in ``hs.scheduled``: one Keras optimizer, per-group hyperparameters."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs


class Tempered(keras.Model):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(3, name="dense")
        self.temperature = self.add_weight(shape=(), initializer="ones", name="temperature")

    def call(self, x):
        return self.dense(x) / self.temperature


def _data():
    rng = np.random.RandomState(0)
    return rng.rand(64, 4).astype("float32"), rng.randint(0, 3, 64)


def _loss(model, x, y):
    logits = model(x)
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, logits)


def _train(model, opts_for, steps=20):
    x, y = _data()
    model(x[:1])
    variables = model.trainable_variables
    for _ in range(steps):
        with tf.GradientTape() as tape:
            loss = _loss(model, x, y)
        grads = tape.gradient(loss, variables)
        for opt, indices in opts_for(variables):
            opt.apply([grads[i] for i in indices], [variables[i] for i in indices])
    return [v.numpy() for v in variables]


def _split(variables):
    temp = [i for i, v in enumerate(variables) if v.path.endswith("temperature")]
    rest = [i for i in range(len(variables)) if i not in temp]
    return temp, rest


def test_group_gets_its_own_rate_and_schedule_like_two_keras_optimizers():
    keras.utils.set_random_seed(1)
    ours = Tempered()
    opt = hs.scheduled(
        keras.optimizers.AdamW(weight_decay=0.01),
        learning_rate=1e-2,
        groups=[
            hs.Group(
                "temperature",
                match="*temperature",
                learning_rate=hs.schedules.exponential(0.1, 0.5, every=10),
                weight_decay=0.0,
            )
        ],
    )
    mine = _train(ours, lambda v: [(opt, range(len(v)))])

    keras.utils.set_random_seed(1)
    theirs = Tempered()
    main = keras.optimizers.AdamW(learning_rate=1e-2, weight_decay=0.01)
    temp_opt = keras.optimizers.AdamW(
        learning_rate=keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5),
        weight_decay=0.0,
    )

    def both(variables):
        temp, rest = _split(variables)
        return [(main, rest), (temp_opt, temp)]

    reference = _train(theirs, both)
    for a, b in zip(mine, reference, strict=True):
        # Keras's own update by default (fused=False): bitwise
        np.testing.assert_array_equal(a, b)
    assert "temperature/learning_rate" in opt.hyperparameters
    assert (
        opt.groups["temperature"].hyperparameters["learning_rate"]
        is (opt.hyperparameters["temperature/learning_rate"])
    )
    assert int(opt.clock.step) == 20


def test_a_groups_keras_schedule_is_made_as_the_optimizers_own_and_saved():
    decay = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    opt = hs.scheduled(
        keras.optimizers.SGD(learning_rate=decay),
        groups=[hs.Group("head", match="*head*", learning_rate=decay)],
    )
    restored = type(opt).from_config(opt.get_config())
    for found in (opt, restored):
        own = found.hyperparameters["learning_rate"].schedule
        group = found.hyperparameters["head/learning_rate"].schedule
        assert type(group) is type(own) and repr(group) == repr(own)  # Keras's own code


def test_group_with_a_pattern_matching_nothing_fails_at_build():
    model = Tempered()
    model(np.zeros((1, 4), "float32"))
    opt = hs.scheduled(
        keras.optimizers.Adam(), groups=[hs.Group("typo", match="*temprature", learning_rate=1.0)]
    )
    with pytest.raises(ValueError, match="temprature"):
        opt.build(model.trainable_variables)


def test_group_setting_an_unknown_hyperparameter_lists_the_valid_ones():
    with pytest.raises(ValueError, match=r"\['beta1'\].*Valid"):
        hs.scheduled(keras.optimizers.Adam(), groups=[hs.Group("g", match="*", beta1=0.5)])


def test_plateau_can_target_one_groups_hyperparameter_and_state_is_saved(tmp_path):
    model = Tempered()
    opt = hs.scheduled(
        keras.optimizers.SGD(learning_rate=0.1),
        groups=[hs.Group("temperature", match="*temperature", learning_rate=1.0)],
    )
    model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = _data()
    model.fit(x, y, epochs=1, verbose=0)
    group_lr = opt.hyperparameters["temperature/learning_rate"]
    group_lr.scale.assign(0.25)
    path = tmp_path / "m.keras"
    model.save(path)
    loaded = keras.models.load_model(path, custom_objects={"Tempered": Tempered})
    restored = loaded.optimizer.hyperparameters["temperature/learning_rate"]
    assert float(restored.scale) == 0.25
    assert float(restored.value) == 0.25
    assert float(loaded.optimizer.hyperparameters["learning_rate"].value) == pytest.approx(0.1)
