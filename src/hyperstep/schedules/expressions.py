"""The expression nodes: the leaves ``constant``, ``step``, ``epoch`` and ``total``, arithmetic
(``BinaryOp``, ``Chain``, ``Negate``) and the functions (``Function``) of schedules.

``Step() / 1000 + 0.01`` is ``BinaryOp("+", BinaryOp("/", Step(), 1000.0), 0.01)``; each
node's ``repr`` is the expression ``hs.parse`` reads back. :func:`as_schedule` turns anything
schedule-like into a node.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

from hyperstep import backends
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.schedules._ops import NUMPY, float64_scope, ops
from hyperstep.schedules.base import (
    READERS,
    Number,
    Schedule,
    ScheduleLike,
    check_number,
    check_positive_int,
    format_value,
    is_number,
    register,
)
from hyperstep.schedules.exact import (
    exact_ceil,
    exact_floor,
    exact_maximum,
    exact_minimum,
    in_float64,
)


class LengthNode:
    """A node that may be a length (an expression of ``total`` without the step): the words
    compute with :meth:`length_value` (:func:`hyperstep.schedules.exact.rounded_once`)."""

    #: whether this node is a length (set by each node from :func:`is_length`)
    length_expression: bool = False
    #: the number a tree of constants computes, folded in float64 (see :func:`folded`)
    _fold: float | None = None

    def length_value(self) -> Any:
        """This length as a float64 scalar tensor: each operation in float64 as Python
        rounds it (within ``float64_scope``: JAX without x64 too).

        Its numbers enter as ``number * sign(total)``: no operation has a constant operand, so
        no compiler rewrites ``7 * total / 10`` as ``total * (7 * (1 / 10))`` (Grappler and XLA
        do with constants: 700.0000000000001 for a total of 1000, where Python gives 700.0)."""
        with float64_scope():
            node: Any = self
            while not isinstance(node, Total):  # a length reads total: its first one
                node = next(child for child in node.children() if uses_total(child))
            one = ops.sign(node.length())
            return _float64_length(self, one)  # type: ignore[arg-type]

    def value(self, step: Any) -> Any:
        """The folded number, the length (as Python folds the number, rounded once to
        float32), else :meth:`computed`."""
        if self._fold is not None:
            return _constant_with_sign(self._fold, math.copysign(1.0, self._fold)).value(step)
        if self.length_expression:  # `0.9 * total`: as Python folds the number
            with float64_scope():
                return ops.cast(self.length_value(), "float32") + ops.zeros_like(step)
        return self.computed(step)  # type: ignore[attr-defined]  # an operation's value


# ---- leaves ----------------------------------------------------------------------------
@register
class Constant(Schedule):
    """A schedule that does not change.

    ``value(step) = value``

    Args:
        value: The value at every step (a finite number).

    Example:
        >>> s = Constant(0.1)
        >>> [round(float(v), 6) for v in s([0, 10, 10**9])]
        [0.1, 0.1, 0.1]
    """

    keyword = "constant"
    positional = 1

    def __init__(self, value: Number) -> None:
        self.value_ = check_number("constant", "value", value)

    def value(self, step: Any) -> Any:
        # torch: the same tensor as ops.full without its ~15 us of Python (hyperstep.backends)
        found = None if NUMPY else backends.full_float32(step, self.value_)
        return found if found is not None else ops.full(ops.shape(step), self.value_, "float32")

    def _inline(self) -> str:
        return format_value(self.value_)


@register
class Step(Schedule):
    """The step itself, as a float32: ``value(step) = step``.

    Example:
        >>> [float(v) for v in Step()([0, 1, 5])]
        [0.0, 1.0, 5.0]
    """

    keyword = "step"

    def value(self, step: Any) -> Any:
        return step

    def __repr__(self) -> str:
        return "step"


@register
class Epoch(Schedule):
    """The epoch: ``value(step) = floor(step / steps_per_epoch)``.

    Built unbound by ``hs.parse("... epoch ...")``; a :class:`hyperstep.Clock` that knows
    ``steps_per_epoch`` binds it (see :func:`bind_epochs`). Evaluating an unbound epoch
    raises an error that says how to bind it.

    Args:
        steps_per_epoch: Updates per epoch (a positive integer), or ``None`` for unbound.

    Example:
        >>> [float(v) for v in Epoch(100)([0, 99, 100, 250])]
        [0.0, 0.0, 1.0, 2.0]
    """

    keyword = "epoch"

    def __init__(self, steps_per_epoch: int | None = None) -> None:
        if steps_per_epoch is not None:
            steps_per_epoch = check_positive_int("epoch", "steps_per_epoch", steps_per_epoch)
        self.steps_per_epoch = steps_per_epoch

    def value(self, step: Any) -> Any:
        if self.steps_per_epoch is None:
            raise InvalidArgumentError(
                "This schedule uses `epoch` but does not know how many steps an epoch has. "
                "Pass `steps_per_epoch=` to `hs.parse(...)`, to `hs.Clock(...)`, or call "
                "`hs.schedules.bind_epochs(schedule, steps_per_epoch)`. "
                + received("steps_per_epoch", None)
            )
        return ops.floor(step / float(self.steps_per_epoch))

    def __repr__(self) -> str:
        if self.steps_per_epoch is None:
            return "epoch"
        return f"floor(step / {float(self.steps_per_epoch)!r})"  # what parse reads back


def bind_epochs(schedule: Schedule, steps_per_epoch: int) -> Schedule:
    """Return ``schedule`` with every unbound ``epoch`` counting ``steps_per_epoch`` steps.

    Example:
        >>> s = bind_epochs(0.1 * 0.5 ** Epoch(), 10)
        >>> [round(float(v), 4) for v in s([0, 9, 10, 25])]
        [0.1, 0.1, 0.05, 0.025]
    """
    check_positive_int("bind_epochs", "steps_per_epoch", steps_per_epoch)

    def bind(node: Schedule) -> Schedule | None:
        if isinstance(node, Epoch) and node.steps_per_epoch is None:
            return Epoch(steps_per_epoch)
        return None

    return schedule.replace(bind)


def uses_epoch(schedule: Schedule) -> bool:
    """Return whether ``schedule`` contains an unbound ``epoch``."""
    if isinstance(schedule, Epoch):
        return schedule.steps_per_epoch is None
    return any(uses_epoch(child) for child in schedule.children())


@register
class Total(LengthNode, Schedule):
    """The run's length, ``clock.total`` (the number of training iterations in the run).

    ``value(step) = total``; ``progress`` is ``step / total``. It goes wherever a number goes,
    in expressions and as a length argument of every word (``cosine(3e-4, steps=total)``,
    ``warmup(cosine(1e-3, steps=0.9 * total), steps=0.1 * total)``). A schedule keeps the
    symbol (``repr`` and ``get_config``), so a saved one follows the run it is loaded into.

    A :class:`hyperstep.Hyperparameter` reads it from its clock (``model.fit`` binds
    ``clock.total`` to ``epochs`` x steps per epoch); :func:`bind_total` gives the schedule
    written with a number. Read without either, it raises an error that says how to bind it.

    Args:
        clock: The :class:`hyperstep.Clock` to read ``total`` from (set by a hyperparameter;
            ``None`` for the symbol).

    Example:
        >>> from hyperstep.schedules import cosine
        >>> s = bind_total(cosine(1.0, steps=Total()), 100)
        >>> s, [round(float(v), 6) for v in s([0, 50, 100])]
        (cosine(1.0, steps=100), [1.0, 0.5, 0.0])
    """

    keyword = "total"
    length_expression = True

    def __init__(self, clock: Any = None) -> None:
        self.clock = clock

    def length(self) -> Any:
        """``total`` as a float64 scalar tensor (read in :func:`length_value`)."""
        variable = None if self.clock is None else self.clock.total_steps
        if variable is None or (backends.concrete(variable.value) and int(variable.numpy()) <= 0):
            raise InvalidArgumentError(UNBOUND_TOTAL + received("total", None))
        return ops.cast(variable.value, "float64")

    def arguments(self) -> dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        return "total"


#: the refusal of a schedule that reads ``total`` where no length is known
UNBOUND_TOTAL = (
    "This schedule reads `total`, the run's length, but no length is known. `model.fit` "
    "binds it from `epochs` and the steps per epoch: pass `steps_per_epoch=` to fit where "
    "the data has no known length; in a custom loop set `clock.total = n` (or "
    "`hs.Clock(total=n)`); for a pure schedule use `hs.schedules.bind_total(schedule, n)`. "
)

#: the operators and functions a length (an expression of ``total`` without the step) may
#: use: those IEEE 754 rounds exactly, so it equals the number Python folds for a given total
_LENGTH_OPS = frozenset({"+", "-", "*", "/"})
_LENGTH_FUNCTIONS = frozenset({"min", "max", "floor", "ceil", "abs"})


def uses_total(schedule: Schedule) -> bool:
    """Return whether ``schedule`` reads ``total`` (in an expression or an argument)."""
    if isinstance(schedule, Total):
        return True
    return any(uses_total(child) for child in schedule.children())


def bind_total(schedule: Schedule, total: int) -> Schedule:
    """Return ``schedule`` written with ``total`` steps: every ``total`` becomes the number.

    Each length (``0.9 * total``) is folded in float64 as Python computes it, so the result
    is the schedule written by hand with that number (its ``repr`` shows it). A length its
    word refuses (``steps=total - 200`` at 100) raises, naming the schedule and ``total``:
    ``model.fit`` and steering's ``schedule`` bind this way before any step.

    Example:
        >>> from hyperstep.schedules import cosine, warmup
        >>> bind_total(warmup(cosine(1e-3, steps=0.9 * Total()), steps=0.1 * Total()), 1000)
        warmup(cosine(0.001, steps=900), steps=100)
    """
    total = check_positive_int("bind_total", "total", total)

    def bind(node: Schedule) -> Schedule | None:
        return Constant(float(total)) if isinstance(node, Total) else None

    try:
        return schedule.replace(bind)
    except InvalidArgumentError as error:
        raise InvalidArgumentError(
            f"`{schedule!r}` with the run's length `total` = {total}: {error}. Bind a "
            "longer run (`clock.total = n`, or `epochs=` and `steps_per_epoch=` in `fit`), or "
            f"write the length so that it stays valid (`max(total - 200, 1)`). Received: "
            f"total={total}"
        ) from None


def is_length(schedule: Any) -> bool:
    """Whether ``schedule`` is a length: an expression of ``total`` and numbers only."""
    if not isinstance(schedule, Schedule) or folded(schedule) is not None:
        return False
    return uses_total(schedule) and _length_nodes(schedule)


def _length_nodes(schedule: Schedule) -> bool:
    if isinstance(schedule, (Total, Constant)):
        return True
    if isinstance(schedule, BinaryOp) and schedule.op in _LENGTH_OPS:
        return _length_nodes(schedule.left) and _length_nodes(schedule.right)
    if isinstance(schedule, Negate):
        return _length_nodes(schedule.operand)
    if isinstance(schedule, Function) and schedule.name in _LENGTH_FUNCTIONS:
        return all(_length_nodes(a) for a in schedule.args)
    return False


def check_length(owner: str, name: str, value: Schedule) -> Schedule:
    """Return the length ``value``, or raise naming ``owner(name=...)``: a number of steps may
    be an expression of ``total`` with ``+ - * /`` and ``min, max, floor, ceil, abs``."""
    if not is_length(value):
        raise InvalidArgumentError(
            f"`{owner}({name}=...)` must be a number of steps: a number, or an expression of "
            "`total` with numbers, + - * / and min, max, floor, ceil, abs (computed exactly, "
            f"as Python computes the number), such as `0.9 * total`. {received(name, value)}"
        )
    return value


def _float64_length(schedule: Schedule, one: Any) -> Any:
    if isinstance(schedule, Total):
        return schedule.length()
    if isinstance(schedule, Constant):
        return ops.convert_to_tensor(schedule.value_, "float64") * one
    if isinstance(schedule, Negate):
        return ops.negative(_float64_length(schedule.operand, one))
    if isinstance(schedule, BinaryOp):
        left, right = (_float64_length(s, one) for s in (schedule.left, schedule.right))
        return _BINARY[schedule.op][1](left, right)
    args = [_float64_length(a, one) for a in schedule.args]
    functions: dict[str, Callable[..., Any]] = {
        "min": exact_minimum,
        "max": exact_maximum,
        "floor": exact_floor,
        "ceil": exact_ceil,
        "abs": lambda x: ops.where(ops.less(x, 0.0), -x, x),
    }
    return functions[schedule.name](*args)


# ---- arithmetic nodes ------------------------------------------------------------------
Operation = tuple[int, Callable[[Any, Any], Any], Callable[[float, float], Any]]


def _comparison(compare: Callable[[Any, Any], Any], python: Callable[[Any, Any], Any]) -> Operation:
    """A comparison's row: 1.0 where it holds, else 0.0, on tensors and on Python floats."""
    return (10, lambda a, b: ops.cast(compare(a, b), "float32"), lambda a, b: float(python(a, b)))


