"""The units of hyperstep.schedules.parse_reader: ``Reader`` walking ``ast`` nodes directly
(``hs.parse`` end to end is in tests/schedules/test_parse.py): raw values, the names it
resolves, argument folding and the caret column in characters."""

import ast

import numpy as np
import pytest

import hyperstep.schedules as hs
from hyperstep.errors import ScheduleSyntaxError
from hyperstep.schedules.parse_reader import Reader


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
        ("sqrt(step, 2)", "sqrt() takes 1 argument; got 2", 0),
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
