"""from_keras, the KerasSchedule wrapper, and hyperstep schedules inside Keras optimizers."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep.schedules as hs
from hyperstep.errors import InvalidTypeError
from hyperstep.schedules import keras_formulas
from hyperstep.schedules.keras_compat import KerasSchedule

K = keras.optimizers.schedules


@keras.saving.register_keras_serializable(package="hyperstep_tests")
class HalvingEvery(K.LearningRateSchedule):
    """A custom Keras schedule: 1 / 2 ** floor(step / every)."""

    def __init__(self, every):
        self.every = every

    def __call__(self, step):
        return keras.ops.power(0.5, keras.ops.floor(keras.ops.cast(step, "float32") / self.every))

    def get_config(self):
        return {"every": self.every}


class Unconfigurable(K.LearningRateSchedule):
    def __call__(self, step):
        return keras.ops.cast(step, "float32") * 0.0 + 0.25


@pytest.mark.parametrize(
    ("keras_schedule", "expected"),
    [
        (K.ExponentialDecay(0.1, 100, 0.9, staircase=True),
         "exponential_decay(0.1, 100, 0.9, staircase=True)"),
        (K.PiecewiseConstantDecay([5, 9], [3.0, 2.0, 1.0]),
         "piecewise([5, 9], [3.0, 2.0, 1.0], inclusive=True)"),
        (K.PolynomialDecay(0.5, 1000, power=2.0, cycle=True),
         "polynomial_decay(0.5, 1000, power=2.0, cycle=True)"),
        (K.InverseTimeDecay(0.5, 10, 0.25), "inverse_time(0.5, 0.25, every=10)"),
        (K.CosineDecay(0.5, 1000, alpha=0.5), "cosine_decay(0.5, 1000, alpha=0.5)"),
        (K.CosineDecay(0.0, 1000, warmup_target=0.5, warmup_steps=100),
         "cosine_decay(0.0, 1000, warmup_target=0.5, warmup_steps=100)"),
        (K.CosineDecayRestarts(0.5, 100, t_mul=1.0, m_mul=0.5, alpha=0.5),
         "cosine_decay_restarts(0.5, 100, t_mul=1.0, m_mul=0.5, alpha=0.5)"),
    ],
    ids=lambda v: type(v).__name__ if not isinstance(v, str) else "",
)  # fmt: skip
def test_from_keras_writes_each_builtin_in_the_vocabulary(keras_schedule, expected):
    assert repr(hs.from_keras(keras_schedule)) == expected


def test_from_keras_of_a_hyperstep_schedule_returns_it_unchanged():
    s = hs.cosine(1.0, steps=10)
    assert hs.from_keras(s) is s


def test_from_keras_wraps_other_keras_schedules():
    s = hs.from_keras(HalvingEvery(10))
    assert isinstance(s, KerasSchedule)
    assert [float(v) for v in s([0, 9, 10, 25])] == [1.0, 1.0, 0.5, 0.25]


def test_a_subclass_of_a_builtin_is_wrapped_not_converted():
    class Doubled(K.ExponentialDecay):
        def __call__(self, step):
            return 2.0 * super().__call__(step)

    s = hs.from_keras(Doubled(1.0, 10, 0.5))
    assert isinstance(s, KerasSchedule)
    assert float(s(10)) == pytest.approx(1.0)


def test_keras_schedule_config_round_trips_through_nested_keras_serialization():
    s = hs.from_keras(HalvingEvery(4)) * 3.0
    text = json.dumps(keras.saving.serialize_keras_object(s))
    back = keras.saving.deserialize_keras_object(json.loads(text))
    np.testing.assert_array_equal(back(np.arange(20)), s(np.arange(20)))
    assert isinstance(back.left.schedule, HalvingEvery)


def test_keras_schedule_repr_is_honest_about_the_wrapped_class():
    assert repr(KerasSchedule(HalvingEvery(4))).endswith("HalvingEvery(every=4))")
    assert repr(KerasSchedule(HalvingEvery(4))).startswith("keras_schedule(")
    assert repr(KerasSchedule(Unconfigurable())).endswith("Unconfigurable(...))")


def test_as_schedule_accepts_keras_schedules():
    s = hs.as_schedule(K.CosineDecay(1.0, 10))
    assert isinstance(s, keras_formulas.CosineDecay)


def test_from_keras_rejects_non_schedules_naming_the_value():
    with pytest.raises(InvalidTypeError, match=r"Received: schedule=0\.1"):
        hs.from_keras(0.1)
    with pytest.raises(InvalidTypeError, match="Received: schedule=cosine"):
        KerasSchedule(hs.cosine(1.0, steps=10))


@pytest.mark.parametrize(
    "schedule",
    [
        hs.warmup(hs.cosine(0.1, steps=10), steps=3),
        hs.one_cycle(0.1, steps=10) * 0.5,
        hs.from_keras(HalvingEvery(2)),
    ],
    ids=repr,
)
def test_schedule_is_the_learning_rate_of_a_keras_optimizer(schedule):
    w = keras.Variable(np.zeros(1, np.float32))
    optimizer = keras.optimizers.SGD(learning_rate=schedule)
    for _ in range(6):
        optimizer.apply_gradients([(tf.ones(1), w)])
    expected = -float(np.sum(np.asarray(schedule(np.arange(6)), np.float64)))
    np.testing.assert_allclose(w.numpy(), [expected], rtol=1e-6)
    assert float(optimizer.learning_rate) == pytest.approx(float(schedule(6)))


def test_keras_optimizer_with_a_schedule_survives_get_config_round_trip():
    optimizer = keras.optimizers.Adam(learning_rate=hs.warmup(hs.cosine(1e-3, steps=100), 10))
    config = keras.optimizers.serialize(optimizer)
    back = keras.optimizers.deserialize(json.loads(json.dumps(config)))
    assert repr(back._learning_rate) == "warmup(cosine(0.001, steps=100), steps=10)"
    np.testing.assert_array_equal(
        back._learning_rate(np.arange(200)), optimizer._learning_rate(np.arange(200))
    )


def test_schedule_drives_the_learning_rate_inside_model_fit():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    schedule = hs.warmup(hs.cosine(0.1, steps=20, end=0.01), steps=4)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=schedule), loss="mse")
    x, y = np.ones((16, 2), np.float32), np.zeros((16, 1), np.float32)
    model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert int(model.optimizer.iterations) == 8
    assert float(model.optimizer.learning_rate) == pytest.approx(float(schedule(8)))
