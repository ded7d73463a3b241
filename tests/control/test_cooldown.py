"""hs.Cooldown: started at run time by writing one variable, traced once, equal to its
closed form, composed with scale/override/ReduceOnPlateau, saved and resumed bitwise; and
the StartCooldown callback's triggers in fit."""

import math
import os
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs

PEAK, LENGTH = 0.1, 40  # the schedule: cosine(PEAK, steps=LENGTH)


def schedule_value(t: float) -> float:
    """The independent closed form of cosine(PEAK, steps=LENGTH), float64."""
    return PEAK * 0.5 * (1 + math.cos(math.pi * min(t, LENGTH) / LENGTH))


def shape_value(shape: str, p: float) -> float:
    return {
        "1-sqrt": 1 - math.sqrt(p),
        "minus_sqrt": 1 - math.sqrt(p),
        "linear": 1 - p,
        "cosine": 0.5 * (1 + math.cos(math.pi * p)),
        "exponential": 2 * 0.5**p - 1,
    }[shape]


def closed_form(t: int, start: int, steps: int, shape: str, end: float = 0.0) -> float:
    if t < start:
        return schedule_value(t)
    p = min(t - start, steps) / steps
    return end + (schedule_value(start) - end) * shape_value(shape, p)


def make_hp() -> hs.Hyperparameter:
    return hs.Hyperparameter(hs.schedules.cosine(PEAK, steps=LENGTH), name="learning_rate")


@pytest.mark.parametrize("shape", ["1-sqrt", "linear", "cosine", "exponential", "minus_sqrt"])
def test_values_after_start_equal_the_closed_form(shape: str) -> None:
    hp = make_hp()
    cooldown = hs.Cooldown(hp, steps=12, shape=shape, end=0.001)
    steps = np.arange(60)
    np.testing.assert_allclose(
        np.asarray(hp.at(steps)), [schedule_value(t) for t in steps], rtol=1e-6, atol=1e-8
    )  # nothing changes before the start
    cooldown.start(at=15)
    expected = [closed_form(t, 15, 12, shape, end=0.001) for t in steps]
    np.testing.assert_allclose(np.asarray(hp.at(steps)), expected, rtol=1e-6, atol=1e-8)
    assert cooldown.start_step == 15 and cooldown.started


def test_start_in_a_tf_function_loop_does_not_retrace_and_follows_the_closed_form() -> None:
    clock = hs.Clock()
    hp = hs.Hyperparameter(hs.schedules.cosine(PEAK, steps=LENGTH), clock=clock)
    cooldown = hs.Cooldown(hp, steps=10)

    @tf.function
    def read_and_advance() -> tf.Tensor:
        value = hp.value
        clock.advance()
        return value

    trace = []
    for step in range(50):
        if step == 17:
            cooldown.start()  # eagerly, between two calls of the traced step
        trace.append(float(read_and_advance()))
    assert read_and_advance.experimental_get_tracing_count() == 1
    expected = [closed_form(t, 17, 10, "1-sqrt") for t in range(50)]
    np.testing.assert_allclose(trace, expected, rtol=1e-6, atol=1e-8)


def test_start_inside_a_tf_function_at_a_future_step_and_cancel() -> None:
    clock = hs.Clock()
    hp = hs.Hyperparameter(hs.schedules.cosine(PEAK, steps=LENGTH), clock=clock)
    cooldown = hs.Cooldown(hp, steps=8, shape="linear")

    @tf.function
    def start_at(step: tf.Tensor) -> None:
        cooldown.start(at=step)

    start_at(tf.constant(20, tf.int64))
    start_at(tf.constant(5, tf.int64))  # already started: keeps 20
    assert cooldown.start_step == 20
    steps = np.arange(40)
    expected = [closed_form(t, 20, 8, "linear") for t in steps]
    np.testing.assert_allclose(np.asarray(hp.at(steps)), expected, rtol=1e-6, atol=1e-8)
    cooldown.cancel()
    assert not cooldown.started
    np.testing.assert_allclose(
        np.asarray(hp.at(steps)), [schedule_value(t) for t in steps], rtol=1e-6, atol=1e-8
    )


