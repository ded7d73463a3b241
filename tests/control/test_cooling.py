"""Units of hyperstep.control.cooling: the dormant cooldown every hyperparameter carries."""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest

from hyperstep.control.cooling import FORM, START, cooled, dormant, form_of
from hyperstep.errors import InvalidArgumentError
from hyperstep.schedules.language import parse
from hyperstep.schedules.wsd import DECAY_TYPES


def _state(start: int, steps: float = 10.0, end: float = 0.0, shape: str = "linear"):
    return (
        keras.Variable(start, dtype="int64", trainable=False),
        keras.Variable(form_of(steps, end, shape), dtype="float32", trainable=False),
    )


def test_names_are_the_saved_state_names() -> None:
    assert (START, FORM) == ("cooldown_start", "cooldown_form")


@pytest.mark.parametrize("shape", DECAY_TYPES)
def test_form_of_is_steps_end_and_the_shape_index(shape: str) -> None:
    form = form_of(20, 0.5, shape)
    assert form == [20.0, 0.5, float(DECAY_TYPES.index(shape))]
    assert all(type(v) is float for v in form)


def test_form_of_an_unknown_shape_names_the_argument_and_the_value() -> None:
    with pytest.raises(
        InvalidArgumentError,
        match=r"`Cooldown\(shape=\.\.\.\)` must be one of .*"
        r"Received: shape='sqrt'",
    ):
        form_of(20, 0.5, "sqrt")


@pytest.mark.parametrize(("start", "expected"), [(-1, True), (0, False), (7, False)])
def test_dormant_reads_the_start_eagerly(start: int, expected: bool) -> None:
    assert dormant(_state(start)[0]) is expected


def test_a_dormant_cooldown_returns_base_itself() -> None:
    start, form = _state(-1)
    base = object()  # returned untouched: no arithmetic at all
    assert cooled(start, form, parse("1 - step / 100"), base, 5) is base


def _reference(shape: str, v0: float, end: float, done: float, steps: float) -> float:
    p = min(max(done, 0.0), steps) / steps
    factor = {
        "linear": 1 - p,
        "cosine": (1 + math.cos(math.pi * p)) / 2,
        "1-sqrt": 1 - math.sqrt(p),
        "minus_sqrt": 1 - math.sqrt(p),
        "exponential": 2 * 0.5**p - 1,
    }[shape]
    return end + (v0 - end) * factor


@pytest.mark.parametrize("shape", DECAY_TYPES)
def test_a_started_cooldown_follows_the_closed_form(shape: str) -> None:
    schedule = parse("1 - step / 100")
    start, form = _state(20, steps=10.0, end=0.1, shape=shape)
    v0 = 1 - 20 / 100
    for step in (0.0, 19.0, 20.0, 23.0, 30.0, 45.0):
        base = schedule(step)
        got = float(cooled(start, form, schedule, base, step))
        if step < 20:
            expected = 1 - step / 100  # before its start: the schedule's value
        else:
            expected = _reference(shape, v0, 0.1, step - 20, 10.0)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7, err_msg=f"{step=}")


def test_cooled_follows_an_assigned_start_and_form() -> None:
    schedule = parse("0.5")
    start, form = _state(-1)
    assert float(cooled(start, form, schedule, schedule(8.0), 8.0)) == 0.5
    start.assign(4)
    form.assign(form_of(8, 0.0, "linear"))
    np.testing.assert_allclose(
        float(cooled(start, form, schedule, schedule(8.0), 8.0)), 0.5 * (1 - 4 / 8), rtol=1e-6
    )


@pytest.mark.parametrize("shape", DECAY_TYPES)
def test_a_started_cooldown_is_bitwise_the_cooldown_word_eagerly_and_in_a_graph(
    shape: str,
) -> None:
    # the run reads steps and end from variables, the replayed word has them as constants:
    # in a tf.function (Grappler folds `x / 13` and `(x * a) * b` with constants) and
    # eagerly they must give the same float32 and float64 values
    import tensorflow as tf

    import hyperstep as hs

    schedule = parse("linear(0.85, 0.95, steps=100)")
    start, form = _state(8, steps=13.0, end=0.001, shape=shape)
    v0 = float(np.float32(schedule(8.0)))
    word = hs.schedules.cooldown(v0, 8, 13, shape, end=float(np.float32(0.001)))
    steps = np.arange(8, 24, dtype=np.float32)

    def both(step):
        base = schedule(step)
        run32 = cooled(start, form, schedule, base, step)
        run64 = cooled(start, form, schedule, keras.ops.cast(base, "float64"), step)
        return run32, run64, word(step)

    graph = tf.function(both)
    for step in steps:
        for run32, run64, replayed in (both(step), graph(tf.constant(step))):
            assert np.float32(run32) == np.float32(replayed), (shape, step)
            assert np.float64(run64) == np.float64(np.float32(replayed)), (shape, step)
