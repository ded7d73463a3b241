"""``model.fit`` binds ``clock.total`` from Keras's own figures; a schedule reading ``total``
then trains, step by step, with the values of the schedule written by hand with the number
of steps fit ran (counted here by a callback, not taken from hyperstep)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import warnings

import keras
import numpy as np
import pytest

import hyperstep as hs

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

#: lengths Python folds in float64 (``0.9 * 1237`` is not a float32 product): exact on every
#: backend, JAX without x64 included
TEXT = "warmup(cosine(1e-3, steps=0.9 * total, end=1e-5), steps=0.1 * total)"


def _by_hand(n: int):
    return hs.parse(f"warmup(cosine(1e-3, steps={0.9 * n!r}, end=1e-5), steps={0.1 * n!r})")


class Seen(keras.callbacks.Callback):
    """The learning rate each batch trains with, and the number of batches fit ran."""

    def __init__(self, optimizer) -> None:
        super().__init__()
        self.optimizer, self.rates = optimizer, []

    def on_train_batch_begin(self, batch, logs=None) -> None:
        self.rates.append(np.float32(keras.ops.convert_to_numpy(self.optimizer.learning_rate)))


def _model(optimizer) -> keras.Model:
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer, "mse")
    return model


def _data(n: int):
    rng = np.random.default_rng(0)
    return rng.random((n, 3), dtype=np.float32), rng.random((n, 1), dtype=np.float32)


def _assert_trained_by_hand(seen: Seen, first: int, n: int) -> None:
    reference = _by_hand(n)
    expected = [np.float32(reference(step)) for step in range(first, first + len(seen.rates))]
    np.testing.assert_array_equal(
        np.array(seen.rates).view(np.uint32), np.array(expected).view(np.uint32)
    )


@pytest.mark.parametrize(
    ("rows", "batch_size", "epochs", "split"),
    [(50, 8, 3, 0.0), (50, 8, 3, 0.2), (37, 5, 4, 0.3)],
)
def test_fit_binds_epochs_times_its_steps_with_batch_size_and_validation_split(
    rows, batch_size, epochs, split
) -> None:
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=TEXT)
    seen = Seen(optimizer)
    x, y = _data(rows)
    _model(optimizer).fit(
        x,
        y,
        batch_size=batch_size,
        epochs=epochs,
        validation_split=split,
        verbose=0,
        callbacks=[seen],
    )
    # by hand: Keras splits off the last `split` of the rows (int(rows * (1 - split)) trained)
    trained = int(rows * (1 - split))
    n = epochs * math.ceil(trained / batch_size)
    assert optimizer.clock.total == n == len(seen.rates)
    _assert_trained_by_hand(seen, 0, n)


def test_fit_with_steps_per_epoch_binds_epochs_times_it() -> None:
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=TEXT)
    seen = Seen(optimizer)
    x, y = _data(64)
    _model(optimizer).fit(
        x, y, batch_size=4, steps_per_epoch=5, epochs=3, verbose=0, callbacks=[seen]
    )
    assert optimizer.clock.total == 15 == len(seen.rates)
    _assert_trained_by_hand(seen, 0, 15)


@pytest.mark.backend("tensorflow")
def test_fit_on_a_dataset_of_known_cardinality_binds_it() -> None:
    import tensorflow as tf

    x, y = _data(45)
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(10)  # 5 batches, cardinality 5
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=TEXT)
    seen = Seen(optimizer)
    _model(optimizer).fit(data, epochs=2, shuffle=False, verbose=0, callbacks=[seen])
    assert int(data.cardinality()) * 2 == optimizer.clock.total == len(seen.rates) == 10
    _assert_trained_by_hand(seen, 0, 10)


@pytest.mark.backend("tensorflow")
def test_fit_on_a_dataset_of_unknown_length_refuses_at_train_begin() -> None:
    import tensorflow as tf

    x, y = _data(45)
    data = tf.data.Dataset.from_tensor_slices((x, y)).filter(lambda a, b: True).batch(10)
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=TEXT)
    model = _model(optimizer)
    with pytest.raises(
        ValueError, match=r"reads `total`.*steps_per_epoch=.*clock.total = n.*steps=None"
    ):
        model.fit(data, epochs=2, shuffle=False, verbose=0)
    assert int(optimizer.iterations.numpy()) == 0  # refused before a step
    optimizer.clock.total = 10  # the fix the message names
    seen = Seen(optimizer)
    with warnings.catch_warnings():  # Keras's at the data's end, where its length is unknown
        warnings.filterwarnings("ignore", message="Your input ran out of data")
        model.fit(data, epochs=2, shuffle=False, verbose=0, callbacks=[seen])
    _assert_trained_by_hand(seen, 0, 10)


def test_a_fit_of_no_step_binds_no_length_and_refuses_where_a_schedule_reads_total() -> None:
    x, y = _data(40)
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=TEXT)
    with pytest.raises(
        ValueError, match=r"reads `total`.*it runs no step.*clock.total = n.*total=0, epochs=0"
    ):
        _model(optimizer).fit(x, y, batch_size=8, epochs=0, verbose=0)
    assert optimizer.clock.total is None
    plain = hs.scheduled(keras.optimizers.SGD(), learning_rate="cosine(1e-3, steps=10)")
    _model(plain).fit(x, y, batch_size=8, epochs=0, verbose=0)  # as Keras: runs nothing
    assert plain.clock.total is None and int(keras.ops.convert_to_numpy(plain.iterations)) == 0


def test_a_length_its_word_refuses_at_fit_s_total_is_refused_before_any_step() -> None:
    # 5 epochs of 20 steps: `total - 200` is -100 steps, which `linear` refuses (fit used to
    # train with what the word made of -100 steps: cosine gave 0)
    x, y = _data(160)
    optimizer = hs.scheduled(
        keras.optimizers.SGD(), learning_rate="linear(1e-3, 1e-5, steps=total - 200)"
    )
    model = _model(optimizer)
    before = [w.copy() for w in model.get_weights()]
    with pytest.raises(
        ValueError,
        match=r"`linear\(0.001, 1e-05, steps=total - 200.0\)` with the run's length `total` = "
        r"100: `linear\(steps=...\)` must be a positive number of steps. Received: steps=-100.0. "
        r"Bind a longer run \(`clock.total = n`, or `epochs=` and `steps_per_epoch=` in `fit`\)"
        r".*max\(total - 200, 1\).*Received: total=100",
    ):
        model.fit(x, y, batch_size=8, epochs=5, steps_per_epoch=20, verbose=0)
    assert int(keras.ops.convert_to_numpy(optimizer.iterations)) == 0  # no step ran
    for weight, was in zip(model.get_weights(), before, strict=True):
        np.testing.assert_array_equal(weight, was)
    optimizer.clock.total = 300  # the fix the message names: a decay of 100 steps
    seen = Seen(optimizer)
    model.fit(x, y, batch_size=8, epochs=5, steps_per_epoch=20, verbose=0, callbacks=[seen])
    by_hand = hs.parse("linear(1e-3, 1e-5, steps=100)")  # one step at a time, as fit reads it
    expected = [np.float32(keras.ops.convert_to_numpy(by_hand(step))) for step in range(100)]
    np.testing.assert_array_equal(np.float32(seen.rates), expected)


def test_a_schedule_without_total_trains_on_data_of_unknown_length() -> None:
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate="cosine(1e-3, steps=10)")
    x, y = _data(20)
    _model(optimizer).fit(x, y, batch_size=4, epochs=1, verbose=0)
    assert optimizer.clock.total == 5  # bound all the same (nothing refused)


def test_a_resumed_fit_keeps_the_run_s_length_and_continues_its_values(tmp_path) -> None:
    x, y = _data(40)  # 5 steps per epoch with batch_size=8; 4 epochs: 20 steps

    class StopAfter(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None) -> None:
            if epoch == 1:
                self.model.stop_training = True

    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=TEXT)
    first = Seen(optimizer)
    model = _model(optimizer)
    model.fit(x, y, batch_size=8, epochs=4, verbose=0, callbacks=[first, StopAfter()])
    path = str(tmp_path / "run.keras")
    model.save(path)
    resumed = keras.saving.load_model(path)
    clock = resumed.optimizer.clock
    assert clock.total == 20 and int(clock.step.numpy()) == 10
    second = Seen(resumed.optimizer)
    resumed.fit(x, y, batch_size=8, epochs=4, initial_epoch=2, verbose=0, callbacks=[second])
    assert len(first.rates) == len(second.rates) == 10
    _assert_trained_by_hand(first, 0, 20)
    _assert_trained_by_hand(second, 10, 20)


def test_a_second_fit_of_another_length_refuses_naming_both_and_the_fix() -> None:
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=TEXT)
    model = _model(optimizer)
    x, y = _data(40)
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    with pytest.raises(
        ValueError, match=r"runs a length of 30 steps.*total` is 10.*clock.total = 30.*total=10"
    ):
        model.fit(x, y, batch_size=8, epochs=6, verbose=0)
    optimizer.clock.total = 30  # re-bound by hand: kept by the next fit
    seen = Seen(optimizer)
    model.fit(x, y, batch_size=8, epochs=6, initial_epoch=2, verbose=0, callbacks=[seen])
    _assert_trained_by_hand(seen, 10, 30)


def test_a_length_the_user_set_is_kept_by_fit() -> None:
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=TEXT)
    optimizer.clock.total = 100  # a run of several fits
    seen = Seen(optimizer)
    x, y = _data(40)
    _model(optimizer).fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[seen])
    assert optimizer.clock.total == 100
    _assert_trained_by_hand(seen, 0, 100)


class CountTraces(keras.layers.Layer):
    """Counts how often its ``call`` runs in Python: once per trace of a compiled step."""

    traces = 0

    def call(self, inputs):
        CountTraces.traces += 1
        return inputs


def test_binding_and_changing_total_never_retraces_the_train_step() -> None:
    if keras.backend.backend() == "torch":
        pytest.skip("torch's fit runs eagerly (no trace) unless jit_compile; see the loop test")
    CountTraces.traces = 0
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=TEXT)
    model = keras.Sequential([keras.Input((3,)), CountTraces(), keras.layers.Dense(1)])
    model.compile(optimizer, "mse")
    x, y = _data(40)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    traced = CountTraces.traces
    for total in (50, 7, 1000):
        optimizer.clock.total = total
        seen = Seen(optimizer)
        model.fit(x, y, batch_size=8, epochs=1, verbose=0, callbacks=[seen])
        step = int(keras.ops.convert_to_numpy(optimizer.clock.step)) - 5
        _assert_trained_by_hand(seen, step, total)
    assert CountTraces.traces == traced


def _loop_step(optimizer, weight, traces):
    """One compiled training iteration of a custom loop on this backend: returns the
    learning rate its update used."""
    backend = keras.backend.backend()

    def update(grad):
        traces.append(1)
        rate = optimizer.learning_rate  # the value this iteration's update uses
        optimizer.apply([grad], [weight])
        return rate

    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(update)
    if backend == "torch":
        return update  # eager: nothing to retrace
    import jax

    def stateless(opt_values, train_values, grad):
        traces.append(1)
        mapping = list(zip(optimizer.variables, opt_values, strict=True))
        with keras.StatelessScope(state_mapping=mapping):
            rate = optimizer.learning_rate  # the value this iteration's update uses
        train, opt_values = optimizer.stateless_apply(opt_values, [grad], train_values)
        return train, opt_values, rate

    jitted = jax.jit(stateless)

    def step(grad):
        train, values, rate = jitted([v.value for v in optimizer.variables], [weight.value], grad)
        for variable, value in zip(optimizer.variables, values, strict=True):
            variable.assign(value)
        weight.assign(train[0])
        return rate

    return step


def _loop(schedule, clock, totals):
    """``(step, total, rate)`` of a custom loop on ``clock`` whose length changes."""
    optimizer = hs.scheduled(keras.optimizers.SGD(), clock=clock, learning_rate=schedule)
    weight = keras.Variable(np.zeros(2, np.float32))
    optimizer.build([weight])
    traces: list[int] = []
    step_fn, found = _loop_step(optimizer, weight, traces), []
    for total in totals:
        if schedule == TEXT:
            clock.total = total
        step = int(keras.ops.convert_to_numpy(clock.step))
        found.append((step, total, np.float32(step_fn(keras.ops.ones(2)))))
    return found, len(traces)


def test_a_custom_loop_reads_total_in_its_compiled_step_without_retracing() -> None:
    totals = [40] * 8 + [80] * 8 + [25] * 8
    found, traces = _loop(TEXT, hs.Clock(), totals)
    if keras.backend.backend() != "torch":
        assert traces == 1
    # the same loop with the schedule written by hand, over the same steps: one loop per length
    by_hand = {}
    for total in dict.fromkeys(totals):
        steps = [step for step, length, _ in found if length == total]
        clock = hs.Clock()
        clock.step.assign(steps[0])
        rows, _ = _loop(_by_hand(total), clock, [total] * len(steps))
        assert [step for step, _, _ in rows] == steps
        by_hand.update({step: rate for step, _, rate in rows})
    for step, total, rate in found:
        assert rate.view(np.uint32) == by_hand[step].view(np.uint32), (step, total)
        assert rate.view(np.uint32) == np.float32(_by_hand(total)(step)).view(np.uint32)


SCRIPT = """
import keras, numpy as np, hyperstep as hs
model = keras.saving.load_model({path!r})
s = model.optimizer.hyperparameters["learning_rate"].schedule
print("REPR", repr(s))
print("TOTAL", model.optimizer.clock.total)
"""


@pytest.mark.slow  # a fresh process (a backend import) for the load
def test_a_keras_file_loads_in_a_fresh_process_with_total_symbolic(tmp_path) -> None:
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=TEXT)
    model = _model(optimizer)
    x, y = _data(40)
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    path = str(tmp_path / "model.keras")
    model.save(path)
    env = {**os.environ, "KERAS_BACKEND": keras.backend.backend()}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(path=path)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    assert f"REPR {hs.parse(TEXT)!r}" in out and "steps=0.9 * total" in out
    assert "TOTAL 10" in out
