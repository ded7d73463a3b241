"""Float32-exact ops shared by the schedule families: computed in float64 (within
:data:`~hyperstep.schedules._ops.float64_scope`, JAX without x64 too) and rounded to float32
once, or written so that each backend's kernels give the same bits.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

from hyperstep.backends.scopes import concrete, xla_computes
from hyperstep.schedules._ops import NUMPY, float64_scope, ops

#: ``pi / 2``, the factor of ``sin(pi / 2 * left) ** 2`` (the cosine weight)
HALF_PI = math.pi / 2


def as_float32(value: float) -> Any:
    """``value`` as a float32 constant, as Keras casts its arguments."""
    return ops.convert_to_tensor(value, dtype="float32")


def widened(value: Any) -> Any:
    """``value`` as a float64 tensor (Keras's torch ``where`` and ``minimum`` round a Python
    float to float32 first); a length (``0.3 * total``) its value."""
    if getattr(value, "length_expression", False):
        return value.length_value()
    return ops.convert_to_tensor(value, dtype="float64")


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
    with float64_scope():
        wide = operation(*(ops.cast(operand, "float64") for operand in operands))
        return ops.cast(wide, operands[0].dtype)


Value = Callable[[Any, Any], Any]


def rounded_once(*lengths: str, hidden: bool = True) -> Callable[[Value], Value]:
    """A word's ``value(step)`` computed in float64 (JAX without x64 too) and rounded once to
    float32; ``lengths`` name the word's numbers of steps (``"steps"``).

    Every read path then gives the same float32 bits (eagerly, compiled, on a vector of steps,
    in NumPy). A length (``steps=0.9 * total``) is computed first, as Python folds the number.
    Where a compiler sees it (a graph, ``torch.compile``, any XLA computation), a number
    written by hand enters as ``number * one``, ``one`` 1.0 computed from the step: Grappler,
    XLA and Inductor turn ``step / 100`` into ``step * 0.01`` (0.9500000000000001 at step 95,
    another float32 for ``warmup(1e-3, steps=100)``). ``hidden=False`` where the quotients
    reach only a sine or the word's own reciprocal (``cosine``, ``cooldown``): a float64 ulp
    moves no float32 rounding there, and vector divisions would double a compiled cosine's time.
    """

    def rounded(value: Value) -> Value:
        @functools.wraps(value)
        def computed(self: Any, step: Any) -> Any:
            with float64_scope():
                step = ops.cast(step, "float64")
                hide = hidden and not NUMPY and (xla_computes() or not concrete(step))
                one = ops.sign(ops.abs(step) + 1.0) if hide else None
                return ops.cast(value(with_lengths(self, lengths, one), step), "float32")

        return computed

    return rounded


def with_lengths(word: Any, names: tuple[str, ...], one: Any = None) -> Any:
    """``word``, or a copy whose numbers of steps ``names`` are float64 tensors: a length
    (``steps=total``) its value (``length_value()`` of
    :class:`~hyperstep.schedules.expressions.LengthNode`), a number ``number * one`` where
    ``one`` is given (a compiler folds no constant then, as none in a length)."""
    found = {}
    for name in names:
        number = vars(word)[name]
        if getattr(number, "length_expression", False):
            number = number.length_value()
        elif one is None or number is None:
            continue
        found[name] = number if one is None else number * one
    if not found:
        return word
    copy = object.__new__(type(word))
    vars(copy).update({**vars(word), **found})
    return copy


def larger(a: Any, b: Any) -> Any:
    """``max(a, b)`` of two numbers of steps: Python's for numbers, else a float64 tensor."""
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return max(a, b)
    return exact_maximum(ops.convert_to_tensor(a, "float64"), b)


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
    """``base ** exponent`` in float64 for a Python ``base > 0``: of the exact base (a Python
    float is a float64), not of its float32 rounding (off by ``p * 6e-8`` relatively)."""
    return ops.power(ops.convert_to_tensor(base, "float64"), ops.cast(exponent, "float64"))


def cosine_weight(left: Any) -> Any:
    """``(1 + cos(pi * (1 - left))) / 2``, written as ``sin(pi / 2 * left) ** 2``; where
    :func:`sine` is a polynomial, ``left`` is first taken into ``[0, 1]`` (the weight is even
    and has period 2), exactly: ``left`` itself there."""
    if not _polynomial():
        return ops.square(ops.sin(HALF_PI * left))
    left = left - 2.0 * exact_floor(left * 0.5)
    return ops.square(sine(HALF_PI * exact_minimum(left, 2.0 - left)))


#: ``(-1) ** k / (2k + 1)!``: the Taylor series of ``sin``, whose first term left out is
#: below ``(pi / 2) ** 23 / 23! < 2e-18`` on ``[0, pi / 2]``
_SINE_TERMS = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(11))


def sine(x: Any) -> Any:
    """``sin(x)`` for ``x`` in ``[0, pi / 2]`` (a float64 tensor).

    Where XLA computes (:func:`~hyperstep.backends.scopes.xla_computes`), the Taylor
    polynomial in multiplies and adds: within a few float64 ulps of ``sin``, so it rounds to
    the same float32, and it vectorizes (XLA's float64 ``sin`` costs about 3 times its
    float32 one on a CPU, and the whole of a compiled cosine word); on JAX, Keras's
    ``ops.sin`` of a float64 ``x`` is float32 (Keras 3.15). Elsewhere ``ops.sin``.
    """
    if not _polynomial():
        return ops.sin(x)
    square = x * x
    total = _SINE_TERMS[-1] * square
    for term in reversed(_SINE_TERMS[1:-1]):
        total = (total + term) * square
    return x + x * total


def _polynomial() -> bool:
    return not NUMPY and xla_computes()
