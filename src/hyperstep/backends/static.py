"""A traced scalar that answers Keras's Python-level checks with a static number (JAX).

Keras optimizers decide some structure with Python ``if``s on hyperparameters while the
step is traced: ``if self.momentum != 0`` (SGD), ``if self.momentum > 0`` (RMSprop). Under
``jax.jit`` a hyperparameter read from variables is a tracer, and ``bool(tracer)`` raises
``TracerBoolConversionError``. :class:`StaticScalar` wraps the traced value: arithmetic and
array conversion (``__jax_array__``) use the traced value, so run-time changes reach the
update without recompiling, while ``bool()`` and comparisons with Python numbers use
``static``: the constant the hyperparameter was built from or, for a schedule, ``+inf`` (a
positive number, so Keras builds the state a changing value needs). This is the JAX
counterpart of :class:`hyperstep.backends.tensorflow.ExactScalar` on TensorFlow.

Example:
    >>> import jax.numpy as jnp
    >>> momentum = StaticScalar(jnp.float32(0.9), static=0.9)
    >>> bool(momentum != 0), float(jnp.asarray(momentum) * 2)
    (True, 1.7999999523162842)
    >>> float(1 - StaticScalar(jnp.float32(0.25), static=None))
    0.75
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any


class StaticNumber:
    """Python truth and comparisons with numbers answered by ``static``, not by the value.

    The base of :class:`StaticScalar` (JAX) and :class:`~hyperstep.backends.tensorflow.ExactScalar`
    (TensorFlow). ``static`` is the constant a hyperparameter was built from, or ``None`` for
    a schedule, read as ``+inf`` (a positive number). A comparison with anything but a number
    compares the traced value (:meth:`_compare_traced`).
    """

    __slots__ = ()
    static: float | None

    def _number(self) -> float:
        return math.inf if self.static is None else self.static

    def _compare_traced(self, other: Any, op: Callable[[Any, Any], Any]) -> Any:
        raise NotImplementedError

    def __bool__(self) -> bool:
        return self._number() != 0

    def _compare(self, other: Any, op: Callable[[Any, Any], Any]) -> Any:
        if isinstance(other, StaticNumber):
            other = other._number()
        if isinstance(other, (int, float)):
            return op(self._number(), other)
        return self._compare_traced(other, op)

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        return self._compare(other, operator.eq)

    def __ne__(self, other: object) -> Any:  # type: ignore[override]
        return self._compare(other, operator.ne)

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, operator.lt)

    def __le__(self, other: Any) -> Any:
        return self._compare(other, operator.le)

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, operator.gt)

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, operator.ge)

    __hash__ = object.__hash__


class StaticScalar(StaticNumber):
    """A traced scalar ``value`` whose Python truth and comparisons use ``static``.

    Args:
        value: The scalar array (a JAX array or tracer).
        static: The number Python-level checks see; ``None`` for "a positive number".
    """

    __slots__ = ("static", "value")

    def __init__(self, value: Any, static: float | None) -> None:
        self.value = value
        self.static = static

    def __jax_array__(self) -> Any:
        return self.value

    # Arithmetic uses the traced value and returns plain arrays.
    def __add__(self, other: Any) -> Any:
        return self.value + _unwrap(other)

    def __radd__(self, other: Any) -> Any:
        return _unwrap(other) + self.value

    def __sub__(self, other: Any) -> Any:
        return self.value - _unwrap(other)

    def __rsub__(self, other: Any) -> Any:
        return _unwrap(other) - self.value

    def __mul__(self, other: Any) -> Any:
        return self.value * _unwrap(other)

    def __rmul__(self, other: Any) -> Any:
        return _unwrap(other) * self.value

    def __truediv__(self, other: Any) -> Any:
        return self.value / _unwrap(other)

    def __rtruediv__(self, other: Any) -> Any:
        return _unwrap(other) / self.value

    def __pow__(self, other: Any) -> Any:
        return self.value ** _unwrap(other)

    def __rpow__(self, other: Any) -> Any:
        return _unwrap(other) ** self.value

    def __neg__(self) -> Any:
        return -self.value

    def __abs__(self) -> Any:
        return abs(self.value)

    def _compare_traced(self, other: Any, op: Callable[[Any, Any], Any]) -> Any:
        return op(self.value, other)

    def __float__(self) -> float:
        return float(self.value)

    def __repr__(self) -> str:
        return f"StaticScalar({self.value!r}, static={self.static!r})"


def _unwrap(value: Any) -> Any:
    return value.value if isinstance(value, StaticScalar) else value
