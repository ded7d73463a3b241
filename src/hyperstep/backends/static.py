"""A traced scalar that answers Keras's Python-level checks with a static number (JAX),
and rounds a constant's arithmetic as Keras's Python float does.

Keras optimizers decide some structure with Python ``if``s on hyperparameters while the
step is traced (``if self.momentum != 0``), and under ``jax.jit`` a tracer's ``bool``
raises. :class:`StaticScalar` answers those with ``static`` and computes with the traced
value, so run-time changes need no recompile (JAX's counterpart of
:class:`hyperstep.backends.tensorflow.ExactScalar`).

Example:
    >>> import jax.numpy as jnp
    >>> momentum = StaticScalar(jnp.float32(0.9), static=0.9)
    >>> bool(momentum != 0), float(jnp.asarray(momentum) * 2)
    (True, 1.7999999523162842)
    >>> float(1 - StaticScalar(jnp.float32(0.25), static=None))
    0.75

    A constant's arithmetic rounds like its Python float (``exact=True``) while its value is
    the constant; another value (an override, a scale) takes float32 arithmetic:

    >>> beta_2 = StaticScalar(jnp.float32(0.999), static=0.999, exact=True)
    >>> float(jnp.asarray(1 - beta_2)) == float(jnp.float32(1 - 0.999))
    True
    >>> float(jnp.asarray(1 - beta_2)) == float(1 - jnp.float32(0.999))
    False
    >>> changed = StaticScalar(jnp.float32(0.99), static=0.999, exact=True)
    >>> float(jnp.asarray(1 - changed)) == float(1 - jnp.float32(0.99))
    True

    A schedule rounds so in its constant pieces (``where(step < 100, 0.999, ...)``):

    >>> piece = StaticScalar(jnp.float32(0.999), static=None, exact=(0.999, 0.99))
    >>> float(jnp.asarray(1 - piece)) == float(jnp.float32(1 - 0.999))
    True
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from hyperstep.backends.versions import reach


class Arithmetic:
    """Python's arithmetic operators, each ``self._binary(other, name, swap)``: the one
    operator table of :class:`StaticNumber`, TensorFlow's
    :class:`~hyperstep.backends.tensorflow.KerasRate` and :class:`hyperstep.schedules.Schedule`.
    """

    __slots__ = ()

    def _binary(self, other: Any, name: str, swap: bool) -> Any:
        """``self <name> other`` (``other <name> self`` when ``swap``); ``name`` is the
        :mod:`operator` function's: ``add``, ``sub``, ``mul``, ``truediv`` or ``pow``."""
        raise NotImplementedError

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


