"""Private APIs of Keras and TensorFlow that the optimizers and the doctor use.

Each is reached through :func:`hyperstep.backends.versions.reach` (one version check for
every private API); ``tests/backends/test_internals.py`` pins each behaviour, so an upgrade
that moves one fails one named test.
"""

from __future__ import annotations

from typing import Any

from hyperstep.backends.versions import reach


def unpickle_optimizer(cls: type, args: tuple[Any, ...]) -> Any:
    """Load an optimizer pickled by Keras's ``KerasSaveable.__reduce__`` (``args``).

    ``args`` holds its in-memory ``.keras`` file; loaded through ``cls._unpickle_model``
    (Keras 3: a classmethod)."""
    unpickle = reach("keras.Optimizer._unpickle_model", lambda: cls._unpickle_model)  # type: ignore[attr-defined]
    return unpickle(*args)


def gradient_function(op: Any) -> Any:
    """TensorFlow's registered gradient function of graph ``op``, ``None`` if it has none.

    From ``tensorflow.python.framework.ops`` (private; the doctor's graph analysis)."""
    return reach("tensorflow.python.framework.ops.get_gradient_function")(op)


def global_seed_generator() -> Any:
    """Keras's global seed generator, or ``None``.

    From ``keras.src.backend.common.global_state`` (private; the doctor puts its state back
    after a probe)."""
    get = reach("keras.src.backend.common.global_state.get_global_attribute", fallback=None)
    return None if get is None else get("global_seed_generator")
