"""Units of hyperstep.errors: the exception tree and ``received``."""

from __future__ import annotations

import pytest

from hyperstep import errors
from hyperstep.errors import (
    BackendError,
    FrozenValueError,
    HyperstepError,
    InvalidArgumentError,
    InvalidTypeError,
    ScheduleSyntaxError,
    received,
)


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (InvalidArgumentError, ValueError),
        (InvalidTypeError, TypeError),
        (ScheduleSyntaxError, ValueError),
        (BackendError, ImportError),
        (FrozenValueError, RuntimeError),
    ],
)
def test_each_error_is_a_hyperstep_error_and_its_builtin(cls: type, builtin: type) -> None:
    with pytest.raises(builtin) as caught:
        raise cls("boom")
    assert isinstance(caught.value, HyperstepError)
    assert str(caught.value) == "boom"


def test_all_lists_the_tree_and_every_name_is_an_exception() -> None:
    assert set(errors.__all__) == {
        "BackendError",
        "FrozenValueError",
        "HyperstepError",
        "InvalidArgumentError",
        "InvalidTypeError",
        "NotRegisteredError",
        "ScheduleSyntaxError",
    }
    for name in errors.__all__:
        assert issubclass(getattr(errors, name), HyperstepError)


def test_schedule_syntax_error_points_a_caret_under_the_column() -> None:
    error = ScheduleSyntaxError("unexpected ')'", text="1 + )", column=4)
    assert (error.reason, error.text, error.column) == ("unexpected ')'", "1 + )", 4)
    lines = str(error).split("\n")
    assert lines == ["unexpected ')'", "  1 + )", "      ^"]
    assert lines[1].index(")") == lines[2].index("^")


def test_schedule_syntax_error_without_text_or_column() -> None:
    assert str(ScheduleSyntaxError("empty")) == "empty"
    assert str(ScheduleSyntaxError("bad", text="x y")) == "bad\n  x y"


@pytest.mark.parametrize("value", [-3, "linear", None, [1, 2], 0.1])
def test_received_uses_repr(value: object) -> None:
    assert received("steps", value) == f"Received: steps={value!r}"