#: the operators: symbol -> (precedence, on tensors, on Python floats to fold constant
#: sub-expressions in float64)
_BINARY: dict[str, Operation] = {
    "<": _comparison(ops.less, operator.lt),
    "<=": _comparison(ops.less_equal, operator.le),
    ">": _comparison(ops.greater, operator.gt),
    ">=": _comparison(ops.greater_equal, operator.ge),
    "==": _comparison(ops.equal, operator.eq),
    "!=": _comparison(ops.not_equal, operator.ne),
    "+": (20, ops.add, operator.add),
    "-": (20, ops.subtract, operator.sub),
    "*": (30, lambda a, b: in_float64(ops.multiply, a, b), operator.mul),  # exact compiled too
    "/": (30, lambda a, b: in_float64(ops.divide, a, b), operator.truediv),
    "//": (30, ops.floor_divide, operator.floordiv),  # Python's: floor(a / b), also for a < 0
    "%": (30, ops.mod, operator.mod),  # Python's: a - b * floor(a / b), the sign of b
    "**": (50, ops.power, operator.pow),
}


def folded(schedule: Schedule) -> float | None:
    """The number a tree of constants computes, folded in float64; None if it uses the step."""
    if isinstance(schedule, Constant):
        return schedule.value_
    return getattr(schedule, "_fold", None)


