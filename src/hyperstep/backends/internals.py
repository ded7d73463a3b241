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


def gradient_function(op: Any) -> Any:
    """TensorFlow's registered gradient function of graph ``op`` (``None`` when the op has
    none), from ``tensorflow.python.framework.ops`` (private; the doctor's graph analysis)."""
    from tensorflow.python.framework import ops as tf_ops

    return tf_ops.get_gradient_function(op)


def global_seed_generator() -> Any:
    """Keras's global seed generator, or ``None`` (``keras.src.backend.common.global_state``,
    private; the doctor puts its state back after a probe)."""
    try:
        from keras.src.backend.common import global_state
    except ImportError:  # pragma: no cover - other Keras versions
        return None
    return global_state.get_global_attribute("global_seed_generator")
