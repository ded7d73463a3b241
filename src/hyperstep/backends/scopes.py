"""Where code is running: a stateless scope, a symbolic build, a jit trace, a graph, a compile.

``concrete(x)`` is whether ``x`` can be read as a Python number now: not inside a
``keras.StatelessScope``, a TensorFlow graph, a JAX trace or ``torch.compile``; each other
function answers one of those questions (:func:`unmapped_in_jit` lists the variables a jit
trace would freeze, :func:`graph_key_function` names the graph values are built in). Private probes
are looked up once, through :mod:`hyperstep.backends.versions`; :func:`current_backend` is
Keras's backend, read once (:func:`require_tensorflow` raises unless it is TensorFlow).
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def current_backend() -> str:
    """The name of the Keras backend in use: ``"tensorflow"``, ``"jax"`` or ``"torch"``."""
    import keras

    return str(keras.backend.backend())


def require_tensorflow(feature: str) -> None:
    """Raise :class:`hyperstep.errors.BackendError` unless Keras runs on TensorFlow."""
    if current_backend() != "tensorflow":
        from hyperstep.errors import BackendError

        raise BackendError(
            f"{feature} needs the TensorFlow backend; Keras is running on "
            f"{current_backend()!r}. Set KERAS_BACKEND=tensorflow before importing keras."
        )


def in_stateless_scope() -> bool:
    """Whether Keras records assignments instead of making them (``keras.StatelessScope``).

    Keras's probe is looked up once and kept in a module list, not only behind
    ``functools.cache``: dynamo ignores that cache and would trace the version lookup in
    every compiled step that reads this.
    """
    if not _STATELESS_PROBE:
        from hyperstep.backends.versions import reach

        _STATELESS_PROBE.append(
            reach("keras.src.backend.common.stateless_scope.in_stateless_scope")
        )
    return bool(_STATELESS_PROBE[0]())


def building_model() -> bool:
    """Whether Keras is inferring shapes symbolically (``compute_output_spec``: a functional
    model being built, ``model.build``); values computed there are thrown away. Reads
    ``keras.src.backend.common.symbolic_scope`` (private; pinned in
    ``tests/backends/test_internals.py``); False if it moves."""
    from hyperstep.backends import versions

    in_symbolic_scope = versions.reach(
        "keras.src.backend.common.symbolic_scope.in_symbolic_scope", fallback=None
    )
    return bool(in_symbolic_scope is not None and in_symbolic_scope())


def unmapped_in_jit(variables: list[Any]) -> list[Any]:
    """The ``variables`` a ``jax.jit`` trace being recorded would read as constants.

    Inside a staged JAX trace (``jax.jit``, ``lax.scan``, ...; not Keras's symbolic shape
    inference), a Keras variable read outside a ``keras.StatelessScope`` that maps it gives
    its current array, which the compiled function then keeps. Empty outside such a trace
    and on other backends. Uses JAX's private trace state (``jax._src.core``); if that
    changes, nothing is reported.
    """
    probes = _jax_probes()
    if probes is None:
        return []
    trace_state_clean, under_jit, get_stateless_scope, in_symbolic_scope = probes
    if trace_state_clean() or in_symbolic_scope() or not under_jit():
        return []
    scope = get_stateless_scope()
    if scope is None:
        return list(variables)
    return [v for v in variables if scope.get_current_value(v) is None]


_STATELESS_PROBE: list[Any] = []  # Keras's in_stateless_scope, once looked up


@functools.cache
def _jax_probes() -> tuple[Any, Any, Any, Any] | None:
    """JAX's trace state and Keras's scope getters, or ``None`` (not JAX, or moved)."""
    import keras

    if keras.backend.backend() != "jax":
        return None
    from hyperstep.backends.versions import reach

    common = "keras.src.backend.common"
    probes = (
        reach("jax._src.core.trace_state_clean/unsafe_am_i_under_a_jit", fallback=None),
        reach(f"{common}.stateless_scope.get_stateless_scope", fallback=None),
        reach(f"{common}.symbolic_scope.in_symbolic_scope", fallback=None),
    )
    if any(probe is None for probe in probes):
        return None  # a diagnostic only: without these, nothing is reported
    return (*probes[0], probes[1], probes[2])


def concrete(value: Any) -> bool:
    """Whether ``value`` (a number or an array) can be read as a Python number now.

    False in a TensorFlow graph, for a JAX tracer, under ``torch.compile`` and inside a
    ``keras.StatelessScope``; True for Python numbers outside those.
    """
    import keras

    if in_stateless_scope():
        return False
    name = keras.backend.backend()
    if name == "tensorflow":
        import tensorflow as tf

        return bool(tf.executing_eagerly())
    if name == "jax":
        import jax

        return not isinstance(value, jax.core.Tracer)
    if name == "torch":
        import torch

        return not torch.compiler.is_compiling()
    return True


def compiling() -> bool:
    """Whether ``torch.compile`` runs the caller: traced by dynamo, or run eagerly in a frame
    it gave up on (a graph break under a context manager) whose callees it compiles, which
    would guard on a Python number made there; code dynamo cannot trace (``threading``) is
    skipped there. Eagerly, torch's own test (``set_stance`` refuses): a frame callback set."""
    if not _compiling_probe:
        probes = None
        if current_backend() == "torch":
            import torch

            from hyperstep.backends.versions import reach

            callback = reach("torch._C._dynamo.eval_frame.get_eval_frame_callback")
            probes = (torch.compiler.is_compiling, callback)
        _compiling_probe.append(probes)
    probes = _compiling_probe[0]
    return probes is not None and (probes[0]() or probes[1]() not in (None, False))


#: torch's ``is_compiling`` and frame callback, else None (found once: an update asks ~10 times)
_compiling_probe: list[Any] = []


def xla_computes() -> bool:
    """Whether XLA computes the ops called now: always on JAX (eager ops too), inside
    ``tf.function(jit_compile=True)`` or Keras's ``jit_compile`` on TensorFlow."""
    backend = current_backend()
    return backend == "jax" or (backend == "tensorflow" and under_xla())


def under_xla() -> bool:
    """Whether the code being traced will be compiled by XLA (``tf.function(jit_compile=True)``,
    Keras's ``jit_compile=True``): TensorFlow's enclosing XLA context, reached through
    :data:`~hyperstep.backends.versions.PRIVATE_APIS` (``False`` if it moved).

    Example:
        >>> import tensorflow as tf
        >>> under_xla(), bool(tf.function(under_xla, jit_compile=True)())
        (False, True)
    """
    from hyperstep.backends.versions import reach

    context = reach(_XLA_CONTEXT, fallback=None)
    return context is not None and context() is not None


_XLA_CONTEXT = "tensorflow.__internal__.get_enclosing_xla_context"


def graph_key_function() -> Any:
    """The function that returns the graph values are being built in (TensorFlow's default
    graph), else ``None`` (values cached for one update are kept per graph); chosen once,
    as it is read per value on eager torch."""
    if current_backend() != "tensorflow":
        return _no_graph
    import tensorflow as tf

    return tf.compat.v1.get_default_graph


def _no_graph() -> None:
    return None


def builds_graph() -> bool:
    """Whether ops are being recorded into a TensorFlow graph (so :func:`after` orders them)."""
    if current_backend() != "tensorflow":
        return False
    import tensorflow as tf

    return not tf.executing_eagerly()