@functools.lru_cache(maxsize=1024)
def _constant_with_sign(value: float, sign: float) -> Constant:
    """``Constant(value)``, built once per value (``sign``: that of zero kept apart)."""
    # a folded intermediate may exceed float32 (1e30 * 1e30 inside 1e30 * 1e30 / 1e50):
    # built without the constructor's range check
    constant = Constant(0.0)
    constant.value_ = value
    return constant


def _fold_with(
    function: Callable[..., Any],
    args: Sequence[Schedule],
    label: Callable[[], str] | None = None,
) -> float | None:
    """``function(*numbers)`` in Python float64 when every argument is constant, else None.

    Constant sub-expressions such as ``(0.001 - 1e-05) / (15 - 1)`` are computed once in
    float64 and rounded to float32 once, as Python computes them in a hand-written
    schedule, instead of rounding every intermediate result to float32.
    """
    numbers = [folded(a) for a in args]
    if any(n is None for n in numbers):
        return None
    try:
        result = function(*numbers)
    except (ArithmeticError, ValueError) as error:  # 1 / 0, log(0), 10.0 ** 400
        if label is None or not all(math.isfinite(n) for n in numbers):  # type: ignore[arg-type]
            return None
        raise InvalidArgumentError(
            f"`{label()}` has no finite value ({type(error).__name__}: {error}): it would be "
            f"inf or nan at every step. Received: {', '.join(map(repr, numbers))}"
        ) from None
    except TypeError:
        return None
    if isinstance(result, complex) and label is not None:
        raise InvalidArgumentError(
            f"`{label()}` is not a real number ({result!r}): it would be nan at every step. "
            f"Received: {', '.join(map(repr, numbers))}"
        )
    if isinstance(result, bool) or not isinstance(result, (int, float)):
        return None
    result = float(result)
    return result if math.isfinite(result) else None


