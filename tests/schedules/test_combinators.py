"""warmup and join: documented edges, children of every schedule-like kind, config."""

import importlib.util
import json
import pathlib

import keras
import numpy as np
import pytest

import hyperstep.schedules as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError
from hyperstep.schedules import keras_formulas

_spec = importlib.util.spec_from_file_location(
    "schedule_reference", pathlib.Path(__file__).with_name("reference.py")
)
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)


def test_warmup_starts_at_start_and_reaches_wrapped_start_at_steps():
    inner = hs.cosine(1.0, steps=100, end=0.1)
    s = hs.warmup(inner, steps=10, start=0.2)
    ref.assert_close(s([0, 5, 10]), [0.2, 0.6, 1.0])


def test_warmup_then_runs_the_wrapped_schedule_delayed_by_its_steps():
    inner = hs.cosine(1.0, steps=100, end=0.1)
    s = hs.warmup(inner, steps=10)
    steps = ref.grid(110, 10, 110)
    expected = np.where(steps < 10, steps / 10, ref.cosine(1.0, 100, end=0.1)(steps - 10))
    ref.assert_close(s(steps), expected)


def test_warmup_of_a_number_is_a_ramp_then_that_number():
    s = hs.warmup(0.5, steps=4)
    ref.assert_close(s([0, 1, 2, 3, 4, 100]), [0.0, 0.125, 0.25, 0.375, 0.5, 0.5])


def test_warmup_ramps_to_the_wrapped_value_at_zero_even_when_it_is_not_its_maximum():
    s = hs.warmup(hs.linear(0.1, 1.0, steps=10), steps=5)
    ref.assert_close(s([0, 5, 10, 15]), [0.0, 0.1, 0.55, 1.0])


def test_join_gives_each_later_schedule_the_step_counted_from_its_boundary():
    s = hs.join([hs.linear(0.0, 1.0, steps=10), hs.cosine(1.0, steps=20), 0.05], [10, 30])
    steps = ref.grid(30, 10, 30)
    expected = np.select(
        [steps < 10, steps < 30],
        [steps / 10, ref.cosine(1.0, 20)(steps - 10)],
        0.05,
    )
    ref.assert_close(s(steps), expected)


def test_join_applies_the_new_schedule_at_its_boundary():
    s = hs.join([1.0, 2.0, 3.0], [0, 5])
    assert [float(v) for v in s([0, 4, 5, 6])] == [2.0, 2.0, 3.0, 3.0]


def test_join_of_one_schedule_is_that_schedule():
    s = hs.join([hs.cosine(1.0, steps=10)], [])
    np.testing.assert_array_equal(s(np.arange(30)), hs.cosine(1.0, steps=10)(np.arange(30)))


def test_combinators_accept_keras_schedules_and_convert_them():
    k = keras.optimizers.schedules.ExponentialDecay(1.0, 10, 0.5, staircase=True)
    s = hs.join([k, hs.warmup(k, steps=5)], [20])
    assert isinstance(s.schedules[0], keras_formulas.ExponentialDecay)  # bitwise Keras
    ref.assert_close(s([0, 10, 19, 20, 25, 35]), [1.0, 0.5, 0.5, 0.0, 1.0, 0.5])


def test_combinator_repr_nests_children_inline():
    s = hs.join([hs.warmup(hs.cosine(1e-3, steps=1000), steps=100), 1e-5], [1100])
    assert repr(s) == "join([warmup(cosine(0.001, steps=1000), steps=100), 1e-05], [1100])"
    w = hs.warmup(hs.cosine(1e-3, steps=1000) * 0.5, steps=10, start=1e-4)
    assert repr(w) == "warmup(cosine(0.001, steps=1000) * 0.5, steps=10, start=0.0001)"


@pytest.mark.parametrize(
    "schedule",
    [
        hs.warmup(hs.one_cycle(1.0, steps=50) + 0.1, steps=10, start=0.01),
        hs.join([hs.linear(0.0, 1.0, steps=10), hs.cyclic(0.1, 1.0, steps_up=5)], [10]),
        hs.join([hs.warmup(2.0, steps=3), hs.piecewise([5], [1.0, 0.5])], [3]),
    ],
    ids=repr,
)
def test_combinator_config_json_round_trip_is_equal_by_value(schedule):
    text = json.dumps(keras.saving.serialize_keras_object(schedule))
    back = keras.saving.deserialize_keras_object(json.loads(text))
    assert repr(back) == repr(schedule)
    steps = np.arange(200)
    np.testing.assert_array_equal(back(steps), schedule(steps))


def test_combinator_children_and_replace_walk_the_tree():
    inner = hs.cosine(1.0, steps=10)
    s = hs.join([hs.warmup(inner, steps=5), 0.1], [20])
    assert s.children()[0].children() == [inner]
    swapped = s.replace(lambda n: hs.linear(1.0, 0.0, steps=10) if n is inner else None)
    assert repr(swapped) == "join([warmup(linear(1.0, 0.0, steps=10), steps=5), 0.1], [20])"


def test_join_needs_one_boundary_fewer_than_schedules():
    with pytest.raises(InvalidArgumentError, match=r"3 schedules and boundaries=\[100, 200, 300\]"):
        hs.join([1.0, 2.0, 3.0], [100, 200, 300])


def test_join_rejects_a_string_for_schedules():
    with pytest.raises(InvalidTypeError, match="schedules='cosine'"):
        hs.join("cosine", [])
