"""Units of :mod:`hyperstep.backends.steering`, in every backend's pass: one process is one
worker that is the chief, a lone worker needs no collective, which hyperparameters reach
Keras in float64, when a step runs untraced, and :func:`traced_values` equal to the bit to
the schedule compiled at one scalar step."""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest
from keras import ops

import hyperstep as hs
from hyperstep.backends.steering import (
    MAX_AGREED,
    Workers,
    agreement,
    exact_form,
    state_grew,
    traced_values,
    untraced,
    workers,
)

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")
BACKEND = keras.backend.backend()


def test_workers_defaults_to_the_lone_chief() -> None:
    place = Workers()
    assert (place.index, place.count, place.chief, place.owner) == (0, 1, True, None)
    assert repr(Workers(2, 4, False)) == "Workers(index=2, count=4, chief=False)"


def test_one_process_is_one_worker_and_needs_no_agreement() -> None:
    place = workers(keras.Variable(1.0))
    assert (place.index, place.count, place.chief) == (0, 1, True)
    assert agreement(place) is None
    assert 1 <= MAX_AGREED


@pytest.mark.backend("tensorflow")
def test_one_machine_mirrored_strategy_is_one_worker() -> None:
    import tensorflow as tf

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        variable = keras.Variable(1.0)
        inside = workers(variable)
    assert isinstance(variable.value, tf.distribute.DistributedValues)
    assert (inside.count, workers(variable).count) == (1, 1)


@pytest.mark.backend("tensorflow")
def test_tensorflow_agreement_counts_only_what_every_worker_reached() -> None:
    import tensorflow as tf

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    # this process is the only replica: a second worker that never reports reached nothing
    agree = agreement(Workers(0, 2, True, strategy))
    assert agree is not None
    assert [agree(n) for n in (0, 1, 5, MAX_AGREED + 3)] == [0, 0, 0, 0]


@pytest.mark.backend("jax")
def test_jax_agreement_of_one_process_is_its_own_count() -> None:
    agree = agreement(Workers(0, 2, True))  # the collective, over the one process there is
    assert agree is not None
    assert [agree(n) for n in (0, 3, 40)] == [0, 3, 40]


@pytest.mark.backend("torch")
def test_torch_agreement_is_a_min_all_reduce_over_the_group() -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert workers(keras.Variable(1.0)).count == 1  # a group of one: one worker
        agree = agreement(Workers(0, 2, True))
        assert agree is not None
        assert [agree(n) for n in (0, 3, 40)] == [0, 3, 40]
    finally:
        dist.destroy_process_group()


def test_exact_form_is_every_scheduled_name_but_the_learning_rate_on_tensorflow() -> None:
    optimizer = hs.scheduled(keras.optimizers.Adam(), learning_rate=0.1, beta_1=0.9)
    tensorflow = BACKEND == "tensorflow"
    assert exact_form("beta_1", optimizer) is tensorflow
    assert exact_form("head/beta_1", optimizer) is tensorflow
    assert exact_form("learning_rate", optimizer) is False
    assert exact_form("head/learning_rate", optimizer) is False
    assert exact_form("beta_1", keras.optimizers.Adam()) is False  # not scheduled


def _model(jit_compile: bool) -> keras.Model:
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse", jit_compile=jit_compile)
    return model


def test_only_torch_without_jit_compile_runs_untraced() -> None:
    eager, compiled = _model(False), _model(True)
    assert (eager.jit_compile, compiled.jit_compile) == (False, True)
    torch = BACKEND == "torch"
    assert untraced(None) is torch  # a custom loop
    assert untraced(eager) is torch
    assert untraced(compiled) is False


def _clock_dtype() -> str:
    return str(hs.Clock().step.dtype)


def _compiled_at(schedule, step: int, dtype: str) -> np.float32:
    """``schedule(step)`` as a compiled step computes it at one scalar step."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return np.float32(tf.function(schedule)(tf.constant(step, dtype=dtype)))
    if BACKEND == "jax":
        import jax
        import jax.numpy as jnp

        return np.float32(jax.jit(schedule)(jnp.asarray(step, dtype=dtype)))
    step_tensor = ops.convert_to_tensor(float(step), dtype="float32")
    return np.float32(ops.convert_to_numpy(schedule(step_tensor)))


def test_traced_values_equal_the_schedule_compiled_at_each_scalar_step() -> None:
    dtype = _clock_dtype()
    schedule = keras.optimizers.schedules.CosineDecay(0.1, decay_steps=100)
    found = traced_values(schedule, dtype)(37, 6)
    assert found.dtype == np.float32 and found.shape == (6,)
    expected = [_compiled_at(schedule, step, dtype) for step in range(37, 43)]
    np.testing.assert_array_equal(found, np.asarray(expected, dtype="float32"))
    closed = [0.05 * (1 + math.cos(math.pi * step / 100)) for step in range(37, 43)]
    np.testing.assert_allclose(found, closed, rtol=1e-6)


def test_traced_values_start_at_start_and_give_count_values() -> None:
    values = traced_values(lambda step: ops.cast(step, "float32") * 0.25 + 1.0, _clock_dtype())
    np.testing.assert_array_equal(values(0, 4), np.float32([1.0, 1.25, 1.5, 1.75]))
    np.testing.assert_array_equal(values(1000, 2), np.float32([251.0, 251.25]))
    assert values(5, 1).shape == (1,)


@pytest.mark.backend("jax")
def test_state_grew_records_the_shardings_again_where_fit_had_recorded_them() -> None:
    # Keras's JAX trainer before 3.11 records one sharding per optimizer variable before
    # on_train_begin; a variable added there (the Remote's table) needs one too
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(keras.optimizers.SGD(), "mse")
    model.optimizer.build(model.trainable_variables)
    state_grew(model)  # nothing recorded yet: nothing to do
    assert getattr(model, "_optimizer_variable_shardings", None) is None
    if not hasattr(model, "_record_training_state_sharding_spec"):
        return  # Keras 3.11+ records nothing before on_train_begin (older: make test-oldest)
    model._record_training_state_sharding_spec()
    added = keras.Variable(0.0, name="added")
    model.optimizer._track_variable(added)
    assert len(model._optimizer_variable_shardings) == len(model.optimizer.variables) - 1
    state_grew(model)
    assert len(model._optimizer_variable_shardings) == len(model.optimizer.variables)
