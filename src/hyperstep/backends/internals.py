"""Every private API of Keras, TensorFlow and JAX that hyperstep uses, behind version checks.

Each function names what it relies on; ``tests/backends/test_internals.py`` pins each
behaviour, so a Keras, TensorFlow or JAX upgrade that moves one fails one named test.
"""

from __future__ import annotations

from typing import Any


def unpickle_optimizer(cls: type, args: tuple[Any, ...]) -> Any:
    """Load an optimizer pickled by Keras's ``KerasSaveable.__reduce__`` (``args``: its
    in-memory ``.keras`` file), through ``cls._unpickle_model`` (Keras 3: a classmethod)."""
    return cls._unpickle_model(*args)  # type: ignore[attr-defined]
