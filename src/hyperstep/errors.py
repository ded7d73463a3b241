"""The hyperstep exception tree and the helpers that word its messages.

Every error names the argument, what was expected, what was received and what to type
instead, ending with ``Received: name=value``. All hyperstep errors derive from
:class:`HyperstepError`; value problems are also ``ValueError`` and type problems
``TypeError`` so that callers catching the builtin types keep working.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

#: the exception tree (the message helpers below are for hyperstep's own modules)
__all__ = [
    "BackendError",
    "FrozenValueError",
    "HyperstepError",
    "InvalidArgumentError",
    "InvalidTypeError",
    "ScheduleSyntaxError",
]


class HyperstepError(Exception):
    """Base class of every error raised by hyperstep."""


class InvalidArgumentError(HyperstepError, ValueError):
    """An argument has a value hyperstep cannot use."""


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


def renamed(
    namespace: str, names: Mapping[str, str], *, stacklevel: int = 2
) -> Callable[[str], Any]:
    """Return a module ``__getattr__`` that keeps former names working for one release.

    ``names`` maps each former name in module ``namespace`` to its new spelling, a dotted
    path (``"hyperstep.ReduceOnPlateau"``); reading a former name warns with a
    ``DeprecationWarning`` that gives the new spelling, then returns the object.
    ``stacklevel`` 2 points the warning at the line that read the name when the result is
    the module's ``__getattr__`` itself (3 when a ``__getattr__`` of the module calls it).

    Example:
        >>> import warnings
        >>> get = renamed("hyperstep.demo", {"Old": "hyperstep.errors.HyperstepError"})
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     found = get("Old")
        >>> found.__name__
        'HyperstepError'
        >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
        `hyperstep.demo.Old` is deprecated: use `hyperstep.errors.HyperstepError` (the former
        name goes in the next release).
    """

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {namespace!r} has no attribute {name!r}")
        new = names[name]
        warnings.warn(
            f"`{namespace}.{name}` is deprecated: use `{new}` (the former name goes in the "
            "next release).",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        module, _, attribute = new.rpartition(".")
        return getattr(importlib.import_module(module), attribute)

    return __getattr__