@register
class BinaryOp(LengthNode, Schedule):
    """``left OP right`` for OP in ``+ - * / // % **`` and the comparisons (1.0 true, 0.0 false).

    ``//`` and ``%`` follow Python (``-7 % 3 == 2``, ``-7 // 3 == -3``). A constant
    sub-expression is computed in float64 and rounded to float32 once.

    Example:
        >>> s = Step() / 1000 + 0.01
        >>> s
        step / 1000.0 + 0.01
        >>> [round(float(v), 4) for v in s([0, 500, 1000])]
        [0.01, 0.51, 1.01]
    """

    keyword = "binary"

    def __init__(self, op: str, left: ScheduleLike, right: ScheduleLike) -> None:
        if op not in _BINARY:
            raise InvalidArgumentError(
                f"`BinaryOp(op=...)` must be one of {sorted(_BINARY)}. {received('op', op)}"
            )
        self.op = op
        self.left = as_schedule(left, name="left")
        self.right = as_schedule(right, name="right")
        self.precedence = _BINARY[op][0]  # type: ignore[misc]
        self._fold = _fold_with(_BINARY[op][2], [self.left, self.right], lambda: repr(self))
        self.length_expression = is_length(self)

    def computed(self, step: Any) -> Any:
        return _BINARY[self.op][1](self.left.value(step), self.right.value(step))

    def __repr__(self) -> str:
        p = self.precedence
        if self.op == "**":  # right-associative, and binds tighter than unary minus on its left
            left = _wrap(self.left, p + 1)
            right = _wrap(self.right, 45)
        else:
            left = _wrap(self.left, p if p != 10 else p + 1)
            right = _wrap(self.right, p + 1)
        return f"{left} {self.op} {right}"


