"""Numbers that would break evaluation are refused; huge step counts work; every schedule the
vocabulary builds reads back from its ``repr``."""

from __future__ import annotations

import inspect
import json
from typing import Any

import keras
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hyperstep as hs
from hyperstep.errors import HyperstepError, InvalidArgumentError
from hyperstep.schedules.language import vocabulary

S = hs.schedules


@pytest.mark.parametrize(
    ("build", "received"),
    [
        (lambda: S.exponential(0.1, 1e-50, every=10), "rate=1e-50"),  # ZeroDivisionError
        (lambda: S.exponential(0.1, 1e39, every=10), "rate=1e\\+39"),  # math domain error
        (lambda: S.cyclic(0.1, 1, 10, mode="exp_range", gamma=1e-50), "gamma=1e-50"),
        (lambda: S.cyclic(0.1, 1, 10, mode="exp_range", gamma=1.5), "gamma=1.5"),  # NaN
        (lambda: S.one_cycle(1.0, 100, div_factor=1e-50), "div_factor=1e-50"),
        (lambda: S.one_cycle(1.0, 100, final_div_factor=1e39), "final_div_factor=1e\\+39"),
        (lambda: S.inverse_time(1.0, 1e39, 10), "rate=1e\\+39"),  # NaN at step 0
        (lambda: S.cosine_restarts(1.0, 10, t_mul=1e30), "t_mul=1e\\+30"),  # NaN from step 10
    ],
    ids=[
        "rate-0",
        "rate-inf",
        "gamma-0",
        "gamma-overflow",
        "div-0",
        "final-div-inf",
        "inverse-time-inf",
        "t-mul-overflow",
    ],
)
def test_values_that_break_float32_evaluation_are_refused(build, received):
    with pytest.raises(InvalidArgumentError, match=f"Received: {received}$"):
        build()


def test_the_refused_values_did_break_evaluation_before():
    # the reason for the refusals above, shown on the same formula in float32
    with np.errstate(over="ignore", invalid="ignore"):
        gamma = np.float32(1.5) ** np.float32(1e4)
        assert np.isnan(np.float32(0.0) * gamma)  # x = 0 at a cycle start: 0 * inf
    assert np.float32(1e-50) == 0  # exponential's rate correction divides by it


def test_the_largest_t_mul_accepted_stays_finite_up_to_2_53():
    s = S.cosine_restarts(1.0, 10, t_mul=1e11)
    steps = np.array([0, 9, 10, 11, 10**6, 10**12, 2**40, 2**53], np.float64)
    values = keras.ops.convert_to_numpy(s(steps))
    assert np.all(np.isfinite(values)) and np.all((values >= 0) & (values <= 1))


def test_a_decaying_exp_range_and_tiny_factors_stay_finite():
    s = S.cyclic(0.1, 1.0, 10, mode="exp_range", gamma=0.5)
    values = keras.ops.convert_to_numpy(s(np.arange(0, 10**4, 7)))
    assert np.all(np.isfinite(values))
    assert float(S.exponential(1.0, 1e-30, every=1)(3)) == 0.0  # underflows to 0, no error


@pytest.mark.parametrize(
    "schedule",
    [
        S.cosine(1000.0, int(1e10)),
        S.linear(0.0, 1.0, steps=2**53),
        S.one_cycle(1.0, steps=2**53),
        S.piecewise([10, 2**40], [1.0, 2.0, 3.0]),
        S.warmup(1.0, steps=2**45),
    ],
    ids=repr,
)
def test_steps_and_durations_up_to_2_53_read_back_and_evaluate(schedule):
    # (the three backends: tests/backends/test_big_steps.py)
    assert repr(hs.parse(repr(schedule))) == repr(schedule)
    steps = np.array([0, 10**9, 2**40, 2**52, 2**53], np.int64)
    values = keras.ops.convert_to_numpy(schedule(steps))
    assert np.all(np.isfinite(values))
    assert [float(schedule(int(t))) for t in steps] == values.tolist()


def test_one_cycle_of_19_to_the_90_steps_reads_back():
    s = S.one_cycle(1, steps=19**15)  # 2e19: beyond int64, inside float32
    assert repr(hs.parse(repr(s))) == repr(s)


def test_steps_beyond_float32_are_refused_naming_the_value():
    # 19**90 steps used to be accepted, and divided into inf in float32
    with pytest.raises(InvalidArgumentError, match=r"float32.*Received: steps=1"):
        S.one_cycle(1, steps=19**90)


# ---- parse(repr(s)) for whatever the vocabulary builds ---------------------------------------
NUMBERS = st.one_of(
    st.integers(-(2**53), 2**53),
    st.sampled_from([0, 1, 2, 3, 10, 19**90, 2**31, 2**53 + 1]),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    st.floats(min_value=1e-12, max_value=1e12),
)
WORDS = st.sampled_from(["triangular", "triangular2", "exp_range", "cos", "linear", "torch"])
WORDS = st.one_of(WORDS, st.sampled_from(["optax", "hold", "zero", "restart"]))


def _linear(start: Any, end: Any, steps: Any) -> Any:
    try:  # a number beyond float32's range is refused (NUMBERS draws float64's)
        return S.linear(start, end, steps)
    except HyperstepError:
        assume(False)


def simple() -> Any:
    return st.one_of(
        NUMBERS,
        st.builds(_linear, NUMBERS, NUMBERS, st.integers(1, 2**53)),
        st.just(hs.parse("step / 1000 + 0.01")),
        st.just(hs.parse("0 < step <= 100")),
    )


def argument(parameter: inspect.Parameter) -> Any:
    name, default = parameter.name, parameter.default
    if isinstance(default, bool):
        return st.booleans()
    if isinstance(default, str):
        return WORDS
    if name == "boundaries":
        return st.lists(st.integers(0, 2**53), min_size=1, max_size=4, unique=True).map(sorted)
    if name == "values":
        return st.lists(NUMBERS, min_size=2, max_size=5)
    if name == "schedules":
        return st.lists(simple(), min_size=2, max_size=5)
    if name == "schedule":
        return simple()
    if default is None:
        return st.one_of(st.none(), NUMBERS)
    return NUMBERS


@st.composite
def built(draw: Any) -> Any:
    keyword = draw(st.sampled_from(sorted(vocabulary())))
    cls = vocabulary()[keyword]
    kwargs = {}
    for parameter in inspect.signature(cls).parameters.values():
        if parameter.default is inspect.Parameter.empty or draw(st.booleans()):
            kwargs[parameter.name] = draw(argument(parameter))
    if keyword == "join" and "boundaries" in kwargs and "schedules" in kwargs:
        kwargs["boundaries"] = kwargs["boundaries"][: len(kwargs["schedules"]) - 1]
    if keyword == "piecewise" and "boundaries" in kwargs and "values" in kwargs:
        kwargs["values"] = (kwargs["values"] * 6)[: len(kwargs["boundaries"]) + 1]
    try:
        return cls(**kwargs)
    except HyperstepError:
        assume(False)


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(built())
def test_parse_reads_back_the_repr_of_every_schedule_the_vocabulary_builds(schedule):
    text = repr(schedule)
    again = hs.parse(text)
    assert repr(again) == text
    config = json.loads(json.dumps(keras.saving.serialize_keras_object(schedule)))
    assert repr(keras.saving.deserialize_keras_object(config)) == text
    # and the same values (NaN where NaN) at a few steps
    steps = np.array([0, 1, 100, 2**24], np.float32)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(schedule(steps)), keras.ops.convert_to_numpy(again(steps))
    )
