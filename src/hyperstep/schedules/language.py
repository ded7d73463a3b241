"""The expression language: ``hs.parse("warmup(cosine(1e-3, steps=10000), steps=500) * 0.5")``.

The text is read with :func:`ast.parse` (``mode="eval"``) and the syntax tree is walked
against a strict whitelist; no user code is ever compiled to run (no ``eval``/``exec``).
Allowed:

- numbers, ``inf``, ``pi``, ``e``; ``True``/``False``/``None``, strings and lists as call
  arguments (``mode="triangular"``, ``boundaries=[100, 200]``);
- the names ``step``, ``epoch``, ``total`` and ``progress`` (:data:`NAMES`);
- ``+ - * / // % **`` (``//`` and ``%`` as in Python, also for negative operands), unary
  ``-``/``+``, parentheses and comparisons
  ``< <= > >= == !=`` (1.0 where true, 0.0 where false; chains mean "and");
- the functions of :data:`~hyperstep.schedules.expressions.FUNCTIONS`;
- the schedule vocabulary (:func:`vocabulary`), with positional and keyword arguments
  matched against each class's signature.

Arithmetic on plain numbers inside a schedule's arguments is folded into a number
(``linear(0, 1, 10 * 1000)``); everywhere else it builds schedule nodes, whose constant
sub-expressions (``(0.001 - 1e-05) / (15 - 1) * epoch``) are computed in float64 and
rounded to float32 once, as Python computes them.

Everything else (attributes, subscripts, lambdas, comprehensions, f-strings, ``:=``,
``and``/``or``, other names) raises :class:`~hyperstep.errors.ScheduleSyntaxError`
quoting the text with a caret under the offending column.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import math
import re
from collections.abc import Mapping
from typing import Any

from hyperstep.errors import ScheduleSyntaxError
from hyperstep.schedules.base import (
    CLASSES,
    FLOAT32_MAX,
    MAX_DEPTH,
    READERS,
    Schedule,
    check_positive_int,
    format_value,
    is_number,
)
from hyperstep.schedules.expressions import (
    FUNCTIONS,
    BinaryOp,
    Chain,
    Constant,
    Epoch,
    Function,
    Negate,
    Step,
    Total,
    bind_epochs,
    folded,
    uses_epoch,
)

#: the longest expression accepted, in characters
MAX_LENGTH = 10_000


NAMES = ("step", "epoch", "total", "progress", "pi", "e")


#: named numbers
NUMBERS = {"pi": math.pi, "e": math.e, "inf": math.inf}


#: keywords of registered classes that are not words of the language: the expression nodes,
#: written as syntax, and the Keras wrapper, which has no expression
_SYNTAX_NODES = frozenset(
    {"step", "epoch", "total", "binary", "chain", "negate", "function", "keras_schedule"}
)


BINOPS: dict[type, str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
}


COMPARE: dict[type, str] = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
}


REFUSED: dict[type, str] = {
    ast.Attribute: "attribute access (`.`) is not allowed",
    ast.Subscript: "subscripts (`[...]` after a value) are not allowed",
    ast.Lambda: "lambdas are not allowed",
    ast.ListComp: "comprehensions are not allowed",
    ast.SetComp: "comprehensions are not allowed",
    ast.DictComp: "comprehensions are not allowed",
    ast.GeneratorExp: "comprehensions are not allowed",
    ast.JoinedStr: "f-strings are not allowed",
    ast.NamedExpr: "assignment (`:=`) is not allowed",
    ast.BoolOp: "`and`/`or` are not allowed; multiply comparisons for 'and', e.g. "
    "(step > 10) * (step < 20)",
    ast.IfExp: "`x if c else y` is not allowed; use where(c, x, y)",
    ast.Starred: "starred arguments (`*x`) are not allowed",
    ast.Tuple: "tuples are not allowed; use a list [a, b] as a call argument",
    ast.Dict: "dicts are not allowed",
    ast.Set: "sets are not allowed",
    ast.Await: "`await` is not allowed",
    ast.Yield: "`yield` is not allowed",
    ast.YieldFrom: "`yield` is not allowed",
    ast.Slice: "slices are not allowed",
}


def vocabulary() -> dict[str, type[Schedule]]:
    """Return the schedule vocabulary: keyword -> class, sorted by keyword.

    The words are the classes :func:`~hyperstep.schedules.base.register` has recorded (the
    leaves, families, combinators and Keras formulas, registered as :mod:`hyperstep.schedules`
    imports their modules), less the nodes written as syntax.

    Example:
        >>> vocabulary()["constant"].__name__
        'Constant'
    """
    return {k: cls for k, cls in sorted(CLASSES.items()) if k not in _SYNTAX_NODES}


def parameters_of(cls: type) -> list[inspect.Parameter]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p for p in inspect.signature(cls).parameters.values() if p.kind in kinds]


def signature_text(keyword: str, cls: type) -> str:
    parts = []
    for p in parameters_of(cls):
        if p.default is inspect.Parameter.empty:
            parts.append(p.name)
        else:
            parts.append(f"{p.name}={format_value(p.default)}")
    return f"{keyword}({', '.join(parts)})"


def suggest(name: str, options: list[str]) -> str:
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def fold(node: Schedule) -> int | float | None:
    """Return the number a tree of constants and ``+ - * / // % **`` computes (as the nodes
    fold it, :func:`~hyperstep.schedules.expressions.folded`), whole numbers as ``int`` but
    for a quotient; None for any other tree."""
    if isinstance(node, Negate):
        inner = fold(node.operand)
        return None if inner is None else -inner
    if not isinstance(node, BinaryOp):
        return node.value_ if isinstance(node, Constant) else None
    if node.op not in _ARITHMETIC or fold(node.left) is None or fold(node.right) is None:
        return None
    number = folded(node)
    if number is not None and node.op != "/" and number.is_integer() and abs(number) < 2**53:
        return int(number)
    return number


_ARITHMETIC = ("+", "-", "*", "/", "//", "%", "**")


class Reader:
    """Turns a whitelisted syntax tree into a schedule, raising at the first refusal."""

    def __init__(
        self, text: str, steps_per_epoch: int | None, names: Mapping[str, Schedule]
    ) -> None:
        self.text = text
        self.names = names
        self.steps_per_epoch = steps_per_epoch
        self.depth = 0
        self.vocabulary = vocabulary()

    # ---- errors ---------------------------------------------------------------------------
    def column(self, node: ast.AST) -> int:
        offset = node.col_offset if isinstance(node, (ast.expr, ast.keyword)) else 0
        # col_offset counts UTF-8 bytes; the caret counts characters
        return len(self.text.encode("utf-8")[:offset].decode("utf-8", errors="ignore"))

    def error(self, node: ast.AST, reason: str) -> ScheduleSyntaxError:
        return ScheduleSyntaxError(reason, self.text, self.column(node))

    # ---- values ---------------------------------------------------------------------------
    def schedule(self, node: ast.AST) -> Schedule:
        """Read ``node`` where a schedule is expected (top level, operands)."""
        return self.operand(node, self.value(node))

    def operand(self, node: ast.AST, value: Any) -> Schedule:
        """Return ``value``, read from ``node``, as a schedule, or refuse it."""
        if isinstance(value, Schedule):
            return value
        if isinstance(value, bool) or value is None:
            raise self.error(node, f"{value!r} can only be an argument of a schedule, not a value")
        if isinstance(value, str):
            raise self.error(
                node,
                f"a string ({value!r}) can only be an argument of a schedule, "
                "e.g. cyclic(0.1, 1.0, 100, mode='triangular')",
            )
        if isinstance(value, list):
            raise self.error(
                node, "a list can only be an argument of a schedule, e.g. piecewise([10], [1, 0])"
            )
        return self.construct(node, Constant, {"value": value})

    def value(self, node: ast.AST) -> Any:
        """Read ``node``: a number, bool, None, string, list or schedule."""
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise self.error(
                    node, f"the expression is nested too deeply (at most {MAX_DEPTH} levels)"
                )
            return self._value(node)
        finally:
            self.depth -= 1

    def _value(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node)
        if isinstance(node, ast.BinOp):
            op = BINOPS.get(type(node.op))
            if op is None:
                raise self.error(node, "only the operators + - * / // % ** are allowed")
            left, right = self.schedule(node.left), self.schedule(node.right)
            return self.construct(node, BinaryOp, {"op": op, "left": left, "right": right})
        if isinstance(node, ast.Compare):
            return self.compare(node)
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.List):
            return [self.argument(element) for element in node.elts]
        reason = REFUSED.get(type(node), f"{type(node).__name__} expressions are not allowed")
        raise self.error(node, reason)

    def constant(self, node: ast.Constant) -> Any:
        value = node.value
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, (int, float)):
            if isinstance(value, int) and abs(value) > 2**63:
                raise self.error(
                    node, f"the integer literal is too large ({len(str(value))} digits)"
                )
            return value
        raise self.error(node, f"{type(value).__name__} literals are not allowed")

    def name(self, node: ast.Name) -> Any:
        if node.id == "step":
            return Step()
        if node.id == "epoch":
            return Epoch(self.steps_per_epoch)
        if node.id == "total":
            return Total()
        if node.id == "progress":  # step / total
            return BinaryOp("/", Step(), Total())
        if node.id in NUMBERS:
            return NUMBERS[node.id]
        if node.id in self.names:
            return self.names[node.id]
        if node.id in self.vocabulary:
            cls = self.vocabulary[node.id]
            raise self.error(
                node, f"'{node.id}' is a schedule; call it: {signature_text(node.id, cls)}"
            )
        if node.id in FUNCTIONS:
            raise self.error(node, f"'{node.id}' is a function; call it: {node.id}(...)")
        known = [*NAMES, *self.names]
        options = [*known, *self.vocabulary, *FUNCTIONS]
        raise self.error(
            node,
            f"unknown name '{node.id}'{suggest(node.id, options)} (names: {', '.join(known)})",
        )

    def unary(self, node: ast.UnaryOp) -> Any:
        if isinstance(node.op, ast.USub):
            operand = self.value(node.operand)
            if is_number(operand):
                return -operand
            operand = self.operand(node.operand, operand)
            return self.construct(node, Negate, {"operand": operand})
        if isinstance(node.op, ast.UAdd):
            operand = self.value(node.operand)
            return operand if is_number(operand) else self.operand(node.operand, operand)
        raise self.error(node, "only the unary operators - and + are allowed")

    def compare(self, node: ast.Compare) -> Schedule:
        # each comparison of a chain counts one level against the limit (as the nested
        # "and"s it means would)
        over = self.depth + len(node.ops) - MAX_DEPTH
        if over > 0:
            raise self.error(
                node.comparators[len(node.ops) - over],
                f"the expression is nested too deeply: a chain of {len(node.ops)} comparisons "
                f"counts one level each (at most {MAX_DEPTH} levels in all)",
            )
        comparisons = []
        for op_node in node.ops:
            op = COMPARE.get(type(op_node))
            if op is None:
                raise self.error(node, "only the comparisons < <= > >= == != are allowed")
            comparisons.append(op)
        operands = [self.schedule(n) for n in [node.left, *node.comparators]]
        if len(comparisons) == 1:
            left, right = operands
            return self.construct(node, BinaryOp, {"op": op, "left": left, "right": right})
        # a chain means "and"; each operand is evaluated once
        return self.construct(node, Chain, {"comparisons": comparisons, "operands": operands})

    # ---- calls ----------------------------------------------------------------------------
    def call(self, node: ast.Call) -> Schedule:
        if not isinstance(node.func, ast.Name):
            if isinstance(node.func, ast.Attribute):
                raise self.error(node.func, REFUSED[ast.Attribute])
            raise self.error(node.func, "only functions and schedules can be called, by name")
        name = node.func.id
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise self.error(arg, REFUSED[ast.Starred])
        for keyword in node.keywords:
            if keyword.arg is None:
                raise self.error(keyword, "`**` arguments are not allowed")
        if name in FUNCTIONS:
            return self.function(node, name)
        if name in self.vocabulary:
            return self.vocabulary_call(node, name, self.vocabulary[name])
        if name in NAMES:
            raise self.error(node.func, f"'{name}' is not a function; write it without (...)")
        options = [*self.vocabulary, *FUNCTIONS]
        raise self.error(
            node.func,
            f"unknown function '{name}'{suggest(name, options)} "
            f"(schedules: {', '.join(self.vocabulary)}; functions: {', '.join(FUNCTIONS)})",
        )

    def function(self, node: ast.Call, name: str) -> Schedule:
        """``name(...)``; ``Function`` checks its number of arguments."""
        if node.keywords:
            raise self.error(node.keywords[0], f"{name}() takes no keyword arguments")
        args = [self.schedule(arg) for arg in node.args]
        return self.construct(node, Function, {"name": name, "args": args})

    def argument(self, node: ast.AST) -> Any:
        """Read a schedule's argument: folds arithmetic on plain numbers into a number."""
        value = self.value(node)
        if isinstance(value, BinaryOp) or isinstance(value, Negate):
            folded = fold(value)
            if folded is not None:
                return folded
        return value

    def vocabulary_call(self, node: ast.Call, keyword: str, cls: type[Schedule]) -> Schedule:
        parameters = parameters_of(cls)
        names = [p.name for p in parameters]
        listing = ", ".join(names) if names else "no arguments"
        positional = [
            p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        ]
        if len(node.args) > len(positional):
            raise self.error(
                node.args[len(positional)],
                f"{keyword}() takes at most {len(positional)} positional "
                f"argument{'s' if len(positional) != 1 else ''}; got "
                f"{len(node.args)}; its arguments are {listing}",
            )
        given: dict[str, Any] = {}
        where: dict[str, ast.AST] = {}
        for name, arg in zip(positional, node.args, strict=False):
            given[name], where[name] = self.argument(arg), arg
        for kw in node.keywords:
            assert kw.arg is not None  # refused in call()
            if kw.arg not in names:
                hint = suggest(kw.arg, names)  # "; did you mean 'x'?", then a new sentence
                raise self.error(
                    kw,
                    f"{keyword}() got an unexpected keyword '{kw.arg}'{hint or ';'} "
                    f"{'Its' if hint else 'its'} arguments are {listing}",
                )
            if kw.arg in given:
                raise self.error(kw, f"{keyword}() got argument '{kw.arg}' twice")
            given[kw.arg], where[kw.arg] = self.argument(kw.value), kw.value
        missing = [
            p.name
            for p in parameters
            if p.default is inspect.Parameter.empty and p.name not in given
        ]
        if missing:
            raise self.error(
                node,
                f"{keyword}() is missing the argument{'s' if len(missing) > 1 else ''} "
                f"{', '.join(repr(m) for m in missing)}; its arguments are {listing}",
            )
        return self.construct(node, cls, given, where)

    def construct(
        self,
        node: ast.AST,
        cls: type[Schedule],
        arguments: dict[str, Any],
        where: dict[str, ast.AST] | None = None,
    ) -> Schedule:
        """Build ``cls(**arguments)``; its own errors point at the argument they name."""
        try:
            return cls(**arguments)
        except (ValueError, TypeError, OverflowError) as error:
            message = str(error)
            target = node
            named = [name for name in (where or {}) if re.search(rf"\b{name}=", message)]
            if len(named) == 1 and where is not None:
                target = where[named[0]]
            raise self.error(target, message) from None


