"""Tests for hs.Clock: the step variable, epochs, saving and the stateless copy."""

import json
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs


def test_clock_starts_at_zero_and_advance_adds_one():
    clock = hs.Clock()
    assert int(clock.step) == 0
    for expected in range(1, 6):
        clock.advance()
        assert int(clock.step) == expected


def test_step_variable_is_int64_non_trainable_first_replica_only():
    clock = hs.Clock()
    assert clock.step.dtype == "int64"
    assert not clock.step.trainable
    assert clock.step.aggregation == "only_first_replica"
    assert clock.variables == [clock.step, *clock.epoch_variables, clock.total_steps]
    assert clock.epoch_variables == [clock.epoch_index, clock.epoch_start, clock.epoch_length]
    for variable in clock.epoch_variables:
        assert (variable.dtype, variable.trainable) == ("int64", False)
        assert variable.aggregation == "only_first_replica"


def test_epoch_is_step_floor_divided_by_steps_per_epoch():
    clock = hs.Clock(steps_per_epoch=7)
    for step in [0, 6, 7, 8, 69, 70, 1000]:
        clock.step.assign(step)
        assert int(clock.epoch) == np.floor_divide(step, 7)


def test_epoch_without_steps_per_epoch_is_0_before_the_first_update_then_names_the_argument():
    clock = hs.Clock()
    assert int(clock.epoch) == 0  # nothing trained yet: epoch 0 whatever its length
    clock.advance()
    with pytest.raises(
        ValueError, match=r"steps_per_epoch=\.\.\..*FollowEpochs.*Received: steps_per_epoch=None"
    ):
        _ = clock.epoch


def test_epoch_without_steps_per_epoch_in_a_traced_step_names_the_argument():
    clock = hs.Clock()
    with pytest.raises(ValueError, match=r"Received: steps_per_epoch=None"):
        tf.function(lambda: clock.epoch, autograph=False)()


def test_begin_epoch_places_fit_epochs_and_later_epochs_count_steps_per_epoch():
    # fit's epochs of 5, 5, 5 and 1 steps (an input that runs out), then 5 again
    clock = hs.Clock(steps_per_epoch=5)
    lengths = [5, 5, 5, 1, 5, 5]
    seen = []
    for epoch, length in enumerate(lengths):
        clock.begin_epoch(epoch)
        for _ in range(length):
            seen.append(int(clock.epoch))
            clock.advance()
    assert seen == [e for e, n in enumerate(lengths) for _ in range(n)]
    assert int(clock.epoch) == 6  # after fit: the last epoch's start + 5 steps
    clock.step.assign(27 + 12)  # 12 more steps outside fit: epochs of 5 from there
    assert int(clock.epoch) == 5 + (39 - 21) // 5


def test_begin_epoch_rejects_a_bad_index():
    with pytest.raises(ValueError, match=r"begin_epoch.*Received: epoch=-1"):
        hs.Clock().begin_epoch(-1)


@pytest.mark.parametrize("bad", [0, -3, 2.5])
def test_invalid_steps_per_epoch_is_rejected_at_construction(bad):
    with pytest.raises(ValueError, match=rf"steps_per_epoch.*Received: steps_per_epoch={bad}"):
        hs.Clock(steps_per_epoch=bad)


@pytest.mark.parametrize("bad", [0, -3, 2.5, float("inf"), float("nan"), np.float64(-1.0)])
def test_a_length_that_is_not_a_positive_integer_is_refused_naming_total(bad):
    message = (
        r"`Clock\(total=...\)` must be a positive integer below 2\*\*63. "
        rf"Received: total={re.escape(repr(bad))}"
    )
    with pytest.raises(ValueError, match=message):
        hs.Clock(total=bad)
    clock = hs.Clock(total=10)
    with pytest.raises(ValueError, match=message):
        clock.total = bad
    assert clock.total == 10 and int(clock.total_steps.numpy()) == 10  # left as it was


@pytest.mark.parametrize("bad", ["100", True, [100]])
def test_a_length_that_is_not_a_number_is_refused_naming_total(bad):
    with pytest.raises(
        TypeError, match=rf"positive integer below 2\*\*63. Received: total={re.escape(repr(bad))}"
    ):
        hs.Clock(total=bad)


def test_steps_per_epoch_can_be_set_once():
    clock = hs.Clock()
    clock.steps_per_epoch = 10
    clock.steps_per_epoch = 10  # the same value again is fine (fit() called twice)
    clock.step.assign(25)
    assert int(clock.epoch) == 2
    with pytest.raises(ValueError, match=r"cannot change.*Received: steps_per_epoch=20"):
        clock.steps_per_epoch = 20


def test_advance_inside_tf_function_counts_every_call():
    clock = hs.Clock()
    advance = tf.function(clock.advance)
    for _ in range(10):
        advance()
    assert int(clock.step) == 10
    assert advance.experimental_get_tracing_count() == 1


def test_config_round_trips_through_json():
    clock = hs.Clock(steps_per_epoch=12, name="train_clock")
    config = json.loads(json.dumps(keras.saving.serialize_keras_object(clock)))
    restored = keras.saving.deserialize_keras_object(config)
    assert isinstance(restored, hs.Clock)
    assert (restored.steps_per_epoch, restored.name) == (12, "train_clock")
    assert repr(restored) == "Clock(steps_per_epoch=12, name='train_clock')"


class _WithClock(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(2)
        self.clock = hs.Clock(steps_per_epoch=5)

    def call(self, x):
        return self.dense(x)


def _model_with_clock_at(step):
    model = _WithClock()
    model(np.zeros((1, 3), "float32"))
    model.clock.step.assign(step)
    return model


def _clock_state(clock):
    return [int(v) for v in (clock.step, *clock.epoch_variables)]


def test_clock_attached_to_a_model_is_saved_by_save_weights(tmp_path):
    model = _model_with_clock_at(37)
    model.clock.begin_epoch(6)
    model.clock.epoch_length.assign(9)
    model.save_weights(tmp_path / "m.weights.h5")
    other = _model_with_clock_at(0)
    other.load_weights(tmp_path / "m.weights.h5")
    assert _clock_state(other.clock) == [37, 6, 37, 9]


def test_clock_attached_to_a_model_is_saved_by_tf_checkpoint(tmp_path):
    model = _model_with_clock_at(41)
    model.clock.begin_epoch(3)
    path = tf.train.Checkpoint(model=model).save(str(tmp_path / "ckpt"))
    other = _model_with_clock_at(0)
    tf.train.Checkpoint(model=other).restore(path).assert_existing_objects_matched()
    assert _clock_state(other.clock) == [41, 3, 41, 0]


def test_stateless_copy_hands_on_the_epoch_variables_both_states_hold():
    clock = hs.Clock()
    other = keras.Variable(1.0)
    source = ([clock.step, clock.epoch_index, clock.epoch_start], [9, 2, 8])  # no length
    both = clock.stateless_copy(source, ([other, clock.epoch_start, clock.step], [2.5, 0, 0]))
    assert [float(v) for v in both] == [2.5, 8.0, 9.0]
    only_step = clock.stateless_copy(source, ([clock.step], [0]))  # an epoch-free reader
    assert [int(v) for v in only_step] == [9]
