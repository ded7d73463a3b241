"""A scalar tensor that behaves like a Python float inside Keras optimizer code.

TensorFlow-specific (registers a tensor conversion function).

Keras optimizers read hyperparameters as Python floats: ``1 - self.beta_1`` is computed
in float64 when the step is traced, and only the result is rounded to float32. Returning
a float32 tensor instead would round ``beta_1`` first and change the last bit of
``1 - beta_1``, so a "scheduled" Adam with constant values would drift from Keras's.

:class:`ExactScalar` keeps a float64 tensor, does arithmetic with Python numbers (and other
ExactScalars) in float64, and is rounded to the other operand's dtype when it meets a
tensor -- exactly what Python floats do -- so constant values give bit-identical updates.
In Python-level checks that Keras makes when tracing (``if self.momentum != 0``,
``if self.clipnorm and self.clipnorm > 0``) it acts as its ``static`` number: the constant
it was built from, or, for a schedule, a positive number (``+inf``) so that Keras builds the
state a changing value needs.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from hyperstep._backend import require_tensorflow

require_tensorflow("hyperstep.optim._exact (Python-float rounding in TF graphs)")

import tensorflow as tf  # noqa: E402
from keras import ops  # noqa: E402

from hyperstep.optim._static import StaticNumber  # noqa: E402

_OPS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[float, float], float]]] = {
    "add": (ops.add, operator.add),
    "sub": (ops.subtract, operator.sub),
    "mul": (ops.multiply, operator.mul),
    "truediv": (ops.divide, operator.truediv),
    "pow": (ops.power, operator.pow),
}


class ExactScalar(StaticNumber):
    """A float64 scalar tensor with Python-float semantics (see the module docstring).

    Args:
        tensor: A float64 scalar tensor.
        static: The value Python-level comparisons see (``None`` for "a positive number").
    """

    __slots__ = ("_memo", "static", "tensor")

    def __init__(self, tensor: Any, static: float | None) -> None:
        self.tensor = tensor
        self.static = static
        self._memo: dict[Any, tuple[Any, Any]] = {}

    def memo(self, key: Any, make: Callable[[], Any]) -> Any:
        """Return ``make()``, built once per key and graph (Keras re-reads values per variable)."""
        graph = tf.compat.v1.get_default_graph()
        found = self._memo.get(key)
        if found is not None and found[0] is graph:
            return found[1]
        value = make()
        self._memo[key] = (graph, value)
        return value

    def _binary(self, other: Any, name: str, swap: bool) -> Any:
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            return self.memo((name, float(other), swap), lambda: self._compute(other, name, swap))
        if isinstance(other, ExactScalar):
            return self.memo((name, id(other), swap), lambda: self._compute(other, name, swap))
        return self._compute(other, name, swap)

    def _compute(self, other: Any, name: str, swap: bool) -> Any:
        tensor_op, python_op = _OPS[name]
        if isinstance(other, ExactScalar):
            a, b = self.tensor, other.tensor
            static = (
                None if self.static is None or other.static is None else (self.static, other.static)
            )
        elif isinstance(other, (int, float)) and not isinstance(other, bool):
            a, b = self.tensor, tf.constant(float(other), tf.float64)
            static = None if self.static is None else (self.static, float(other))
        else:  # a tensor or a variable: round to its dtype, as a Python float would be
            other = ops.convert_to_tensor(other)
            a = tf.cast(self.tensor, other.dtype)
            return tensor_op(other, a) if swap else tensor_op(a, other)
        if swap:
            a, b = b, a
            static = static[::-1] if isinstance(static, tuple) else static
        value = None
        if isinstance(static, tuple):
            try:
                value = python_op(*static)
            except (ArithmeticError, ValueError):
                value = None
        return ExactScalar(tensor_op(a, b), value)

    def __add__(self, other: Any) -> Any:
        return self._binary(other, "add", False)

    def __radd__(self, other: Any) -> Any:
        return self._binary(other, "add", True)

    def __sub__(self, other: Any) -> Any:
        return self._binary(other, "sub", False)

    def __rsub__(self, other: Any) -> Any:
        return self._binary(other, "sub", True)

    def __mul__(self, other: Any) -> Any:
        return self._binary(other, "mul", False)

    def __rmul__(self, other: Any) -> Any:
        return self._binary(other, "mul", True)

    def __truediv__(self, other: Any) -> Any:
        return self._binary(other, "truediv", False)

    def __rtruediv__(self, other: Any) -> Any:
        return self._binary(other, "truediv", True)

    def __pow__(self, other: Any) -> Any:
        return self._binary(other, "pow", False)

    def __rpow__(self, other: Any) -> Any:
        return self._binary(other, "pow", True)

    def __neg__(self) -> ExactScalar:
        return ExactScalar(-self.tensor, None if self.static is None else -self.static)

    def __abs__(self) -> ExactScalar:
        return ExactScalar(tf.abs(self.tensor), None if self.static is None else abs(self.static))

    def _compare_traced(self, other: Any, op: Callable[[Any, Any], Any]) -> Any:
        return op(tf.cast(self.tensor, ops.convert_to_tensor(other).dtype), other)

    def __float__(self) -> float:
        return float(self.tensor)

    def __repr__(self) -> str:
        return f"ExactScalar({self.tensor!r}, static={self.static!r})"


def _convert(value: ExactScalar, dtype: Any = None, name: Any = None, as_ref: bool = False) -> Any:
    """Tensor conversion: to the requested dtype, else to float32 (Keras's floatx)."""
    dtype = tf.as_dtype(dtype) if dtype is not None else tf.float32
    return value.memo(("convert", dtype), lambda: tf.cast(value.tensor, dtype))


tf.register_tensor_conversion_function(ExactScalar, _convert)
