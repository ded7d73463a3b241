"""The units of hyperstep.schedules._common: the argument checks (the house error wording),
the float32 rounding helpers and the exact float64 operations, against NumPy."""

import math

import numpy as np
import pytest
from keras import ops

from hyperstep.errors import InvalidArgumentError, InvalidTypeError
from hyperstep.schedules import _common as c


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


# ---- checks ---------------------------------------------------------------------------------
def test_check_steps_returns_integral_values_as_int_and_keeps_fractions() -> None:
    assert c.check_steps("f", "steps", 100.0) == 100 and type(c.check_steps("f", "s", 100.0)) is int
    assert c.check_steps("f", "steps", np.int64(7)) == 7
    assert c.check_steps("f", "steps", 2.5) == 2.5
    assert c.check_steps("f", "begin", 0, allow_zero=True) == 0
    # beyond int32 an integral number stays a float (JAX refuses a Python int there)
    assert type(c.check_steps("f", "steps", 2.0**31)) is float


@pytest.mark.parametrize(
    ("value", "kwargs", "error", "pattern"),
    [
        (0, {}, InvalidArgumentError, r"`f\(steps=\.\.\.\)` must be a positive .* steps=0"),
        (-1, {"allow_zero": True}, InvalidArgumentError, r"non-negative.*Received: steps=-1"),
        (math.nan, {}, InvalidArgumentError, r"Received: steps=nan"),
        (True, {}, InvalidTypeError, r"Received: steps=True"),
        ("3", {}, InvalidTypeError, r"Received: steps='3'"),
        (1e39, {}, InvalidArgumentError, r"float32's normal range.*Received: steps=1e\+39"),
        (1e-39, {}, InvalidArgumentError, r"normal range.*Received: steps=1e-39"),
    ],
)
def test_check_steps_refuses_naming_the_owner_argument_and_value(value, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        c.check_steps("f", "steps", value, **kwargs)


def test_float32_tiny_is_numpys_smallest_normal_float32() -> None:
    assert c.FLOAT32_TINY == float(np.finfo(np.float32).tiny)


def test_float32_rounds_like_numpy_and_overflows_to_signed_inf() -> None:
    for x in (0.1, 1 / 3, 1e-45, 3.4028235e38, -2.5e-7):
        assert c.float32(x) == float(np.float32(x))
    assert c.float32(1e39) == math.inf and c.float32(-1e39) == -math.inf


def test_check_positive_float32_and_factor() -> None:
    assert c.check_positive("f", "power", np.float32(2.0)) == 2.0
    with pytest.raises(InvalidArgumentError, match=r"`f\(power=\.\.\.\)` must be a number > 0"):
        c.check_positive("f", "power", 0)
    assert c.check_float32("f", "x", -3.0e38) == -3.0e38
    with pytest.raises(InvalidArgumentError, match=r"beyond float32's range.*Received: x=1e\+39"):
        c.check_float32("f", "x", 1e39)
    assert c.check_factor("f", "rate", 0.5) == 0.5
    with pytest.raises(InvalidArgumentError, match=r"rounds to 0\.0 in float32.*rate=1e-46"):
        c.check_factor("f", "rate", 1e-46)
    with pytest.raises(InvalidArgumentError, match=r"float32's range.*Received: rate=1e\+39"):
        c.check_factor("f", "rate", 1e39)


def test_check_flag_and_choice() -> None:
    assert c.check_flag("f", "cycle", np.bool_(True)) is True
    with pytest.raises(InvalidTypeError, match=r"must be True or False\. Received: cycle=1"):
        c.check_flag("f", "cycle", 1)
    assert c.check_choice("f", "mode", "b", ("a", "b")) == "b"
    with pytest.raises(InvalidArgumentError, match=r"one of 'a', 'b'\. Received: mode='c'"):
        c.check_choice("f", "mode", "c", ("a", "b"))
    with pytest.raises(InvalidArgumentError, match=r"Received: mode=None"):
        c.check_choice("f", "mode", None, ("a",))


def test_check_numbers_returns_floats_and_names_the_first_bad_element() -> None:
    assert c.check_numbers("f", "values", (1, np.float32(0.5))) == [1.0, 0.5]
    with pytest.raises(InvalidTypeError, match=r"list of numbers\. Received: values='12'"):
        c.check_numbers("f", "values", "12")
    with pytest.raises(InvalidArgumentError, match=r"found inf\. Received: values=\[1, inf\]"):
        c.check_numbers("f", "values", [1, math.inf])
    with pytest.raises(InvalidArgumentError, match=r"float32's range.*found 1e\+39"):
        c.check_numbers("f", "values", [1e39])


def test_check_boundaries_keeps_integral_ints_and_refuses_disorder() -> None:
    found = c.check_boundaries("f", "boundaries", [0, 10.0, 20.5])
    assert found == [0, 10, 20.5] and type(found[1]) is int
    with pytest.raises(InvalidArgumentError, match=r"sorted and unique; found 10 before 10"):
        c.check_boundaries("f", "boundaries", [10, 10])
    with pytest.raises(InvalidArgumentError, match=r"non-negative steps; found -1"):
        c.check_boundaries("f", "boundaries", [-1, 5])


# ---- exact operations -----------------------------------------------------------------------
def test_exact_floor_and_ceil_match_numpy_in_float64_next_to_integers() -> None:
    x = np.array([2.9999999999, 3.0, 3.0000000001, -0.5, -2.0000000001, 0.0, 1e15 + 0.5])
    tensor = ops.convert_to_tensor(x, dtype="float64")
    floor, ceil = _np(c.exact_floor(tensor)), _np(c.exact_ceil(tensor))
    assert floor.dtype == np.float64 and np.array_equal(floor, np.floor(x))
    assert np.array_equal(ceil, np.ceil(x))


def test_exact_minimum_and_maximum_keep_float64() -> None:
    a = ops.convert_to_tensor([1.0 + 2**-40, 3.0], dtype="float64")
    low, high = _np(c.exact_minimum(a, 2.0)), _np(c.exact_maximum(a, 2.0))
    assert low.dtype == np.float64 and low.tolist() == [1.0 + 2**-40, 2.0]
    assert high.tolist() == [2.0, 3.0]


def test_power_of_is_the_float64_power_of_the_exact_base() -> None:
    p = np.array([0.0, 1.0, 10.0, 1000.0, 12345.5])
    got = _np(c.power_of(0.9, ops.convert_to_tensor(p, dtype=c.WIDE)))
    np.testing.assert_allclose(got, 0.9**p, rtol=1e-14)


def test_cosine_weight_is_half_one_plus_cos_of_pi_times_one_minus_left() -> None:
    left = np.linspace(0.0, 1.0, 11)
    got = _np(c.cosine_weight(ops.convert_to_tensor(left, dtype="float64")))
    np.testing.assert_allclose(got, (1 + np.cos(np.pi * (1 - left))) / 2, atol=1e-15)


def test_rounded_once_computes_wide_and_rounds_to_float32_once() -> None:
    class Third:
        @c.rounded_once
        def value(self, step):
            return step / 3.0

    got = _np(Third().value(ops.convert_to_tensor([1, 2, 10], dtype="int32")))
    assert got.dtype == np.float32
    assert got.tolist() == [float(np.float32(k / 3.0)) for k in (1, 2, 10)]


def test_as_float32_and_widened_dtypes() -> None:
    assert _np(c.as_float32(0.1)).dtype == np.float32
    assert _np(c.widened(0.1)).item() == 0.1  # float64: the exact Python float
