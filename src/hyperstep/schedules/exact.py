"""Float32-exact ops shared by the schedule families: computed in ``WIDE`` (float64, see
:mod:`hyperstep.schedules._ops`) and rounded to float32 once, or written so that each
backend's kernels give the same bits.
"""

from __future__ import annotations

import contextlib
import functools
import math
import struct
from collections.abc import Callable
from typing import Any

from hyperstep import backends
from hyperstep.backends.scopes import xla_compiling
from hyperstep.schedules._ops import NUMPY, WIDE, ops

#: ``pi / 2``, the factor of ``sin(pi / 2 * left) ** 2`` (the cosine weight)
HALF_PI = math.pi / 2


def as_float32(value: float) -> Any:
    """``value`` as a float32 constant, as Keras casts its arguments."""
    return ops.convert_to_tensor(value, dtype="float32")


def widened(value: Any) -> Any:
    """``value`` as a tensor of ``WIDE`` (Keras's torch ``where`` and ``minimum`` round a
    Python float to float32 first); a length (``0.3 * total``) its value."""
    if getattr(value, "length_expression", False):
        return value.length_value()
    return ops.convert_to_tensor(value, dtype=WIDE)


def in_float64(operation: Callable[..., Any], *operands: Any) -> Any:
    """``operation(*operands)`` computed in float64 (on JAX without x64 too) and rounded once
    to the first operand's dtype.

    ``a * b`` and ``a / b`` of float32 operands give the correctly rounded float32 result on
    every read path: where a compiler rewrites a division by a constant as ``a * (1 / b)``
    (Grappler, XLA, Inductor) or folds ``(x * c1) * c2`` into ``x * (c1 * c2)`` (Grappler),
    it does so in float64 between the casts, which still rounds to that result (a float32
    quotient is never within 2**-49 of a float32 tie, float64's two roundings stay within
    2**-52; a float32 product is exact in float64). So ``step / 1000`` and ``step / total``
    with ``total`` bound to 1000 give the same bits, compiled or not.
    """
    with backends.float64_scope() if WIDE == "float32" else contextlib.nullcontext():
        wide = operation(*(ops.cast(operand, "float64") for operand in operands))
        return ops.cast(wide, operands[0].dtype)


