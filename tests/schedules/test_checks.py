"""The units of hyperstep.schedules.checks: the argument checks (the house error wording) and
the float32 rounding of numbers, against NumPy."""

import math

import numpy as np
import pytest

from hyperstep.errors import InvalidArgumentError, InvalidTypeError
from hyperstep.schedules import checks as c


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
    assert c.check_number("f", "x", -3.0e38) == -3.0e38
    with pytest.raises(InvalidArgumentError, match=r"beyond float32's range.*Received: x=1e\+39"):
        c.check_number("f", "x", 1e39)
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
