"""The step is the training iteration: two optimizers on one clock, in every order, in fit
and in custom loops, bitwise plain Keras optimizers set to schedule(i) before iteration i."""

import sys
import warnings
from pathlib import Path

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs

sys.path.insert(0, str(Path(__file__).parent))
import iteration_order_worker as worker

WORKER = Path(__file__).parent / "iteration_order_worker.py"


#: each order once in ``make test`` (the custom loop for the two that step the discriminator
#: first, fit for the generator first); the other three cells in ``make test-slow``
FAST = {("d_then_g", "loop"), ("five_d_per_g", "loop"), ("g_then_d", "fit")}


@pytest.mark.parametrize(
    ("order", "how"),
    [
        pytest.param(order, how, marks=() if (order, how) in FAST else pytest.mark.slow)
        for how in ("loop", "fit")
        for order in worker.ORDERS
    ],
)
def test_every_order_equals_plain_keras_set_to_the_iteration_step(order, how):
    found = worker.compare(order, how)
    assert found["weights_bitwise"], found
    assert found["tau_equals_schedule"] and found["tau_after_equals_before"], found
    assert found["step"] == worker.STEPS


def test_without_the_iteration_generator_first_shifts_the_discriminator_and_warns():
    """The failure the iteration fixes, seen by the same oracle: G (created first) advances
    the clock after its update, and D then reads the next step."""
    expected = worker.reference("GD")
    generator, discriminator, g_opt, d_opt, _, _clock = worker.scheduled_parts()
    step = worker.compiled(
        worker.make_iteration("GD", (generator, discriminator, g_opt, d_opt), lambda: 0.0)
    )
    with pytest.warns(UserWarning, match=r"updates after .* advanced the clock.*clock.iteration"):
        for noise, real in worker.batches():
            step(noise, real)
    found = worker.weights(generator, discriminator)
    assert not all(np.array_equal(a, b) for a, b in zip(found, expected["weights"], strict=True))


def test_discriminator_first_without_the_iteration_stays_silent_and_exact():
    """D then G with G advancing (the old advice) was right and stays so, without warning."""
    expected = worker.reference("DG")
    generator, discriminator, g_opt, d_opt, _, clock = worker.scheduled_parts()
    worker.built(generator, discriminator, g_opt, d_opt)
    step = worker.compiled(
        worker.make_iteration("DG", (generator, discriminator, g_opt, d_opt), lambda: 0.0)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for noise, real in worker.batches():
            step(noise, real)
    found = worker.weights(generator, discriminator)
    for a, b in zip(found, expected["weights"], strict=True):
        np.testing.assert_array_equal(a, b)
    assert int(clock.step) == worker.STEPS


def test_one_optimizer_without_the_iteration_advances_after_its_apply_as_before():
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate="1 + step")
    w = keras.Variable([0.0])
    opt.apply([tf.ones(1)], [w])
    assert int(opt.clock.step) == 1 and float(opt.learning_rate) == 2.0
    with opt.clock.iteration():
        opt.apply([tf.ones(1)], [w])
        assert int(opt.clock.step) == 1 and float(opt.learning_rate) == 2.0
    assert int(opt.clock.step) == 2 and float(w.numpy()[0]) == -3.0


def test_an_iteration_advances_a_clock_with_no_optimizer_once_and_not_on_an_error():
    clock = hs.Clock()
    beta = hs.Hyperparameter("step / 10", clock=clock, name="beta")
    for _ in range(3):
        with clock.iteration():
            assert float(beta.value) == np.float32(int(clock.step)) / np.float32(10)
    assert int(clock.step) == 3
    with pytest.raises(RuntimeError), clock.iteration():
        raise RuntimeError("the iteration failed")
    assert int(clock.step) == 3


def test_a_skipped_update_does_not_advance_the_iteration():
    opt = hs.SkipNonFinite(hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1))
    w = keras.Variable([1.0])

    @tf.function
    def step(g):
        with opt.clock.iteration():
            opt.apply([g], [w])

    step(tf.constant([1.0]))
    step(tf.constant([np.nan]))
    step(tf.constant([1.0]))
    assert int(opt.clock.step) == int(opt.iterations) == 2


def test_gradient_accumulation_advances_the_iteration_on_applied_updates_only():
    opt = hs.scheduled(keras.optimizers.SGD(gradient_accumulation_steps=2), learning_rate=0.1)
    w = keras.Variable([1.0])
    for _ in range(4):
        with opt.clock.iteration():
            opt.apply([tf.ones(1)], [w])
    assert int(opt.clock.step) == 2


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_jax_and_torch_every_order_equals_plain_keras_and_a_teacher_the_hand_written_one(
    workers, backend
):
    """In each backend's pytest pass: every order in a custom loop (``with
    clock.iteration():``, stateful ``apply``) and in ``fit`` with a custom ``train_step``
    (on JAX a stateless one carrying both optimizers' state, against the same jitted step
    with plain Keras Adam set by a callback: jitted and eager differ in the last bits); the
    loop without the iteration (warns once, G first); a momentum teacher
    (``hs.EMA.network``, with the optimizer and without one) inside the step against the
    hand-written update."""
    rows = workers(WORKER, [backend], args=["loop", "fit", "without_iteration", "teacher"])[backend]
    orders = [row for row in rows if row["how"] in ("loop", "fit")]
    assert sorted((row["how"], row["order"]) for row in orders) == sorted(
        (how, order) for how in ("loop", "fit") for order in worker.ORDERS
    )
    for row in orders:
        assert row["weights_bitwise"], (backend, row)
        assert row["tau_equals_schedule"] and row["tau_after_equals_before"], (backend, row)
        assert row["step"] == worker.STEPS, (backend, row)
    unwrapped = {row["order"]: row for row in rows if row["how"] == "without_iteration"}
    assert unwrapped["g_then_d"]["warnings"] == 1, (backend, unwrapped)
    assert not unwrapped["g_then_d"]["weights_bitwise"], (backend, unwrapped)
    assert unwrapped["d_then_g"]["warnings"] == 0, (backend, unwrapped)
    assert unwrapped["d_then_g"]["weights_bitwise"], (backend, unwrapped)
    (teacher,) = [row for row in rows if row["how"] == "teacher"]
    assert teacher["teacher_bitwise"] and teacher["student_bitwise"], (backend, teacher)
    assert teacher["teacher_moved"], (backend, teacher)
    assert teacher["alone_bitwise"] and teacher["alone_step"] == worker.TEACHER_STEPS
    assert teacher["tau_equals_schedule"] and teacher["tau_after_equals_before"], teacher
    assert teacher["step"] == worker.TEACHER_STEPS, (backend, teacher)


def test_fit_advances_once_per_train_step_and_a_copied_model_trains_itself():
    import copy

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer=hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1), loss="mse")
    x, y = np.ones((8, 2), "float32"), np.zeros((8, 1), "float32")
    model.fit(x, y, batch_size=4, epochs=2, verbose=0)
    assert int(model.optimizer.clock.step) == 4
    twin = copy.deepcopy(model)
    before = [w.copy() for w in model.get_weights()]
    twin.fit(x, y, batch_size=4, epochs=1, verbose=0)
    for a, b in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(a, b)  # the copy's train step is the copy's
    assert int(twin.optimizer.clock.step) == 6 and int(model.optimizer.clock.step) == 4