class StaticNumber(Arithmetic):
    """Truth and comparisons with numbers answered by ``static``; arithmetic by ``_binary``.

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

    ``exact`` lists constants whose arithmetic with a Python number rounds as Keras's Python
    float does: while ``value`` is the float32 rounding of one of them, ``c`` (a traced
    check, so a run-time change needs no retrace), ``1 - beta_2`` is ``float32(1 - c)``,
    computed in double when traced and rounded once, not ``1 - float32(c)``; otherwise the
    float32 arithmetic of ``value`` (the plain optimizer set to that float32 value computes
    the same). The first constant whose rounding ``value`` is counts. ``exact=True`` is
    ``(static,)``: a constant hyperparameter; a schedule's constants are the pieces of its
    ``where`` (:func:`hyperstep.control.value_forms.constant_pieces`), so that a schedule
    that is the constant ``0.9`` before step 100 rounds there as the constant ``0.9`` does.
    (For a constant that is a float32 number, as a replayed override is, and a Python number
    float32 holds exactly, such as Keras's ``1``, the two roundings are the same number.)
    The result is a plain array (Keras computes ``1 - beta`` once and hands it on, also to
    functions that take arrays only, such as ``jnp.clip``).

    Args:
        value: The scalar array (a JAX array or tracer).
        static: The number Python-level checks see; ``None`` for "a positive number".
        exact: The constants whose arithmetic with numbers rounds like their Python floats
            (``True``: ``static``'s; ``False`` or empty: none).
    """

    __slots__ = ("_checks", "_exact", "_memo", "static", "value")

    def __init__(self, value: Any, static: float | None, *, exact: Any = False) -> None:
        if not _REGISTERED:  # a weak scalar type with JAX, as Python's float is: `jnp.asarray`
            # of one (Keras's `convert_to_tensor` of a hyperparameter) keeps its weak type
            register = reach(_WEAK_TYPES, fallback=None)
            if register is not None:
                register(StaticScalar)
            _REGISTERED.append(True)
        self.value = value
        self.static = static
        if exact is True:
            exact = () if static is None else (static,)
        self._exact: tuple[float, ...] = tuple(exact or ())
        self._checks: list[tuple[float, Any]] | None = None  # made when first needed
        self._memo: dict[Any, Any] = {}

    def __jax_array__(self) -> Any:
        return weak(self.value)

    def _traced_checks(self) -> list[tuple[float, Any]]:
        """``(c, "value is c's float32")`` for each constant of ``exact`` within range."""
        if self._checks is None:
            checks = []
            for constant in self._exact:
                rounded = _rounded(constant, self.value.dtype)
                if rounded is not None:
                    checks.append((constant, self.value == rounded))
            self._checks = checks
        return self._checks

    def _binary(self, other: Any, name: str, swap: bool) -> Any:
        python_op = _OPS[name]
        theirs = other.value if isinstance(other, StaticScalar) else other
        mine = weak(self.value)  # promoted as a Python float is: to the other's dtype
        checks = self._traced_checks() if self._exact else []
        if not checks or not isinstance(other, (int, float)) or isinstance(other, bool):
            # a tensor (what a Python float becomes in it is `value`), or not exact
            return python_op(theirs, mine) if swap else python_op(mine, theirs)
        key = (name, swap, float(other))
        found = self._memo.get(key)  # Keras computes `1 - beta_1` once per variable
        if found is not None:
            return found
        import jax.numpy as jnp

        plain = python_op(theirs, mine) if swap else python_op(mine, theirs)
        result = plain
        for constant, check in reversed(checks):  # the first constant that matches counts
            x, y = (float(other), constant) if swap else (constant, float(other))
            try:
                exact = python_op(x, y)
            except (ArithmeticError, ValueError):
                continue
            rounded = _rounded(exact, plain.dtype) if isinstance(exact, (int, float)) else None
            if rounded is None:  # complex, or beyond the dtype's range: the traced arithmetic
                continue
            result = jnp.where(check, rounded, result)
        # a plain array: Keras hands results to functions that take arrays only (jnp.clip)
        result = weak(result)
        self._memo[key] = result
        return result

    def __neg__(self) -> Any:
        return -weak(self.value)  # exact, as a Python float's

    def __abs__(self) -> Any:
        return abs(weak(self.value))

    def _compare_traced(self, other: Any, op: Callable[[Any, Any], Any]) -> Any:
        return op(weak(self.value), other)

    def __float__(self) -> float:
        return float(self.value)

    def __repr__(self) -> str:
        return f"StaticScalar({self.value!r}, static={self.static!r})"


_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "pow": operator.pow,
}


def _rounded(number: float, dtype: Any) -> Any:
    """``number`` rounded once to ``dtype`` (a NumPy scalar), or ``None`` beyond its range."""
    import numpy as np

    if math.isfinite(number) and abs(number) > float(np.finfo(dtype).max):
        return None
    return np.asarray(number, dtype=dtype)[()]


def weak(value: Any) -> Any:
    """``value`` as a weakly typed JAX array (as ``jnp.asarray`` makes of a Python float):
    in arithmetic with an array it takes that array's dtype (a float16 variable's update
    stays float16, as with Keras's Python floats). Through JAX's private
    ``_convert_element_type`` (:data:`~hyperstep.backends.versions.PRIVATE_APIS`)."""
    convert = reach(_WEAK, fallback=None)
    aval = getattr(value, "aval", None)  # an array's or a tracer's
    if convert is None or aval is None or aval.weak_type:
        return value
    return convert(value, value.dtype, weak_type=True)


_WEAK = "jax._src.lax.lax._convert_element_type"
_REGISTERED: list[bool] = []
_WEAK_TYPES = "jax._src.dtypes.register_weak_scalar_type"
