"""Units of hyperstep.errors: the exception tree, ``received`` and ``renamed``."""

from __future__ import annotations

import warnings

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
    renamed,
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


def test_renamed_warns_with_the_new_spelling_and_returns_the_object() -> None:
    get = renamed("hyperstep.old", {"Error": "hyperstep.errors.InvalidArgumentError"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = get("Error")
    assert found is InvalidArgumentError
    assert len(caught) == 1 and caught[0].category is DeprecationWarning
    message = str(caught[0].message)
    assert "`hyperstep.old.Error`" in message
    assert "`hyperstep.errors.InvalidArgumentError`" in message


def test_renamed_stacklevel_points_at_the_reader() -> None:
    get = renamed("m", {"x": "hyperstep.errors.received"}, stacklevel=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        get("x")  # the line the warning names
    assert caught[0].filename == __file__


def test_renamed_unknown_name_is_an_attribute_error_naming_it() -> None:
    get = renamed("hyperstep.old", {"A": "hyperstep.errors.HyperstepError"})
    with pytest.raises(AttributeError, match=r"'hyperstep.old' has no attribute 'B'"):
        get("B")
