"""The subset of ``keras.ops`` that schedules use, in NumPy: schedules without Keras.

The command line plots schedules in a process that never imports Keras (importing it
imports its backend: seconds). Before anything imports :mod:`hyperstep.schedules`, it calls
:func:`request`; the schedules then evaluate with these functions instead of
``keras.ops``, chosen once when :mod:`hyperstep.schedules` is first imported (see
``hyperstep.schedules._ops``). A process that has already imported Keras keeps
``keras.ops``: training never runs on this module.

Values are float32 like Keras's: arithmetic, ``sqrt``, ``floor`` and comparisons are IEEE
float32 operations, the same bits as TensorFlow's kernels; ``exp``, ``log``, ``sin``,
``cos`` and ``power`` are computed in float64 and rounded once to float32 (correctly rounded
almost always), where TensorFlow's float32 kernels may differ by an ulp or two. An operation
on a float64 array (the vocabulary's words compute in float64, ``cast(x, "float64")``) stays
float64, as in Keras.

Example:
    >>> import numpy as np
    >>> x = convert_to_tensor([0, 1, 2], dtype="float32")
    >>> add(multiply(x, 0.5), 1.0).tolist(), add(x, 1.0).dtype
    ([1.0, 1.5, 2.0], dtype('float32'))
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

#: whether :func:`request` asked for NumPy schedules in this process
_requested = False


def request() -> bool:
    """Ask for schedules evaluated with NumPy in this process; return whether they will be.

    Granted when :mod:`hyperstep.schedules` and Keras are not imported yet: then the
    schedules never import Keras. Otherwise (Keras is there anyway) nothing changes.
    """
    global _requested
    if "hyperstep.schedules._ops" not in sys.modules and "keras" not in sys.modules:
        _requested = True
    return selected()


def selected() -> bool:
    """Return whether schedules use this module (decided when they are first imported)."""
    chosen = getattr(sys.modules.get("hyperstep.schedules._ops"), "NUMPY", None)
    if chosen is not None:
        return bool(chosen)
    return _requested and "keras" not in sys.modules


def _wide(args: Any) -> bool:
    """Whether one of ``args`` is a float64 array (a Python float is not: it is weak)."""
    return any(getattr(a, "dtype", None) == np.float64 for a in args)


def _float32(value: Any, wide: bool = False) -> Any:
    """A float64 result as float32 (Keras keeps float32 inputs float32), unless ``wide``."""
    array = np.asarray(value)
    return array.astype(np.float32) if array.dtype == np.float64 and not wide else array


def _rounded(function: Any) -> Any:
    """``function`` computed in float64 and rounded once to float32 (:func:`_quiet`)."""

    def call(*args: Any) -> Any:
        return function(*(np.asarray(a, dtype=np.float64) for a in args))

    call.__name__ = function.__name__
    return _quiet(call)


def _quiet(function: Any) -> Any:
    """``function`` with float64 results as float32, and no floating-point warnings (like
    Keras: overflow gives inf and invalid operations nan, without a warning)."""

    def call(*args: Any) -> Any:
        with np.errstate(all="ignore"):
            return _float32(function(*args), _wide(args))

    call.__name__ = function.__name__
    return call


def convert_to_tensor(value: Any, dtype: str | None = None) -> Any:
    """``np.asarray(value, dtype)``."""
    return np.asarray(value, dtype=dtype)


def convert_to_numpy(value: Any) -> Any:
    """``np.asarray(value)``."""
    return np.asarray(value)


def cast(value: Any, dtype: str) -> Any:
    """``value`` as an array of ``dtype`` (round to nearest, like Keras)."""
    return np.asarray(value).astype(dtype)


def shape(value: Any) -> tuple[int, ...]:
    """The shape of ``value``."""
    return tuple(np.shape(value))


def full(shape: Any, fill_value: Any, dtype: str | None = None) -> Any:
    """An array of ``shape`` filled with ``fill_value``."""
    return np.full(shape, fill_value, dtype=dtype or "float32")


def full_like(value: Any, fill_value: Any, dtype: str | None = None) -> Any:
    """An array like ``value`` filled with ``fill_value``."""
    return np.full_like(value, fill_value, dtype=dtype)


def where(condition: Any, x: Any, y: Any) -> Any:
    """``x`` where ``condition`` else ``y``."""
    return _float32(np.where(condition, x, y), _wide((x, y)))


@_quiet
def clip(x: Any, low: Any, high: Any) -> Any:
    """``min(max(x, low), high)``."""
    return np.minimum(np.maximum(x, low), high)


add, subtract, multiply = _quiet(np.add), _quiet(np.subtract), _quiet(np.multiply)
divide, minimum, maximum = _quiet(np.true_divide), _quiet(np.minimum), _quiet(np.maximum)
less, less_equal = _quiet(np.less), _quiet(np.less_equal)
greater, greater_equal = _quiet(np.greater), _quiet(np.greater_equal)
equal, not_equal = _quiet(np.equal), _quiet(np.not_equal)
floor, ceil, round = _quiet(np.floor), _quiet(np.ceil), _quiet(np.round)
absolute = abs = _quiet(np.absolute)
negative, square, sqrt = _quiet(np.negative), _quiet(np.square), _quiet(np.sqrt)
exp, log, log1p = _rounded(np.exp), _rounded(np.log), _rounded(np.log1p)
sin, cos = _rounded(np.sin), _rounded(np.cos)
power = _rounded(np.power)
mod = _quiet(np.remainder)  # Python's (and TensorFlow's FloorMod): the sign of the divisor


def cond(pred: Any, true_fn: Any, false_fn: Any) -> Any:
    """``true_fn()`` if the scalar ``pred`` holds, else ``false_fn()``."""
    return true_fn() if bool(pred) else false_fn()


@_quiet
def floor_divide(x: Any, y: Any) -> Any:
    """``floor(x / y)``, as TensorFlow's FloorDiv computes it for floats."""
    return np.floor(np.true_divide(x, y))
