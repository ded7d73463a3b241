"""The :class:`Schedule` base class: a pure function of the step, with arithmetic and config.

A schedule maps the step (the number of updates already applied) to a float32 value:
``value(step)``. It is built from ``keras.ops`` only, so it runs eagerly, inside
``tf.function``/``jax.jit``, inside ``fit()`` and on a whole array of steps at once.

Every schedule is a Keras ``LearningRateSchedule``: any Keras optimizer accepts one as its
``learning_rate``. Its constructor arguments are its config (``get_config``/``from_config``
round-trip through JSON) and its ``repr`` is an expression that ``hs.parse`` reads back.

Subclasses implement ``value(step)`` (``step`` is a float32 tensor), keep each constructor
argument in the attribute of its name (``value`` in ``value_``; or override ``arguments()``);
everything else is generic.
Arithmetic on schedules builds the expression nodes of :mod:`hyperstep.schedules.expressions`
(``BinaryOp``, ``Negate``, ``Function``), found by their keyword among the classes
:func:`register` has recorded.
"""

from __future__ import annotations

import inspect
import math
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from hyperstep.backends.internals import naming_loaded_file
from hyperstep.backends.static import Arithmetic
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.schedules._ops import NUMPY, ops

_Base: Any = object  # a process without Keras (the command line's plot): plain classes
if not NUMPY:
    import keras

    _Base = keras.optimizers.schedules.LearningRateSchedule

PACKAGE = "hyperstep"
#: the deepest nesting of schedules a config or an expression (``hs.parse``) may hold
MAX_DEPTH = 100
Number = int | float
ScheduleLike = Any  # a number, a Schedule, a Keras LearningRateSchedule or an expression string


#: every schedule class :func:`register` has seen, by its ``keyword``: the language's
#: vocabulary and the nodes arithmetic builds (:mod:`hyperstep.schedules` imports them all)
CLASSES: dict[str, type[Schedule]] = {}

#: how :func:`~hyperstep.schedules.expressions.as_schedule` reads what is neither a number nor
#: a schedule: ``(type, reader)`` pairs, added by ``language`` (text) and ``keras_compat``
READERS: list[tuple[type, Callable[[Any], Schedule]]] = []


def register(cls: type) -> type:
    """Record a schedule class under its ``keyword`` and register it for Keras serialization
    under the ``hyperstep`` package (``"hyperstep>Cosine"``)."""
    keyword = getattr(cls, "keyword", "")
    if keyword:
        CLASSES.setdefault(keyword, cls)
    if NUMPY:
        return cls
    return keras.saving.register_keras_serializable(package=PACKAGE)(cls)


#: each arithmetic operator's symbol, by its :mod:`operator` name (``Arithmetic``'s)
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "pow": "**"}


