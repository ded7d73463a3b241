"""Units of hyperstep.control.distribute (``check_reduce``, ``reduce_metric``) and the
strategy helpers of hyperstep.backends.steering it reduces with, on one device (several
replicas and workers: tests/distribute)."""

from __future__ import annotations

import contextlib
from types import SimpleNamespace

import keras
import numpy as np
import pytest
import tensorflow as tf

from hyperstep.backends.steering import strategy_scope as scope_of
from hyperstep.backends.steering import tensorflow_strategy as strategy_of
from hyperstep.backends.steering import tensorflow_workers as num_workers
from hyperstep.control.distribute import REDUCTIONS, check_reduce, reduce_metric
from hyperstep.errors import InvalidArgumentError


@pytest.fixture(scope="module")
def strategy() -> tf.distribute.Strategy:
    return tf.distribute.MirroredStrategy(["/cpu:0"])


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_check_reduce_returns_a_known_reduction(reduce) -> None:
    assert check_reduce("Owner", reduce) == reduce


@pytest.mark.parametrize("reduce", ["max", "MEAN", 0])
def test_check_reduce_names_the_owner_and_value(reduce) -> None:
    with pytest.raises(InvalidArgumentError, match=rf"`Owner\(reduce=...\)`.*reduce={reduce!r}"):
        check_reduce("Owner", reduce)


def test_reduce_metric_without_a_strategy_returns_the_value() -> None:
    value = tf.constant(0.25)
    assert reduce_metric(value) is value
    assert reduce_metric(3.0, None) == 3.0
    with pytest.raises(InvalidArgumentError, match=r"`reduce_metric\(reduce=...\)`"):
        reduce_metric(1.0, "max")


def test_reduce_metric_under_one_replica_keeps_the_value(strategy) -> None:
    with strategy.scope():
        variable = keras.Variable(1.0)  # a controller's state: a Keras variable
        inside = strategy.run(lambda: reduce_metric(tf.constant(2.0), "sum"))
    assert float(inside) == 2.0  # one replica in sync: no all_reduce
    assert strategy_of(variable) is strategy  # outside the scope: the variable's owner
    value = tf.constant(0.5)
    assert reduce_metric(value, "mean", variable=variable) is value  # one worker


def test_num_workers_counts_workers_not_replicas(strategy) -> None:
    assert num_workers(strategy) == 1
    four_on_two = SimpleNamespace(
        num_replicas_in_sync=4, extended=SimpleNamespace(worker_devices=("a", "b"))
    )
    assert num_workers(four_on_two) == 2
    assert num_workers(object()) == 1  # no devices to count


def test_scope_of_enters_the_owner_strategy(strategy) -> None:
    assert isinstance(scope_of(keras.Variable(1.0)), contextlib.nullcontext)
    with strategy.scope():
        owned = keras.Variable(1.0)
    with scope_of(owned):
        assert tf.distribute.get_strategy() is strategy
        made = tf.Variable(np.float32(2.0))
    assert isinstance(made, tf.distribute.DistributedValues)


def test_strategy_of_finds_the_owner_of_a_keras_or_a_plain_tf_variable(strategy) -> None:
    with strategy.scope():
        keras_owned = keras.Variable(1.0)
        tf_owned = tf.Variable(np.float32(1.0))
    assert isinstance(tf_owned, tf.distribute.DistributedValues)
    assert strategy_of(keras_owned) is strategy
    assert strategy_of(tf_owned) is strategy  # its `value` is a method, not the variable
    assert strategy_of(tf.Variable(np.float32(1.0))) is None
    assert strategy_of(None) is None
    with strategy.scope():
        assert strategy_of(None) is strategy  # the one in scope