@register
class Chain(Schedule):
    """A comparison chain ``a < b <= c``: 1.0 where every comparison holds, else 0.0.

    ``value(step) = (a < b) * (b <= c) * ...`` with each operand evaluated once (as Python
    evaluates a chain), so a chain costs time linear in its size.

    Example:
        >>> s = Chain(["<", "<="], [10, Step(), 20])
        >>> s, [float(v) for v in s([5, 15, 20, 25])]
        (10.0 < step <= 20.0, [0.0, 1.0, 1.0, 0.0])
    """

    keyword = "chain"
    precedence = 10

    def __init__(self, comparisons: Sequence[str], operands: Sequence[ScheduleLike]) -> None:
        valid = [op for op, (p, _, _) in _BINARY.items() if p == 10]
        if isinstance(comparisons, str) or not all(op in valid for op in comparisons):
            raise InvalidArgumentError(
                f"`Chain(comparisons=...)` must be a list of {valid}. "
                f"{received('comparisons', comparisons)}"
            )
        if len(operands) != len(comparisons) + 1 or len(comparisons) < 1:
            raise InvalidArgumentError(
                "`Chain(operands=...)` needs one operand more than comparisons. "
                f"Received: comparisons={list(comparisons)}, {len(operands)} operands"
            )
        self.comparisons = list(comparisons)
        self.operands = [as_schedule(o, name=f"operands[{i}]") for i, o in enumerate(operands)]

    def value(self, step: Any) -> Any:
        values = [operand.value(step) for operand in self.operands]
        result = None
        for op, left, right in zip(self.comparisons, values, values[1:], strict=False):
            term = _BINARY[op][1](left, right)
            result = term if result is None else ops.multiply(result, term)
        return result

    def __repr__(self) -> str:
        parts = [_wrap(self.operands[0], 11)]
        for op, operand in zip(self.comparisons, self.operands[1:], strict=True):
            parts += [op, _wrap(operand, 11)]
        return " ".join(parts)


@register
class Negate(LengthNode, Schedule):
    """``-operand``.

    Example:
        >>> s = -Step()
        >>> s, float(s(3))
        (-step, -3.0)
    """

    keyword = "negate"
    precedence = 40

    def __init__(self, operand: ScheduleLike) -> None:
        self.operand = as_schedule(operand, name="operand")
        self._fold = _fold_with(lambda a: -a, [self.operand])
        self.length_expression = is_length(self)

    def computed(self, step: Any) -> Any:
        return ops.negative(self.operand.value(step))

    def __repr__(self) -> str:
        return f"-{_wrap(self.operand, 41)}"


#: the functions of the expression language: name -> (number of arguments, on tensors, on
#: Python floats to fold constant arguments in float64)
FUNCTIONS: dict[str, tuple[int, Callable[..., Any], Callable[..., Any]]] = {
    "min": (2, ops.minimum, min),
    "max": (2, ops.maximum, max),
    "floor": (1, ops.floor, math.floor),
    "ceil": (1, ops.ceil, math.ceil),
    "exp": (1, ops.exp, math.exp),
    "log": (1, ops.log, math.log),
    "sqrt": (1, ops.sqrt, math.sqrt),
    "cos": (1, ops.cos, math.cos),
    "sin": (1, ops.sin, math.sin),
    "abs": (1, ops.absolute, abs),
    "where": (
        3,
        lambda cond, a, b: ops.where(ops.not_equal(cond, 0.0), a, b),
        lambda cond, a, b: a if cond != 0.0 else b,
    ),
    "clip": (
        3,
        lambda x, low, high: ops.minimum(ops.maximum(x, low), high),
        lambda x, low, high: min(max(x, low), high),
    ),
}