class Schedule(Arithmetic, _Base):  # type: ignore[misc]
    """A pure, vectorized, serializable function of the step.

    ``schedule(step)`` accepts a Python number, a NumPy array or a backend tensor of any
    integer or float dtype and returns float32 values of the same shape. Steps are
    converted to float32, so integers above 2**24 = 16,777,216 are rounded (as in Keras).
    """

    #: the name in the expression language (``cosine``, ``warmup``, ...)
    keyword: ClassVar[str] = ""
    #: how many leading arguments ``repr`` writes positionally
    positional: ClassVar[int] = 0

    def __call__(self, step: Any) -> Any:
        if step is None or isinstance(step, (str, bytes, bool, dict)):
            raise InvalidTypeError(
                f"A schedule takes a step: a number, an array or a tensor of steps. "
                f"{received('step', step)}"
            )
        if isinstance(step, (int, float)):
            # a Python number: through a Python float (exact up to 2**53), no NumPy, so that
            # torch.compile traces it; an int beyond int32 (JAX's default) still works
            return self.value(ops.convert_to_tensor(float(step), "float32"))
        if isinstance(step, (list, tuple, np.ndarray, np.number)):
            # to float32 on the host: a NumPy int beyond int32 (JAX's default integer)
            # reaches every backend, rounded as a cast would round it
            step = np.asarray(step).astype(np.float32)
        return self.value(ops.cast(ops.convert_to_tensor(step), "float32"))

    def value(self, step: Any) -> Any:
        """Return the schedule at ``step``, a float32 tensor of any shape."""
        raise NotImplementedError

    def arguments(self) -> dict[str, Any]:
        """Return the constructor keyword arguments that rebuild this schedule, in signature
        order: by default each parameter's attribute of the same name (``value``'s is
        ``value_``: ``value`` is the method)."""
        names = _parameters(type(self))
        return {name: getattr(self, "value_" if name == "value" else name) for name in names}

    # ---- config -------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        return {key: _serialize(value) for key, value in self.arguments().items()}

    @classmethod
    @naming_loaded_file()
    def from_config(cls, config: Mapping[str, Any]) -> Schedule:
        valid = list(_parameters(cls))
        unknown = sorted(set(config) - set(valid))
        if unknown:
            raise InvalidArgumentError(
                f"A {cls.__name__} config has unknown fields {unknown}; its fields are "
                f"{sorted(valid)}. Received: config={dict(config)!r}"
            )
        if _LOADING.depth == 0:  # the outermost config: its nesting is checked once
            depth = 1 + _config_depth(config)
            if depth > MAX_DEPTH:
                raise InvalidArgumentError(
                    f"A schedule config nests {depth} schedules deep; at most {MAX_DEPTH} "
                    f"levels are accepted (as in hs.parse). Received: config of a "
                    f"{cls.__name__} nested {depth} levels"
                )
        _LOADING.depth += 1
        try:
            return cls(**{key: _deserialize(value) for key, value in config.items()})
        finally:
            _LOADING.depth -= 1

    def children(self) -> list[Schedule]:
        """Return the schedules this one is built from (for tree walks)."""
        found: list[Schedule] = []
        for value in self.arguments().values():
            if isinstance(value, Schedule):
                found.append(value)
            elif isinstance(value, (list, tuple)):
                found.extend(v for v in value if isinstance(v, Schedule))
        return found

    def replace(self, fn: Callable[[Schedule], Schedule | None]) -> Schedule:
        """Return a copy with every node ``n`` for which ``fn(n)`` is not None replaced.

        The tree is rebuilt bottom-up; nodes ``fn`` leaves alone are rebuilt from their
        (possibly replaced) arguments.
        """
        replaced = fn(self)
        if replaced is not None:
            return replaced

        def walk(value: Any) -> Any:
            if isinstance(value, Schedule):
                return value.replace(fn)
            if isinstance(value, list):
                return [walk(v) for v in value]
            if isinstance(value, tuple):
                return tuple(walk(v) for v in value)
            return value

        if not self.children():
            return self
        return type(self)(**{key: walk(value) for key, value in self.arguments().items()})

    @property
    def natural_steps(self) -> int | float | None:
        """The step from which the schedule has reached its end, or None if it has none.

        ``cosine(1e-3, steps=9000)`` has 9000; ``warmup(s, steps=W)`` has ``W`` plus that of
        ``s``; arithmetic and functions take the largest of their operands'; a schedule that
        never ends (``step``, ``exponential``, ``inverse_sqrt``) has None. ``hyperstep plot``
        uses it when ``--steps`` is not given.
        """
        found = [n for n in (c.natural_steps for c in self.children()) if n is not None]
        return max(found) if found else None

    # ---- repr ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        args = self.arguments()
        defaults = _defaults(type(self))
        parts: list[str] = []
        for index, (key, value) in enumerate(args.items()):
            if index < self.positional:
                parts.append(format_value(value))
            elif key not in defaults or not _same(defaults[key], value):
                parts.append(f"{key}={format_value(value)}")
        return f"{self.keyword}({', '.join(parts)})"

    #: binding strength of the top-level operator of ``repr`` (atoms bind tightest)
    precedence: ClassVar[int] = 100

    # ---- arithmetic ---------------------------------------------------------------------
    def _binary(self, other: ScheduleLike, name: str, swap: bool) -> Schedule:
        """``self <op> other`` (``other <op> self`` when ``swap``) as an expression node."""
        operands = (other, self) if swap else (self, other)
        return CLASSES["binary"](_SYMBOLS[name], *operands)  # type: ignore[call-arg]

    def __neg__(self) -> Schedule:
        return CLASSES["negate"](self)  # type: ignore[call-arg]

    def clip(self, low: ScheduleLike = None, high: ScheduleLike = None) -> Schedule:
        """Return ``min(max(self, low), high)``; either bound may be omitted."""
        if low is None and high is None:
            raise InvalidArgumentError(
                "`clip(...)` needs `low`, `high` or both. Received: low=None, high=None."
            )
        if low is None:
            return CLASSES["function"]("min", [self, high])  # type: ignore[call-arg]
        if high is None:
            return CLASSES["function"]("max", [self, low])  # type: ignore[call-arg]
        return CLASSES["function"]("clip", [self, low, high])  # type: ignore[call-arg]

    def _inline(self) -> str:
        """``repr`` as another schedule's argument (a constant writes its bare number)."""
        return repr(self)