def rounded_once(value: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """A word's ``value(step)`` computed in float64 and rounded once to float32.

    Every read path then gives the same float32 bits: one step eagerly, the compiled step
    (where Grappler turns ``x / c`` into ``x * (1 / c)``: in float64 that still rounds to
    the correctly rounded float32 quotient), a vector of steps (whose float32 ``sin`` and
    ``exp`` kernels differ from the scalar ones) and NumPy (the command line's plots). On
    JAX without x64 (``WIDE`` is float32) the value is computed in float32 as written.

    A length argument (``steps=0.9 * total``) is computed first, in ``WIDE`` as Python
    folds the number, and the word computes with it as with that number.
    """

    @functools.wraps(value)
    def computed(self: Any, step: Any) -> Any:
        return ops.cast(value(with_lengths(self), ops.cast(step, WIDE)), "float32")

    return computed


def with_lengths(word: Any) -> Any:
    """``word``, or a copy whose length arguments (``steps=total``) are their ``WIDE`` values
    (``length_value()`` of :class:`~hyperstep.schedules.expressions.LengthNode`); the wrapped
    ``schedule`` of a combinator stays a schedule."""
    keys = vars(word).get("_length_keys")
    if keys is None:  # found once per word
        found = vars(word).items()
        keys = [k for k, v in found if k != "schedule" and getattr(v, "length_expression", False)]
        word._length_keys = keys
    if not keys:
        return word
    lengths = {key: vars(word)[key].length_value() for key in keys}
    copy = object.__new__(type(word))
    vars(copy).update({**vars(word), **lengths})
    return copy


def larger(a: Any, b: Any) -> Any:
    """``max(a, b)`` of two numbers of steps: Python's for numbers, else a ``WIDE`` tensor."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return max(a, b)
    return exact_maximum(ops.convert_to_tensor(a, WIDE), b)


def clipped(x: Any, low: Any, high: Any) -> Any:
    """``clip(x, low, high)`` in ``x``'s dtype, bounds exact (see :func:`exact_minimum`)."""
    return exact_minimum(exact_maximum(x, low), high)


def exact_minimum(a: Any, b: Any) -> Any:
    """``minimum(a, b)`` in ``a``'s dtype (Keras's torch ``minimum`` returns float32 for two
    float64 tensors, Keras 3.15)."""
    b = widened(b) if isinstance(b, (int, float)) else b
    return ops.where(ops.less_equal(a, b), a, b)


def exact_maximum(a: Any, b: Any) -> Any:
    """``maximum(a, b)`` in ``a``'s dtype (see :func:`exact_minimum`)."""
    b = widened(b) if isinstance(b, (int, float)) else b
    return ops.where(ops.greater_equal(a, b), a, b)


def exact_floor(x: Any) -> Any:
    """``floor(x)`` in ``x``'s dtype: exact, from ``round`` (Keras's torch ``floor`` rounds a
    float64 ``x`` to float32 first, Keras 3.15: 2.9999999999 would floor to 3)."""
    r = ops.round(x)
    return ops.where(ops.greater(r, x), r - 1.0, r)


def exact_ceil(x: Any) -> Any:
    """``ceil(x)`` in ``x``'s dtype (see :func:`exact_floor`)."""
    r = ops.round(x)
    return ops.where(ops.less(r, x), r + 1.0, r)


def power_of(base: float, exponent: Any) -> Any:
    """``base ** exponent`` for a Python ``base > 0``, corrected for its float32 rounding.

    ``float32(base) ** p`` is off by ``p * (relative rounding of base)``, up to 6e-8 * p;
    the factor ``exp(p * log(base / float32(base)))`` removes that error. Bases exactly
    representable in float32 (0.5, 2.0, ...) skip the correction and stay exact.
    """
    if WIDE == "float64":  # the exact base (a Python float is a float64)
        return ops.power(ops.convert_to_tensor(base, WIDE), ops.cast(exponent, WIDE))
    base32 = struct.unpack("f", struct.pack("f", base))[0]  # float32(base), no numpy
    result = ops.power(as_float32(base32), exponent)
    correction = math.log(base / base32)
    if correction != 0.0:
        result = result * ops.exp(exponent * correction)
    return result


def cosine_weight(left: Any) -> Any:
    """``(1 + cos(pi * (1 - left))) / 2``, written as ``sin(pi / 2 * left) ** 2``; where
    :func:`sine` is a polynomial, ``left`` is first taken into ``[0, 1]`` (the weight is even
    and has period 2), exactly: ``left`` itself there."""
    if not _polynomial(left):
        return ops.square(ops.sin(HALF_PI * left))
    left = left - 2.0 * exact_floor(left * 0.5)
    return ops.square(sine(HALF_PI * exact_minimum(left, 2.0 - left)))


#: ``(-1) ** k / (2k + 1)!``: the Taylor series of ``sin``, whose first term left out is
#: below ``(pi / 2) ** 23 / 23! < 2e-18`` on ``[0, pi / 2]``
_SINE_TERMS = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(11))


def sine(x: Any) -> Any:
    """``sin(x)`` for ``x`` in ``[0, pi / 2]`` (a ``WIDE`` tensor).

    Where XLA compiles float64 code (:func:`~hyperstep.backends.scopes.xla_compiling`), the
    Taylor polynomial in multiplies and adds: within a few float64 ulps of ``sin``, so it
    rounds to the same float32, and it vectorizes (XLA's float64 ``sin`` costs about 3 times
    its float32 one on a CPU, and the whole of a compiled cosine word). Elsewhere ``ops.sin``.
    """
    if not _polynomial(x):
        return ops.sin(x)
    square = x * x
    total = _SINE_TERMS[-1] * square
    for term in reversed(_SINE_TERMS[1:-1]):
        total = (total + term) * square
    return x + x * total


def _polynomial(x: Any) -> bool:
    return not NUMPY and WIDE == "float64" and xla_compiling(x)