@register
class Function(LengthNode, Schedule):
    """``name(*args)`` of schedules: ``min, max, floor, ceil, exp, log, sqrt, cos, sin, abs``.

    Also ``where(cond, a, b)`` (``a`` where ``cond != 0``) and ``clip(x, low, high)``.

    Example:
        >>> s = Function("min", [Step() / 10, 1.0])
        >>> s
        min(step / 10.0, 1.0)
        >>> [float(v) for v in s([0, 5, 20])]
        [0.0, 0.5, 1.0]
    """

    keyword = "function"

    def __init__(self, name: str, args: Sequence[ScheduleLike]) -> None:
        if name not in FUNCTIONS:
            raise InvalidArgumentError(
                f"`Function(name=...)` must be one of {sorted(FUNCTIONS)}. {received('name', name)}"
            )
        arity = FUNCTIONS[name][0]
        if isinstance(args, (str, bytes)) or not isinstance(args, Sequence) or len(args) != arity:
            raise InvalidArgumentError(
                f"`{name}(...)` takes {arity} argument{'s' if arity > 1 else ''}. "
                f"{received('args', args)}"
            )
        self.name = name
        self.args = [as_schedule(a, name=f"{name} argument") for a in args]
        self._fold = _fold_with(FUNCTIONS[name][2], self.args, lambda: repr(self))
        self.length_expression = is_length(self)

    def computed(self, step: Any) -> Any:
        return FUNCTIONS[self.name][1](*(a.value(step) for a in self.args))

    def __repr__(self) -> str:
        return f"{self.name}({', '.join(a._inline() for a in self.args)})"


def minimum(a: ScheduleLike, b: ScheduleLike) -> Schedule:
    """Return the elementwise minimum of two schedules or numbers."""
    return Function("min", [a, b])


def maximum(a: ScheduleLike, b: ScheduleLike) -> Schedule:
    """Return the elementwise maximum of two schedules or numbers."""
    return Function("max", [a, b])


def clip(schedule: ScheduleLike, low: ScheduleLike = None, high: ScheduleLike = None) -> Schedule:
    """Return ``schedule`` clipped to ``[low, high]``; either bound may be ``None``.

    Example:
        >>> [float(v) for v in clip(Step(), 1, 3)([0, 2, 9])]
        [1.0, 2.0, 3.0]
    """
    return as_schedule(schedule, name="clip argument").clip(low, high)


def _wrap(schedule: Schedule, min_precedence: int) -> str:
    text = schedule._inline()
    if (
        isinstance(schedule, Constant)
        and math.copysign(1.0, schedule.value_) < 0
        and min_precedence > 40
    ):
        return f"({text})"
    if schedule.precedence < min_precedence:
        return f"({text})"
    return text


# ---- conversion ------------------------------------------------------------------------
def as_schedule(value: ScheduleLike, name: str = "schedule") -> Schedule:
    """Return ``value`` as a :class:`Schedule`.

    Accepts a number (a :class:`Constant`), a Schedule, a Keras ``LearningRateSchedule``
    (built-in ones converted exactly, others wrapped) or an expression string (parsed
    with ``hs.parse``).

    Raises:
        TypeError: For anything else, naming ``name`` and the value received.

    Example:
        >>> as_schedule(0.5)
        constant(0.5)
        >>> as_schedule("step / 1000 + 0.01")
        step / 1000.0 + 0.01
    """
    if isinstance(value, Schedule):
        return value
    if isinstance(value, bool):
        raise InvalidTypeError(
            f"`{name}` must be a number, a schedule or an expression string, not a bool. "
            f"{received(name, value)}"
        )
    if is_number(value):
        return Constant(value if isinstance(value, int) else float(value))
    for kind, read in READERS:
        if isinstance(value, kind):
            return read(value)
    raise InvalidTypeError(
        f"`{name}` must be a number, a hyperstep or Keras schedule, or an expression string "
        f"such as 'cosine(1e-3, steps=1000)'. {received(name, value)}"
    )