def parse(
    text: str,
    steps_per_epoch: int | None = None,
    *,
    names: Mapping[str, Schedule] | None = None,
    max_length: int | None = MAX_LENGTH,
) -> Schedule:
    """Read a schedule from an expression.

    ``parse(repr(s))`` evaluates equal to ``s`` for every schedule ``s``.

    Args:
        text: The expression, e.g. ``"warmup(cosine(1e-3, steps=10000), steps=500) * 0.5"``
            or ``"0.1 * 0.9 ** floor(epoch / 5)"``. Line breaks count as spaces.
        steps_per_epoch: Updates per epoch, binding every ``epoch`` in the text; ``None``
            leaves ``epoch`` unbound (a :class:`hyperstep.Clock` binds it later).
        names: Extra names the text may use, each standing for the schedule-like node it
            maps to (an optimizer passes its own hyperparameters, so that a group can write
            ``"10 * learning_rate"``); ``None`` allows only the built-in names.
        max_length: The longest text accepted (10,000 characters, for what people type);
            ``None`` for none, for a schedule's own ``repr`` read back (a journal's: a
            3,000-piece ``piecewise`` is longer).

    Returns:
        The :class:`~hyperstep.schedules.Schedule` the text describes.

    Raises:
        ScheduleSyntaxError: A ``ValueError`` quoting the text with a caret under the
            offending column: bad syntax, a name or function outside the vocabulary, wrong
            arguments, a construct outside the whitelist, or a schedule's own validation.

    Example:
        >>> s = parse("step / 1000 + 0.01")
        >>> s
        step / 1000.0 + 0.01
        >>> [round(float(v), 4) for v in s([0, 500, 1000])]
        [0.01, 0.51, 1.01]
        >>> [round(float(v), 4) for v in parse("0.1 * 0.5 ** floor(epoch / 2)", 10)([0, 25, 45])]
        [0.1, 0.05, 0.025]
        >>> parse("stpe / 1000")
        Traceback (most recent call last):
        ...
        hyperstep.errors.ScheduleSyntaxError: unknown name 'stpe'; did you mean 'step'? ...
          stpe / 1000
          ^
    """
    if not isinstance(text, str):
        raise ScheduleSyntaxError(
            f"an expression must be a string. Received: text={text!r} of type {type(text).__name__}"
        )
    if steps_per_epoch is not None:
        steps_per_epoch = check_positive_int("parse", "steps_per_epoch", steps_per_epoch)
    if max_length is not None and len(text) > max_length:
        raise ScheduleSyntaxError(
            f"the expression is {len(text)} characters long; at most {max_length} are accepted"
        )
    # one line, so that the caret lines up and columns count characters
    line = text.replace("\r\n", "  ").replace("\r", " ").replace("\n", " ").replace("\t", " ")
    if not line.strip():
        raise ScheduleSyntaxError(
            "the expression is empty; write e.g. 'cosine(1e-3, steps=10000)' or 'step / 1000'",
            line,
            0,
        )
    try:
        tree = ast.parse(line, mode="eval")
    except SyntaxError as error:
        offset = error.offset if error.offset and error.offset > 0 else len(line) + 1
        raise ScheduleSyntaxError(
            f"syntax error: {error.msg}", line, min(offset - 1, len(line))
        ) from None
    except (RecursionError, MemoryError):
        raise ScheduleSyntaxError(
            f"the expression is nested too deeply (at most {MAX_DEPTH} levels)", line, 0
        ) from None
    except ValueError as error:  # e.g. integer literals longer than 4300 digits
        raise ScheduleSyntaxError(f"syntax error: {error}", line, 0) from None
    schedule = Reader(line, steps_per_epoch, names or {}).schedule(tree.body)
    number = folded(schedule)
    if number is not None and not abs(number) <= FLOAT32_MAX:
        raise ScheduleSyntaxError(
            f"the expression is {number!r} at every step, beyond float32's range "
            "(|x| <= 3.4028235e38) in which values are computed: it would be inf",
            line,
            0,
        )
    if steps_per_epoch is not None and uses_epoch(schedule):  # e.g. unit="epoch"
        schedule = bind_epochs(schedule, steps_per_epoch)
    return schedule


#: ``as_schedule("step / 1000")`` parses the text
READERS.append((str, parse))
