"""Argument checks shared by the schedule families and combinators (and the controllers
that take the same arguments, such as :class:`hyperstep.Cooldown`).

The ``check_*`` functions validate constructor arguments and word their errors the
house way: the call, what was expected, and ``Received: name=value``.
"""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np

from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.schedules.base import (
    FLOAT32_MAX,
    Schedule,
    as_float,
    check_number,
    is_number,
)
from hyperstep.schedules.expressions import check_length, folded


def check_steps(owner: str, name: str, value: Any, *, allow_zero: bool = False) -> Any:
    """Return a positive (or, with ``allow_zero``, non-negative) finite number of steps.

    Integral values come back as ``int`` so that ``repr`` writes ``steps=100``. A length
    (an expression of ``total`` such as ``0.9 * total``) comes back as it is: the word
    computes with its value (:meth:`~hyperstep.schedules.expressions.LengthNode.length_value`).
    """
    if isinstance(value, Schedule):
        number = folded(value)
        if number is None:
            return check_length(owner, name, value)
        value = number
    what = "a non-negative number of steps" if allow_zero else "a positive number of steps"
    if not is_number(value):
        raise InvalidTypeError(f"`{owner}({name}=...)` must be {what}. {received(name, value)}")
    number = as_float(owner, name, value)
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        raise InvalidArgumentError(f"`{owner}({name}=...)` must be {what}. {received(name, value)}")
    if number > FLOAT32_MAX or 0 < number < FLOAT32_TINY:
        raise InvalidArgumentError(
            f"`{owner}({name}=...)` is outside float32's normal range, in which schedules "
            f"divide by it (it would round to {float32(number)}): use between 1.2e-38 and "
            f"3.4e38 steps. {received(name, value)}"
        )
    return _exact(number)


def check_keras_steps(owner: str, name: str, value: Any, allow_zero: bool = False) -> Any:
    """A positive number of steps for Keras's float32 formulas (``inverse_time``,
    ``exponential_decay``, ...), which divide by it; a length of ``total`` is refused."""
    steps = check_steps(owner, name, value, allow_zero=allow_zero)
    if isinstance(steps, Schedule):
        raise InvalidArgumentError(
            f"`{owner}({name}=...)` takes a number: a compiled step rewrites Keras's division "
            "by it (x * (1 / n)), not by a length read at run time. Write the number, or use "
            f"a word, exact for `total` (`cosine(1e-3, steps=total)`). {received(name, value)}"
        )
    return steps


#: the smallest positive normal float32 (a number of steps below it divides into inf)
FLOAT32_TINY = 1.1754943508222875e-38


def _exact(number: float) -> int | float:
    """An integral ``number`` as ``int`` (so ``repr`` writes ``steps=100``) while it fits
    int32: larger ones stay floats, which every backend mixes with float32 tensors (JAX
    refuses a Python int beyond int32) and ``repr`` writes in a form ``hs.parse`` reads."""
    return int(number) if number.is_integer() and abs(number) < 2**31 else number


def check_positive(owner: str, name: str, value: Any) -> float:
    """Return ``value`` as a float > 0, or raise naming the argument and the value."""
    number = check_number(owner, name, value)
    if number <= 0:
        raise InvalidArgumentError(
            f"`{owner}({name}=...)` must be a number > 0. {received(name, value)}"
        )
    return number


def float32(number: float) -> float:
    """``number`` rounded to float32 (``inf`` beyond its largest finite value)."""
    try:
        return float(struct.unpack("f", struct.pack("f", number))[0])
    except OverflowError:
        return math.copysign(math.inf, number)


def check_factor(owner: str, name: str, value: Any) -> float:
    """Return a factor > 0 that stays a positive finite number in float32 (schedules compute
    in float32: a factor rounding to 0 or inf there divides by zero or overflows)."""
    number = check_positive(owner, name, value)
    rounded = float32(number)
    if rounded == 0.0 or math.isinf(rounded):
        raise InvalidArgumentError(
            f"`{owner}({name}=...)` rounds to {rounded} in float32, in which schedules "
            "compute; use a factor between 1e-38 and 3e38. " + received(name, value)
        )
    return number


def check_flag(owner: str, name: str, value: Any) -> bool:
    """Return ``value`` if it is a bool, or raise naming the argument and the value."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidTypeError(
            f"`{owner}({name}=...)` must be True or False. {received(name, value)}"
        )
    return bool(value)


def check_choice(owner: str, name: str, value: Any, choices: Sequence[str]) -> str:
    """Return ``value`` if it is one of ``choices``, or raise listing them."""
    if not isinstance(value, str) or value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise InvalidArgumentError(
            f"`{owner}({name}=...)` must be one of {options}. {received(name, value)}"
        )
    return value


def check_numbers(owner: str, name: str, value: Any) -> list[float]:
    """Return a list of finite floats from a list or tuple, naming the first bad element."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise InvalidTypeError(
            f"`{owner}({name}=...)` must be a list of numbers. {received(name, value)}"
        )
    for item in value:
        if not is_number(item) or not math.isfinite(as_float(owner, name, item)):
            raise InvalidArgumentError(
                f"`{owner}({name}=...)` must be a list of finite numbers; found {item!r}. "
                f"{received(name, value)}"
            )
        if abs(float(item)) > FLOAT32_MAX:
            raise InvalidArgumentError(
                f"`{owner}({name}=...)` must be numbers inside float32's range (|x| <= "
                f"3.4028235e38), in which schedules compute; found {item!r}. "
                f"{received(name, value)}"
            )
    return [float(v) for v in value]


def check_boundaries(owner: str, name: str, value: Any) -> list[Any]:
    """Return non-negative, strictly increasing step boundaries (integral ones as ints).

    A boundary may be a length (``0.5 * total``, as :func:`check_steps` takes it), which
    stays as it is: its order among the others is checked where ``total`` is bound.
    """
    if isinstance(value, (list, tuple)) and any(isinstance(b, Schedule) for b in value):
        found = [check_steps(owner, name, b, allow_zero=True) for b in value]
    else:
        found = [_exact(b) for b in check_numbers(owner, name, value)]
    numbers = [b for b in found if not isinstance(b, Schedule)]
    for b in numbers:
        if b < 0:
            raise InvalidArgumentError(
                f"`{owner}({name}=...)` must be non-negative steps; found {b:g}. "
                f"{received(name, value)}"
            )
    for a, b in itertools.pairwise(numbers):
        if b <= a:
            raise InvalidArgumentError(
                f"`{owner}({name}=...)` must be sorted and unique; found {a:g} before {b:g}. "
                f"{received(name, value)} Write them in increasing order, each once."
            )
    return found
