"""The units of hyperstep.schedules.language: ``parse``'s own steps around the reader (the
text checks, the whole-expression range check, binding epochs, extra names), ``fold``
against Python's own arithmetic, the suggestion and signature texts, the operator tables
against Python's ``ast``, and ``Reader`` walking ``ast`` nodes directly (raw values, the
names it resolves, argument folding and the caret column in characters); the grammar
itself is tested in tests/schedules/test_parse.py and test_expression_forms.py."""

import ast
import inspect
import math

import numpy as np
import pytest

import hyperstep.schedules as hs
from hyperstep import parse
from hyperstep.errors import ScheduleSyntaxError
from hyperstep.schedules import language
from hyperstep.schedules.language import Reader


def test_extra_names_stand_for_their_schedules() -> None:
    lr = hs.linear(1.0, 0.0, 10)
    built = parse("0.5 * lr + step / 100", names={"lr": lr})
    steps = np.arange(0, 15)
    expected = 0.5 * np.clip(1 - steps / 10, 0, None) + steps / 100
    np.testing.assert_allclose(np.asarray(built(steps), np.float64), expected, atol=1e-7)
    with pytest.raises(ScheduleSyntaxError, match="unknown name 'lr'"):
        parse("0.5 * lr")  # only while given


def test_steps_per_epoch_binds_epochs_inside_words_too() -> None:
    text = 'piecewise([2], [1.0, 0.1], unit="epoch")'
    bound = parse(text, steps_per_epoch=5)
    assert np.asarray(bound(np.array([0, 9, 10, 11]))).tolist() == pytest.approx(
        [1.0, 1.0, 0.1, 0.1]
    )
    unbound = parse(text)
    with pytest.raises(ValueError, match="steps_per_epoch"):
        unbound(0)


def test_a_constant_expression_beyond_float32_is_refused_at_column_0() -> None:
    with pytest.raises(ScheduleSyntaxError) as caught:
        parse("1e38 * 10")
    assert "beyond float32's range" in caught.value.reason and caught.value.column == 0
    assert float(parse("1e37 * 10")(0)) == pytest.approx(1e38, rel=1e-6)


def test_a_syntax_error_points_at_pythons_offset() -> None:
    with pytest.raises(ScheduleSyntaxError) as caught:
        parse("step +* 2")
    assert caught.value.reason.startswith("syntax error") and caught.value.column == 6
    with pytest.raises(ScheduleSyntaxError, match=r"must be a string.*of type bytes"):
        parse(b"step")  # type: ignore[arg-type]


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
    folded = language.fold(parse(text))
    assert folded == python
    # integral results come back as ints except from a true division
    assert isinstance(folded, int) == (" / " not in text and float(python).is_integer())


def test_fold_of_nested_and_negated_constants() -> None:
    assert language.fold(parse("-(1e-3 - 1e-5) / (15 - 1)")) == -(1e-3 - 1e-5) / (15.0 - 1.0)


def test_fold_gives_none_where_a_step_or_a_function_is_in_the_tree() -> None:
    assert language.fold(parse("1.0 + linear(0, 1, 10)")) is None
    assert language.fold(parse("2 * step")) is None
    assert language.fold(parse("min(2, 3) + 1")) is None  # functions are not its operators


def test_suggest_words_the_hint() -> None:
    assert language.suggest("stpe", ["step", "epoch"]) == "; did you mean 'step'?"
    assert language.suggest("zzz", ["step", "epoch"]) == ""


def test_signature_text_lists_required_then_defaults() -> None:
    text = language.signature_text("linear", type(hs.linear(0, 1, 10)))
    assert text == "linear(start, end, steps, begin=0)"
    params = language.parameters_of(type(hs.linear(0, 1, 10)))
    assert [p.name for p in params] == list(inspect.signature(type(hs.linear(0, 1, 10))).parameters)


def test_the_operator_tables_cover_pythons_binary_and_comparison_operators() -> None:
    for text, symbol in [("a + b", "+"), ("a // b", "//"), ("a % b", "%"), ("a ** b", "**")]:
        node = ast.parse(text, mode="eval").body
        assert language.BINOPS[type(node.op)] == symbol
    for text in ("a < b", "a <= b", "a > b", "a >= b", "a == b", "a != b"):
        node = ast.parse(text, mode="eval").body
        assert language.COMPARE[type(node.ops[0])] == text.split()[1]
    assert language.NUMBERS == {"pi": math.pi, "e": math.e, "inf": math.inf}


def node(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def read(text: str, steps_per_epoch=None, names=None) -> Reader:
    return Reader(text, steps_per_epoch, names or {})


def test_value_returns_plain_python_for_arguments() -> None:
    text = "[1, -2.5, 'a', None, True, 2 * 3]"
    values = read(text).value(node(text))
    assert values[:5] == [1, -2.5, "a", None, True]
    assert read("-3").value(node("-3")) == -3 and read("+2.5").value(node("+2.5")) == 2.5


def test_argument_folds_number_arithmetic_and_keeps_schedules() -> None:
    assert read("10 * 1000").argument(node("10 * 1000")) == 10_000
    assert read("-(1 / 4)").argument(node("-(1 / 4)")) == -0.25
    kept = read("step * 2").argument(node("step * 2"))
    assert isinstance(kept, hs.Schedule) and float(kept(3)) == 6.0


def test_schedule_resolves_step_epoch_numbers_and_extra_names() -> None:
    lr = hs.constant(0.5)
    text = "lr * (epoch + pi) + e"
    built = read(text, steps_per_epoch=4, names={"lr": lr}).schedule(node(text))
    steps = np.array([0, 3, 4, 9])
    expected = 0.5 * (np.floor(steps / 4) + np.pi) + np.e
    np.testing.assert_allclose(np.asarray(built(steps), np.float64), expected, rtol=1e-6)


def test_a_comparison_chain_is_one_where_every_link_holds() -> None:
    text = "2 <= step < 5"
    built = read(text).schedule(node(text))
    steps = np.arange(8)
    assert np.asarray(built(steps)).tolist() == ((2 <= steps) & (steps < 5)).astype(float).tolist()


@pytest.mark.parametrize(
    ("text", "reason", "column"),
    [
        ("'high'", "a string ('high') can only be an argument", 0),
        ("[1, 2]", "a list can only be an argument", 0),
        ("1 + None", "None can only be an argument", 4),
        ("step + lr", "unknown name 'lr'", 7),
        ("cosine + 1", "'cosine' is a schedule; call it: cosine(", 0),
        ("sqrt(step, 2)", "`sqrt(...)` takes 1 argument. Received: args=[step, constant(2.0)]", 0),
        ("step(1)", "'step' is not a function", 0),
    ],
)
def test_schedule_refuses_naming_the_node_and_its_column(text, reason, column) -> None:
    with pytest.raises(ScheduleSyntaxError) as caught:
        read(text).schedule(node(text))
    assert reason in caught.value.reason and caught.value.column == column
    assert caught.value.text == text


def test_column_counts_characters_not_utf8_bytes() -> None:
    text = "é + bad"  # a name a caller may give (an optimizer's hyperparameter)
    with pytest.raises(ScheduleSyntaxError) as caught:
        read(text, names={"é": hs.constant(1.0)}).schedule(node(text))
    assert caught.value.column == text.index("bad") == 4  # 5 in UTF-8 bytes
