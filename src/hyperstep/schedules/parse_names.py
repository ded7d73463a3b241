"""The expression language's limits, tables and vocabulary (keyword -> schedule class).

``vocabulary()`` maps every schedule ``keyword`` to its class; the tables map Python syntax
nodes to operators (``ast.Add`` -> ``"+"``) or to the reason they are refused, and ``fold``
computes a tree of constants into one number. :mod:`hyperstep.schedules.language` reads text with
them.
"""

from __future__ import annotations

import ast
import difflib
import inspect
import math
from typing import Any

from hyperstep.schedules.base import CLASSES, Schedule, format_value
from hyperstep.schedules.expressions import BinaryOp, Constant, Negate, folded

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


def then(suggestion: str, sentence: str) -> str:
    """Join an optional "; did you mean 'x'?" and a closing sentence."""
    if suggestion:
        return f"{suggestion} {sentence[0].upper()}{sentence[1:]}"
    return f"; {sentence}"


def suggest(name: str, options: list[str]) -> str:
    close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
