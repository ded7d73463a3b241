"""The syntax-tree walker of the expression language: ``ast`` node -> schedule node.

``Reader(line, steps_per_epoch, names).schedule(tree.body)`` builds the schedule that
:func:`hyperstep.schedules.language.parse` returns, or raises a
:class:`~hyperstep.errors.ScheduleSyntaxError` with a caret under the offending column.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Mapping
from typing import Any

from hyperstep.errors import ScheduleSyntaxError
from hyperstep.schedules.base import MAX_DEPTH, Schedule
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
)
from hyperstep.schedules.parse_names import (
    BINOPS,
    COMPARE,
    NAMES,
    NUMBERS,
    REFUSED,
    fold,
    is_number,
    parameters_of,
    signature_text,
    suggest,
    then,
    vocabulary,
)


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
        arity = FUNCTIONS[name][0]
        if node.keywords:
            raise self.error(node.keywords[0], f"{name}() takes no keyword arguments")
        if len(node.args) != arity:
            plural = "s" if arity > 1 else ""
            raise self.error(node, f"{name}() takes {arity} argument{plural}; got {len(node.args)}")
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
                raise self.error(
                    kw,
                    f"{keyword}() got an unexpected keyword '{kw.arg}'"
                    + then(suggest(kw.arg, names), f"its arguments are {listing}"),
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
