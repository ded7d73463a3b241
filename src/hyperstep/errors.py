"""The hyperstep exception tree and the helpers that word its messages.

Every error names the argument, what was expected, what was received and what to type
instead, ending with ``Received: name=value``. All hyperstep errors derive from
:class:`HyperstepError`; value problems are also ``ValueError`` and type problems
``TypeError`` so that callers catching the builtin types keep working.
"""

from __future__ import annotations

from typing import Any

#: the exception tree (the message helpers below are for hyperstep's own modules)
__all__ = [
    "BackendError",
    "FrozenValueError",
    "HyperstepError",
    "InvalidArgumentError",
    "InvalidTypeError",
    "NotRegisteredError",
    "ScheduleSyntaxError",
]


class HyperstepError(Exception):
    """Base class of every error raised by hyperstep."""


class InvalidArgumentError(HyperstepError, ValueError):
    """An argument has a value hyperstep cannot use."""


class NotRegisteredError(InvalidArgumentError, LookupError):
    """A saved name that no module imported in this process registered: the file is sound,
    the process lacks the module (so loading does not call the file damaged)."""


class InvalidTypeError(HyperstepError, TypeError):
    """An argument has a type hyperstep cannot use."""


class ScheduleSyntaxError(HyperstepError, ValueError):
    """A schedule expression could not be parsed.

    Attributes:
        text: The expression as given.
        column: 0-based column of the offending character (or ``None``).
        reason: The explanation without the quoted text.
    """

    def __init__(self, reason: str, text: str = "", column: int | None = None) -> None:
        self.reason = reason
        self.text = text
        self.column = column
        message = reason
        if text:
            caret = "" if column is None else "\n  " + " " * column + "^"
            message = f"{reason}\n  {text}{caret}"
        super().__init__(message)


class BackendError(HyperstepError, ImportError):
    """The installed Keras backend cannot run the requested feature."""


class FrozenValueError(HyperstepError, RuntimeError):
    """A value read inside a compiled function would stay at its value when traced.

    Raised on JAX when a :class:`~hyperstep.Hyperparameter` is read inside ``jax.jit`` while
    its variables are not in the stateless state being traced: the compiled step would keep
    the value of the step it was traced at.
    """


def received(name: str, value: Any) -> str:
    """Return ``"Received: name=value"`` with the value shown by ``repr``.

    Example:
        >>> received("steps", -3)
        'Received: steps=-3'
    """
    return f"Received: {name}={value!r}"
