"""The units of hyperstep.schedules.parse_names: ``fold`` against Python's own arithmetic,
the suggestion and signature texts, and the operator tables against Python's ``ast``."""

import ast
import inspect
import math

import pytest

import hyperstep.schedules as hs
from hyperstep import parse
from hyperstep.schedules import parse_names as names


@pytest.mark.parametrize(
    ("text", "python"),
    [
        ("2 ** 10", 2.0**10),
        ("7 - 10", 7.0 - 10.0),
        ("0.1 + 0.2", 0.1 + 0.2),
        ("1 / 3", 1.0 / 3.0),
        ("-7.5 // 2", -7.5 // 2.0),
        ("-7.5 % 3", -7.5 % 3.0),
        ("3 * 0.5", 3.0 * 0.5),
        ("4 / 2", 4.0 / 2.0),
    ],
)
def test_fold_computes_a_constant_tree_as_python_does(text, python) -> None:
    folded = names.fold(parse(text))
    assert folded == python
    # integral results come back as ints except from a true division
    assert isinstance(folded, int) == (" / " not in text and float(python).is_integer())


def test_fold_of_nested_and_negated_constants() -> None:
    assert names.fold(parse("-(1e-3 - 1e-5) / (15 - 1)")) == -(1e-3 - 1e-5) / (15.0 - 1.0)


def test_fold_gives_none_where_a_step_or_a_function_is_in_the_tree() -> None:
    assert names.fold(parse("1.0 + linear(0, 1, 10)")) is None
    assert names.fold(parse("2 * step")) is None
    assert names.fold(parse("min(2, 3) + 1")) is None  # functions are not its operators


def test_suggest_and_then_word_the_hint() -> None:
    assert names.suggest("stpe", ["step", "epoch"]) == "; did you mean 'step'?"
    assert names.suggest("zzz", ["step", "epoch"]) == ""
    assert names.then("; did you mean 'step'?", "write x.") == "; did you mean 'step'? Write x."
    assert names.then("", "write x.") == "; write x."


def test_signature_text_lists_required_then_defaults() -> None:
    text = names.signature_text("linear", type(hs.linear(0, 1, 10)))
    assert text == "linear(start, end, steps, begin=0)"
    params = names.parameters_of(type(hs.linear(0, 1, 10)))
    assert [p.name for p in params] == list(inspect.signature(type(hs.linear(0, 1, 10))).parameters)


def test_is_number_refuses_bools() -> None:
    assert names.is_number(3) and names.is_number(2.5)
    assert not names.is_number(True) and not names.is_number("3")


def test_the_operator_tables_cover_pythons_binary_and_comparison_operators() -> None:
    for text, symbol in [("a + b", "+"), ("a // b", "//"), ("a % b", "%"), ("a ** b", "**")]:
        node = ast.parse(text, mode="eval").body
        assert names.BINOPS[type(node.op)] == symbol
    for text in ("a < b", "a <= b", "a > b", "a >= b", "a == b", "a != b"):
        node = ast.parse(text, mode="eval").body
        assert names.COMPARE[type(node.ops[0])] == text.split()[1]
    assert names.NUMBERS == {"pi": math.pi, "e": math.e, "inf": math.inf}
