"""The backend room: every per-backend decision hyperstep makes, behind one interface.

Clock, schedules, control and optim use ``keras.ops``, ``keras.Variable`` and the functions
here (imported from its submodules); only this package branches on
``keras.backend.backend()`` or touches private APIs. It imports nothing of Keras at import
time, so ``import hyperstep`` can check the backend before Keras loads. The per-backend
modules (:mod:`~hyperstep.backends.tensorflow`, :mod:`~hyperstep.backends.torch`,
:mod:`~hyperstep.backends.jax`) import the submodules, never this package: it dispatches to
them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
from collections.abc import Iterator
from typing import Any

from hyperstep.backends.fast_paths import (
    add_one_in_place,
    fast_value,
    full_float32,
    host_int,
    native_variable,
    raw,
    read_once,
)
from hyperstep.backends.keras_forms import (
    Request,
    adam_pass,
    after,
    fused_updates,
    in_dtype,
    keras_number,
    multi_tensor_adam,
    optimizer_class,
    optimizer_mixins,
    scalar_tensor,
    trains_statelessly,
)
from hyperstep.backends.scopes import (
    building_model,
    builds_graph,
    compiling,
    concrete,
    current_backend,
    graph_key_function,
    in_stateless_scope,
    require_tensorflow,
    unmapped_in_jit,
)

__all__ = [
    "Request",
    "adam_pass",
    "add_one_in_place",
    "after",
    "backend_name",
    "building_model",
    "builds_graph",
    "check_backend",
    "compile_reads",
    "compiling",
    "concrete",
    "deterministic_ops",
    "distributes",
    "fast_value",
    "float64_scope",
    "full_float32",
    "fused_updates",
    "graph_key_function",
    "host_int",
    "in_dtype",
    "in_stateless_scope",
    "integer_dtype",
    "keras_number",
    "multi_tensor_adam",
    "native_variable",
    "on_claim",
    "optimizer_class",
    "optimizer_mixins",
    "raw",
    "read_once",
    "require_tensorflow",
    "scalar_tensor",
    "trains_statelessly",
    "unmapped_in_jit",
    "wide_float_dtype",
]

#: each backend (its package's name) and the extras that install it
_EXTRAS = {
    "tensorflow": "pip install 'hyperstep[cpu]' (tensorflow-cpu) or 'hyperstep[tf]' (tensorflow)",
    "jax": "pip install 'hyperstep[jax]'",
    "torch": "pip install 'hyperstep[torch]'",
}


def backend_name() -> str:
    """Return the backend Keras will use: ``KERAS_BACKEND`` or the Keras config, else TF."""
    name = os.environ.get("KERAS_BACKEND")
    if name:
        return name
    try:
        import json

        path = os.path.join(
            os.environ.get("KERAS_HOME", os.path.join(os.path.expanduser("~"), ".keras")),
            "keras.json",
        )
        with open(path) as f:
            return str(json.load(f).get("backend", "tensorflow"))
    except (OSError, ValueError):
        return "tensorflow"


def check_backend() -> None:
    """Raise ImportError naming the extras to install when Keras's backend is missing."""
    name = backend_name()
    if name not in _EXTRAS or importlib.util.find_spec(name) is not None:
        return
    raise ImportError(
        f"hyperstep needs a Keras backend, and the selected one ({name!r}) is not installed. "
        f"Install one with {_EXTRAS[name]}, or set KERAS_BACKEND to an installed backend "
        "(tensorflow, jax or torch)."
    )


def integer_dtype() -> str:
    """Return the dtype of integer state: ``"int64"``, or ``"int32"`` on JAX without x64.

    JAX stores 32-bit integers unless ``jax_enable_x64`` is on (``JAX_ENABLE_X64=1``); asking
    it for int64 warns and truncates. A clock in int32 counts up to 2**31 - 1 steps.
    """
    return "int64" if _wide() else "int32"


def wide_float_dtype() -> str:
    """Return the dtype the vocabulary's schedules compute in: ``"float64"``, or
    ``"float32"`` on JAX without x64 (asking it for float64 warns and truncates).

    Computed in float64 and rounded once to float32, a schedule gives the same float32 bits
    eagerly, inside a compiled step (whatever a graph optimizer reassociates, such as
    ``x / c`` into ``x * (1 / c)``), on a vector of steps and in NumPy.
    """
    return "float64" if _wide() else "float32"


def _wide() -> bool:
    """Whether the backend holds 64-bit numbers: all but JAX without ``jax_enable_x64``."""
    if current_backend() != "jax":
        return True
    import jax

    return bool(jax.config.read("jax_enable_x64"))


def float64_scope() -> contextlib.AbstractContextManager[Any]:
    """A scope in which ``keras.ops`` computes in float64: ``jax.enable_x64`` on JAX without
    x64 (a ``jax.jit`` step traced inside holds float64 ops)."""
    if wide_float_dtype() == "float64":
        return contextlib.nullcontext()
    import jax

    return jax.enable_x64(True)


def on_claim() -> None:
    """Called when an optimizer claims a clock: on JAX, teach Keras's trainer that the step
    may be in the model's and the optimizer's state (:mod:`hyperstep.backends.jax`)."""
    if current_backend() == "jax":
        from hyperstep.backends.jax import optimizer_copy_wins_in_fit

        optimizer_copy_wins_in_fit()


def distributes() -> bool:
    """Whether ``tf.distribute`` strategies can hold the state (the TensorFlow backend):
    metrics are reduced across replicas and variables read in their strategy's scope."""
    return current_backend() == "tensorflow"


def compile_reads(function: Any) -> Any:
    """``tf.function(function)`` on TensorFlow (for a function that only reads variables, so
    it traces once), else ``function`` itself."""
    if current_backend() != "tensorflow":
        return function
    import tensorflow as tf

    return tf.function(function, autograph=False)


@contextlib.contextmanager
def deterministic_ops() -> Iterator[None]:
    """TensorFlow's deterministic ops while inside (left as they were on exit); nothing on
    other backends. Reads the current setting through TensorFlow's private config."""
    if current_backend() != "tensorflow":
        yield
        return
    import tensorflow as tf

    from hyperstep.backends.versions import reach

    enabled, disable = reach("tensorflow.python.framework.config.is_op_determinism_enabled")
    was = enabled()
    tf.config.experimental.enable_op_determinism()
    try:
        yield
    finally:
        if not was:  # leave the process as it was (the tests run in one process)
            disable()