def test_the_plateau_floor_applies_to_the_cooled_value() -> None:
    clock = hs.Clock()
    hp = hs.Hyperparameter(hs.schedules.cosine(PEAK, steps=LENGTH), clock=clock)
    cooldown = hs.Cooldown(hp, steps=10, shape="linear")
    cooled = closed_form(8, 4, 10, "linear")
    plateau = hs.ReduceOnPlateau(
        hp, monitor="loss", factor=0.5, patience=1, min_value=0.75 * cooled
    )
    for _ in range(4):
        clock.advance()
    cooldown.start()
    for _ in range(4):
        clock.advance()
    plateau.update(1.0)
    plateau.update(2.0)
    np.testing.assert_allclose(float(hp.value), 0.75 * cooled, rtol=1e-6)


def test_composes_with_scale_override_and_reduce_on_plateau() -> None:
    clock = hs.Clock()
    hp = hs.Hyperparameter(hs.schedules.cosine(PEAK, steps=LENGTH), clock=clock)
    cooldown = hs.Cooldown(hp, steps=10, shape="linear")
    plateau = hs.ReduceOnPlateau(hp, monitor="loss", factor=0.5, patience=1)
    for _ in range(6):
        clock.advance()
    cooldown.start()
    for _ in range(3):
        clock.advance()
    plateau.update(1.0)
    plateau.update(2.0)  # no improvement: scale 0.5
    assert plateau.reductions == 1
    expected = closed_form(9, 6, 10, "linear") * 0.5
    np.testing.assert_allclose(float(hp.value), expected, rtol=1e-6)
    hp.set(0.03)
    assert float(hp.value) == np.float32(0.03)
    hp.clear()
    np.testing.assert_allclose(float(hp.value), expected, rtol=1e-6)
    assert hp.read()["schedule"] == pytest.approx(closed_form(9, 6, 10, "linear"), rel=1e-6)


@pytest.mark.parametrize("traced", [False, True])
def test_assigning_a_number_during_the_cooldown_makes_it_the_value(traced: bool) -> None:
    # `opt.learning_rate = x` (Keras's ReduceLROnPlateau) rescales the cooled value, not the
    # schedule under it: the value is x, then follows the cooldown's shape from there
    clock = hs.Clock()
    hp = hs.Hyperparameter(hs.schedules.cosine(PEAK, steps=LENGTH), clock=clock)
    hs.Cooldown(hp, steps=10, shape="linear").start(at=4)
    clock.step.assign(8)
    if traced:
        tf.function(lambda: hp.assign(0.01))()
    else:
        hp.assign(0.01)
    np.testing.assert_allclose(float(hp.value), 0.01, rtol=1e-6)
    ratio = 0.01 / closed_form(8, 4, 10, "linear")
    clock.step.assign(11)
    np.testing.assert_allclose(float(hp.value), closed_form(11, 4, 10, "linear") * ratio, rtol=1e-5)


class Record(keras.callbacks.Callback):
    """Records the learning rate each update uses and the traces of the model's call."""

    def __init__(self, hp: hs.Hyperparameter, touch: str | None = None, at: int = -1) -> None:
        super().__init__()
        self.hp, self.touch, self.at, self.rates = hp, touch, at, []

    def on_train_batch_begin(self, batch, logs=None) -> None:
        self.rates.append(float(self.hp.value))

    def on_train_batch_end(self, batch, logs=None) -> None:
        if self.touch is not None and len(self.rates) == self.at:
            Path(self.touch).touch()  # `touch cooldown` from a shell, here after update at-1


class Traced(keras.layers.Layer):
    traces = 0

    def call(self, x):
        Traced.traces += 1
        return x


def make_model(optimizer) -> keras.Model:
    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(2), Traced(), keras.layers.Dense(1)]
    )
    model.compile(optimizer, "mse")
    return model


DATA = (np.linspace(-1, 1, 48, dtype="float32").reshape(16, 3), np.ones((16, 1), "float32"))