def as_float(owner: str, name: str, value: Any) -> float:
    """``float(value)``, or raise naming ``owner(name=...)`` for an integer beyond any float
    (a file's ``10**400``, where ``float`` raises ``OverflowError``)."""
    if isinstance(value, int) and abs(value) > sys.float_info.max:
        raise InvalidArgumentError(
            f"`{owner}({name}=...)` is beyond float32's range (|x| <= 3.4028235e38), in which "
            f"values are computed. Received: {name}=a {len(str(abs(value)))}-digit integer"
        )
    return float(value)


def check_number(owner: str, name: str, value: Any) -> float:
    """Return ``value`` as a finite float, or raise naming ``owner(name=...)`` and the value."""
    if not is_number(value):
        raise InvalidTypeError(f"`{owner}({name}=...)` must be a number. {received(name, value)}")
    number = as_float(owner, name, value)
    if not math.isfinite(number):
        raise InvalidArgumentError(
            f"`{owner}({name}=...)` must be a finite number. {received(name, value)}"
        )
    if abs(number) > FLOAT32_MAX:
        raise InvalidArgumentError(
            f"`{owner}({name}=...)` is beyond float32's range (|x| <= 3.4028235e38), in which "
            f"values are computed: it would be inf. {received(name, value)}"
        )
    return number


#: the largest float that stays finite in float32: the largest finite float32 is
#: 3.4028234663852886e38, and values up to half an ulp above it round to it, not to inf
FLOAT32_MAX = 3.4028235677973362e38


def check_positive_int(owner: str, name: str, value: Any) -> int:
    """Return ``value`` as an int > 0, or raise naming ``owner(name=...)`` and the value."""
    if not is_number(value):
        raise InvalidTypeError(
            f"`{owner}({name}=...)` must be a positive integer. {received(name, value)}"
        )
    number = float(value)
    if not math.isfinite(number) or number != int(number) or number <= 0:
        raise InvalidArgumentError(
            f"`{owner}({name}=...)` must be a positive integer. {received(name, value)}"
        )
    return int(number)


def format_value(value: Any) -> str:
    """Format an argument for ``repr``: numbers exactly, schedules inline, lists of either."""
    if isinstance(value, Schedule):
        return value._inline()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return repr(value)


def is_number(value: Any) -> bool:
    """Whether ``value`` is a Python or NumPy scalar number (not a bool)."""
    if isinstance(value, np.generic):
        return np.issubdtype(type(value), np.number)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


#: each schedule class's constructor parameters, by class (``inspect.signature`` is slow)
_PARAMETERS: dict[type, Mapping[str, inspect.Parameter]] = {}


def _parameters(cls: type) -> Mapping[str, inspect.Parameter]:
    """The constructor's parameters of a schedule class, read once."""
    if cls not in _PARAMETERS:
        _PARAMETERS[cls] = inspect.signature(cls).parameters
    return _PARAMETERS[cls]


def _defaults(cls: type) -> dict[str, Any]:
    parameters = _parameters(cls).items()
    return {key: p.default for key, p in parameters if p.default is not inspect.Parameter.empty}


def _same(a: Any, b: Any) -> bool:
    return bool(type(a) is type(b) and a == b) or (
        isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b
    )


def _serialize(value: Any) -> Any:
    if isinstance(value, _Base) and _Base is not object:
        return keras.saving.serialize_keras_object(value)
    if isinstance(value, (list, tuple)):
        return [_serialize(v) for v in value]
    return value


class _Loading(threading.local):
    depth = 0  # from_config calls running in this thread


_LOADING = _Loading()


def _config_depth(config: Any) -> int:
    """How many schedule configs (dicts with a ``class_name``) nest inside ``config``."""
    deepest, stack = 0, [(config, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping):
            depth += "class_name" in value
            deepest = max(deepest, depth)
            stack.extend((v, depth) for v in value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend((v, depth) for v in value)
    return deepest


def _deserialize(value: Any) -> Any:
    if isinstance(value, dict) and "class_name" in value and "config" in value and not NUMPY:
        return keras.saving.deserialize_keras_object(value)
    if isinstance(value, list):
        return [_deserialize(v) for v in value]
    return value