def test_file_trigger_in_fit_starts_without_retracing(tmp_path: Path) -> None:
    optimizer = hs.scheduled(
        keras.optimizers.SGD(momentum=0.9), learning_rate=hs.schedules.cosine(PEAK, LENGTH)
    )
    hp = optimizer.hyperparameters["learning_rate"]
    cooldown = hs.Cooldown(optimizer, steps=6)
    flag = str(tmp_path / "cooldown")
    record = Record(hp, touch=flag, at=5)
    model = make_model(optimizer)
    start = hs.callbacks.StartCooldown(cooldown, when_file=flag)
    model.fit(*DATA, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=[start, record])
    traces = Traced.traces
    model.fit(*DATA, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[start, record])
    assert Traced.traces == traces  # the second fit, with the start, traced nothing new
    assert cooldown.start_step == 5 and os.path.exists(flag)
    expected = [closed_form(t, 5, 6, "1-sqrt") for t in range(12)]
    np.testing.assert_allclose(record.rates, expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    ("trigger", "start"),
    [({"at_step": 3}, 3), ({"at_epoch": 2}, 8), ({"after_seconds": 1e-9}, 0)],
)
def test_step_epoch_and_time_triggers(trigger: dict, start: int) -> None:
    optimizer = hs.scheduled(
        keras.optimizers.SGD(), learning_rate=hs.schedules.cosine(PEAK, LENGTH)
    )
    cooldown = hs.Cooldown(optimizer, steps=4, shape="linear")
    record = Record(optimizer.hyperparameters["learning_rate"])
    callback = hs.callbacks.StartCooldown(cooldown, **trigger)
    make_model(optimizer).fit(
        *DATA, batch_size=4, epochs=3, shuffle=False, verbose=0, callbacks=[callback, record]
    )
    assert cooldown.start_step == start
    expected = [closed_form(t, start, 4, "linear") for t in range(12)]
    np.testing.assert_allclose(record.rates, expected, rtol=1e-6, atol=1e-8)


def run(epochs: int, callbacks: list, model=None, initial_epoch: int = 0):
    model.fit(
        *DATA,
        batch_size=4,
        epochs=initial_epoch + epochs,
        initial_epoch=initial_epoch,
        shuffle=False,
        verbose=0,
        callbacks=callbacks,
    )
    return model


def build() -> tuple:
    optimizer = hs.scheduled(
        keras.optimizers.Adam(), learning_rate=hs.schedules.warmup(hs.schedules.cosine(0.05, 40), 4)
    )
    return optimizer, hs.Cooldown(optimizer, steps=7), make_model(optimizer)


def test_a_run_killed_after_the_start_resumes_bitwise(tmp_path: Path) -> None:
    optimizer, cooldown, model = build()
    run(4, [hs.callbacks.StartCooldown(cooldown, at_step=6)], model)
    uninterrupted = [w.numpy() for w in model.weights]

    optimizer, cooldown, model = build()
    run(2, [hs.callbacks.StartCooldown(cooldown, at_step=6)], model)  # 8 updates: started at 6
    model.save(tmp_path / "run.keras")  # the process is killed here
    del optimizer, cooldown, model

    resumed = keras.models.load_model(tmp_path / "run.keras", custom_objects={"Traced": Traced})
    cooldown = hs.Cooldown(resumed.optimizer, steps=7)  # no trigger: the variable carries it
    assert cooldown.start_step == 6
    run(2, [], resumed, initial_epoch=2)
    for ours, theirs in zip(resumed.weights, uninterrupted, strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs)


def test_restored_by_tf_train_checkpoint_before_or_after_the_cooldown_exists(
    tmp_path: Path,
) -> None:
    holder = tf.Module()
    holder.hp = make_hp()
    hs.Cooldown(holder.hp, steps=5).start(at=9)
    path = tf.train.Checkpoint(holder=holder).write(str(tmp_path / "ckpt"))
    for create_first in (True, False):
        fresh = tf.Module()
        fresh.hp = make_hp()
        cooldown = hs.Cooldown(fresh.hp, steps=5) if create_first else None
        status = tf.train.Checkpoint(holder=fresh).read(path)
        cooldown = cooldown or hs.Cooldown(fresh.hp, steps=5)
        status.assert_consumed()
        assert cooldown.start_step == 9


@pytest.mark.parametrize(
    ("build_it", "match"),
    [
        (lambda hp: hs.Cooldown(hp, steps=0), r"Cooldown\(steps=...\).*Received: steps=0"),
        (lambda hp: hs.Cooldown(hp, steps=5, shape="sqrt"), r"Received: shape='sqrt'"),
        (lambda hp: hs.Cooldown(hp, 5).start(at=-1), r"Received: at=-1"),
        (lambda hp: [hs.Cooldown(hp, 5), hs.Cooldown(hp, 5)], r"already has a cooldown"),
        (lambda hp: hs.callbacks.StartCooldown(hs.Cooldown(hp, 5)), r"needs a trigger"),
        (
            lambda hp: hs.callbacks.StartCooldown(hs.Cooldown(hp, 5), after_seconds=0),
            r"Received: after_seconds=0",
        ),
        (
            lambda hp: hs.callbacks.StartCooldown(hs.Cooldown(hp, 5), at_step=-1),
            r"StartCooldown\(at_step=...\)` must be an integer >= 0.*Received: at_step=-1",
        ),
        (
            lambda hp: hs.callbacks.StartCooldown(hs.Cooldown(hp, 5), at_epoch=1.5),
            r"StartCooldown\(at_epoch=...\)` must be an integer >= 0.*Received: at_epoch=1.5",
        ),
    ],
)
def test_bad_arguments_are_rejected_with_the_value(build_it, match) -> None:
    with pytest.raises(ValueError, match=match):
        build_it(make_hp())


def test_target_must_be_a_hyperparameter() -> None:
    with pytest.raises(TypeError, match=r"Cooldown\(hyperparameter=...\)"):
        hs.Cooldown(0.1, steps=5)


def test_repr() -> None:
    cooldown = hs.Cooldown(make_hp(), steps=5, shape="linear")
    assert repr(cooldown) == "Cooldown('learning_rate', steps=5, shape='linear', end=0.0)"
    assert "when_file='stop'" in repr(hs.callbacks.StartCooldown(cooldown, when_file="stop"))
    # an integral float is taken as the step it names, kept (and shown) as an int
    start = hs.callbacks.StartCooldown(cooldown, at_step=5.0, at_epoch=2.0)
    assert repr(start).endswith("at_step=5, at_epoch=2)")


# ---- made before tracing, honored after a load ---------------------------------------------
def test_a_cooldown_created_after_a_step_was_traced_is_followed_by_that_trace() -> None:
    hp = hs.Hyperparameter(0.1, name="learning_rate")

    @tf.function
    def value_at(step):
        return hp.at(step)

    assert float(value_at(tf.constant(3.0))) == pytest.approx(0.1)  # traced, dormant
    hs.Cooldown(hp, steps=4, shape="linear").start(at=2)
    traced = value_at.experimental_get_tracing_count()
    values = [float(value_at(tf.constant(float(s)))) for s in (0, 2, 3, 4, 6, 9)]
    assert values == pytest.approx([0.1, 0.1, 0.075, 0.05, 0.0, 0.0])  # Cooldown's closed form
    assert value_at.experimental_get_tracing_count() == traced  # no retrace


def test_a_loaded_started_cooldown_is_honored_without_building_it_again(tmp_path: Path) -> None:
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
    hs.Cooldown(opt, steps=4, shape="linear").start(at=2)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(opt, "mse")
    opt.build(model.trainable_variables)
    model.save(tmp_path / "m.keras")
    hp = keras.models.load_model(tmp_path / "m.keras").optimizer.hyperparameters["learning_rate"]
    assert hp._cooldown is None  # no Cooldown object built
    values = [round(float(v), 4) for v in hp.at([0, 2, 3, 4, 6, 9])]
    assert values == [0.1, 0.1, 0.075, 0.05, 0.0, 0.0]
    again = hs.Cooldown(hp, steps=4, shape="linear")  # the same one continues it
    assert again.start_step == 2
