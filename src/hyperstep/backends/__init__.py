"""The backend room: every per-backend decision hyperstep makes, behind one interface.

Clock, schedules, control and optim use ``keras.ops``, ``keras.Variable`` and the functions
here; only this package branches on ``keras.backend.backend()`` or touches private APIs
(those are in :mod:`hyperstep.backends.internals`). It imports nothing of Keras at import
time, so ``import hyperstep`` can check the backend before Keras loads.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
from collections.abc import Iterator
from typing import Any

_PACKAGES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}
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
    package = _PACKAGES.get(name)
    if package is None or importlib.util.find_spec(package) is not None:
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
    import keras

    if keras.backend.backend() != "jax":
        return "int64"
    import jax

    return "int64" if jax.config.read("jax_enable_x64") else "int32"


def in_stateless_scope() -> bool:
    """Whether Keras records assignments instead of making them (``keras.StatelessScope``).

    Keras's probe is looked up once and kept in a module list, not only behind
    ``functools.cache``: dynamo ignores that cache and would trace the version lookup in
    every compiled step that reads this.
    """
    if not _STATELESS_PROBE:
        _STATELESS_PROBE.append(_stateless_scope_probe())
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
def _stateless_scope_probe() -> Any:
    """Keras's private ``in_stateless_scope``, through the version check."""
    from hyperstep.backends.versions import reach

    return reach("keras.src.backend.common.stateless_scope.in_stateless_scope")


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
    (trace_state_clean, under_jit), get_stateless_scope, in_symbolic_scope = probes
    return trace_state_clean, under_jit, get_stateless_scope, in_symbolic_scope


def native_variable(variable: Any) -> Any:
    """The backend variable behind a Keras variable (TensorFlow: its ``tf.Variable``).

    TensorFlow's update paths hand optimizers either; other backends: ``variable``.
    """
    import keras

    if keras.backend.backend() == "tensorflow" and isinstance(variable, keras.Variable):
        return variable.value
    return variable


def require_tensorflow(feature: str) -> None:
    """Raise :class:`hyperstep.errors.BackendError` unless Keras runs on TensorFlow."""
    import keras

    from hyperstep.errors import BackendError

    if keras.backend.backend() != "tensorflow":
        raise BackendError(
            f"{feature} needs the TensorFlow backend; Keras is running on "
            f"{keras.backend.backend()!r}. Set KERAS_BACKEND=tensorflow before importing keras."
        )


def after(scalars: list[Any], tensors: list[Any]) -> list[Any]:
    """``tensors``, usable only once ``scalars`` are computed (in a TensorFlow graph).

    TensorFlow's executor runs whichever ops are ready, and the few cheap reads behind an
    optimizer's hyperparameter values queue behind full-size ops: measured on Adam, every
    variable's ``g - m`` and ``g**2`` ran first and waited, allocated all at once, for
    ``1 - beta_1``, with more page faults. Gradients gated on the values let each variable's
    update run from its first op to its assign while its temporaries are hot. ``tf.identity``
    forwards the buffer: nothing is copied. Eagerly and on other backends: ``tensors``.
    """
    import keras

    if keras.backend.backend() != "tensorflow":
        return tensors
    import tensorflow as tf

    if tf.executing_eagerly():
        return tensors
    dense = [i for i, t in enumerate(tensors) if isinstance(t, tf.Tensor)]
    if not dense:
        return tensors
    with tf.control_dependencies([s for s in scalars if tf.is_tensor(s)]):
        gated = tf.identity_n([tensors[i] for i in dense])  # one op for all
    found = list(tensors)
    for i, tensor in zip(dense, gated, strict=True):
        found[i] = tensor
    return found


def read_once(variable: Any) -> Any:
    """``variable``'s value as a tensor read once: on TensorFlow ``variable.value`` is the
    ``tf.Variable``, which every op using it reads again (one ``ReadVariableOp`` per use in
    a traced step); elsewhere, and inside ``keras.StatelessScope``, ``variable.value``."""
    value = variable.value
    if _backend() != "tensorflow":
        return value
    import tensorflow as tf

    return tf.convert_to_tensor(value) if isinstance(value, tf.Variable) else value


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


def on_claim() -> None:
    """Called when an optimizer claims a clock: on JAX, teach Keras's trainer that the step
    may be in the model's and the optimizer's state (:mod:`hyperstep.backends.jax`)."""
    import keras

    if keras.backend.backend() == "jax":
        from hyperstep.backends.jax import optimizer_copy_wins_in_fit

        optimizer_copy_wins_in_fit()


def add_one_in_place(variable: Any) -> Any:
    """``variable += 1`` in place on eager torch: the new value; ``None`` elsewhere.

    Cheaper than Keras's ``assign_add`` there (docs/backends.md)."""
    import keras

    if keras.backend.backend() != "torch" or in_stateless_scope():
        return None
    import torch

    with torch.no_grad():
        return variable.value.add_(1)


def raw(variable: Any) -> Any:
    """``variable``'s own backend tensor (Keras's private ``_value``), without the
    ``value`` property's work: for eager reads on the host (torch's hot path)."""
    try:
        return variable._value
    except AttributeError as error:
        from hyperstep.backends.versions import missing

        raise missing("keras.src.backend.torch.core.Variable._value", error) from error


def host_int(variable: Any) -> int | None:
    """A scalar integer variable as a Python int where reading it is free, else ``None``.

    Free: eager torch with the value on the CPU, outside ``torch.compile`` and
    ``keras.StatelessScope``.

    Reads the torch tensor directly (``_value``, cheaper than Keras's ``value``).
    """
    import keras

    if keras.backend.backend() != "torch":
        return None
    import torch

    value = raw(variable)
    if value.device.type != "cpu" or torch.compiler.is_compiling() or in_stateless_scope():
        return None
    return int(value)


def full_float32(step: Any, value: float) -> Any:
    """``full(shape(step), value)`` in float32 for a torch ``step``; ``None`` otherwise.

    Torch directly: the same tensor as ``keras.ops.full``, with less Python."""
    if _backend() != "torch":
        return None
    import torch

    if not isinstance(step, torch.Tensor):
        return None
    return torch.full(step.shape, value, dtype=torch.float32, device=step.device)


def fast_value(schedule: Any, step: Any, scale: Any, override: Any) -> Any:
    """``override if set else schedule(step) * scale`` for a float32 torch ``step``, else None.

    In 2-3 torch calls, the same bits as the ``keras.ops`` form (tested).

    (Each ``keras.ops`` call costs more Python on eager torch than its kernel: see
    docs/backends.md.) The schedule's ``value`` is called without ``__call__``'s casts.
    """
    if _backend() != "torch":
        return None
    import torch

    if not isinstance(step, torch.Tensor) or step.dtype != torch.float32:
        return None
    base = schedule.value(step)
    if not isinstance(base, torch.Tensor) or base.dtype != torch.float32:
        return None  # a schedule of another kind (a wrapped Keras one): the general path
    unset = override.value
    return torch.where(torch.isnan(unset), base * scale.value, unset)


def compiling() -> bool:
    """Whether ``torch.compile`` (dynamo) is tracing the caller: code that dynamo cannot
    trace (``threading``) must be skipped there."""
    probe = _compiling_probe[0] if _compiling_probe else _find_compiling_probe()
    return probe is not None and bool(probe())


#: ``torch.compiler.is_compiling`` on torch, else None (found once: an update asks ~10 times)
_compiling_probe: list[Any] = []


def _find_compiling_probe() -> Any:
    probe = None
    if _backend() == "torch":
        import torch

        probe = torch.compiler.is_compiling
    _compiling_probe.append(probe)
    return probe


@functools.cache
def _backend() -> str:
    import keras

    return str(keras.backend.backend())


# ---- what hs.scheduled hands Keras's optimizer code -------------------------------------------
def keras_scalar(
    value: Any, exact: Any, static: float | None, *, checked: bool, arithmetic: bool = False
) -> Any:
    """A hyperparameter's value for Keras's optimizer code, read the way Keras reads its own.

    ``value()`` is the float32 value, ``exact()`` the same in float64 with constants exact,
    ``static`` the constant (``None`` for a schedule), ``checked`` whether Keras tests it in a
    Python ``if`` while tracing, ``arithmetic`` whether it combines it with a number in Python
    (``1 - self.beta_1``). TensorFlow: an :class:`~hyperstep.backends.tensorflow.ExactScalar`
    (rounds like a Python float: bitwise Keras's updates); JAX, when checked or for a constant
    in arithmetic: a :class:`~hyperstep.backends.static.StaticScalar` (a tracer cannot answer
    ``if``; a constant's arithmetic with numbers rounds like its Python float, without
    float64: bitwise Keras's updates); torch, in arithmetic (under ``torch.compile``, in a
    stateless scope, the clock on a GPU): :func:`hyperstep.backends.torch.exact_scalar`;
    otherwise ``value()`` (a plain array, which every function takes; float32 arithmetic on
    a float32 value is what a Python float holding it gives, one operation at a time).
    ``exact=None``: always ``value()`` (the learning rate, a float32 variable in Keras).
    """
    name = _backend()
    if name == "tensorflow" and exact is not None:
        from hyperstep.backends.tensorflow import ExactScalar

        return ExactScalar(exact(), static)
    if name == "torch" and arithmetic and exact is not None:
        from hyperstep.backends.torch import exact_scalar

        return exact_scalar(value, exact)
    constant = arithmetic and exact is not None and static is not None
    if name == "jax" and (checked or constant):
        from hyperstep.backends.static import StaticScalar

        return StaticScalar(value(), static, exact=constant)
    return value()


def scalar_tensor(value: Any) -> Any:
    """The tensor behind a value from :func:`keras_scalar` (itself for a plain tensor)."""
    from hyperstep.backends.static import StaticNumber, StaticScalar

    if isinstance(value, StaticScalar):
        return value.value
    if isinstance(value, StaticNumber):
        return value.tensor  # type: ignore[attr-defined]
    return value


def in_dtype(value: Any, dtype: Any) -> Any:
    """A value from :func:`keras_scalar` (or a Python number) as a scalar of ``dtype``,
    rounded once: a Python float or an ExactScalar's float64 directly, like Keras's floats."""
    from keras import ops

    from hyperstep.backends.static import StaticNumber, StaticScalar

    if isinstance(value, (int, float)):
        return ops.convert_to_tensor(value, dtype)
    if isinstance(value, StaticScalar):
        return ops.cast(value.value, dtype)
    if isinstance(value, StaticNumber):  # TensorFlow's ExactScalar: its conversion
        import tensorflow as tf

        return tf.convert_to_tensor(value, dtype)
    return ops.cast(value, dtype)


def graph_key() -> Any:
    """The graph values are being built in (TensorFlow's default graph), else ``None``:
    values cached for one update are kept per graph."""
    if _backend() != "tensorflow":
        return None
    import tensorflow as tf

    return tf.compat.v1.get_default_graph()


def graph_key_function() -> Any:
    """:func:`graph_key` as a function chosen once (it is read per value on eager torch)."""
    if _backend() != "tensorflow":
        return _no_graph
    import tensorflow as tf

    return tf.compat.v1.get_default_graph


def _no_graph() -> None:
    return None


def builds_graph() -> bool:
    """Whether ops are being recorded into a TensorFlow graph (so :func:`after` orders them)."""
    if _backend() != "tensorflow":
        return False
    import tensorflow as tf

    return not tf.executing_eagerly()


def distributes() -> bool:
    """Whether ``tf.distribute`` strategies can hold the state (the TensorFlow backend):
    metrics are reduced across replicas and variables read in their strategy's scope."""
    return _backend() == "tensorflow"


def compile_reads(function: Any) -> Any:
    """``tf.function(function)`` on TensorFlow (for a function that only reads variables, so
    it traces once), else ``function`` itself."""
    if _backend() != "tensorflow":
        return function
    import tensorflow as tf

    return tf.function(function, autograph=False)


@contextlib.contextmanager
def deterministic_ops() -> Iterator[None]:
    """TensorFlow's deterministic ops while inside (left as they were on exit); nothing on
    other backends. Reads the current setting through TensorFlow's private config."""
    if _backend() != "tensorflow":
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


def trains_statelessly() -> bool:
    """Whether Keras trains statelessly (JAX): only ``optimizer.variables`` go into and out of
    a jitted step, so a clock's step and hyperparameter state read there must be among them."""
    return _backend() == "jax"


def optimizer_mixins() -> tuple[type, ...]:
    """Backend mixins for ``hs.scheduled``'s classes (TensorFlow: one ``iterations`` read)."""
    if _backend() != "tensorflow":
        return ()
    from hyperstep.backends.tensorflow import SharedIterations

    return (SharedIterations,)


def fused_updates() -> Any:
    """The module of fused updates for ``hs.scheduled(..., fused=True)``:
    :mod:`hyperstep.backends.tensorflow` (one-pass ``ResourceApply*`` kernels per variable),
    :mod:`hyperstep.backends.torch` (PyTorch's multi-tensor fused kernels per group), or
    ``None`` on JAX, where XLA already fuses Keras's update into one pass."""
    name = _backend()
    if name == "tensorflow":
        from hyperstep.backends import tensorflow

        return tensorflow
    if name == "torch":
        from hyperstep.backends import torch

        return torch
    return None


def adam_pass() -> Any:
    """TensorFlow's one-pass Adam step without a first moment
    (:func:`hyperstep.backends.tensorflow.adam_pass`, ``ResourceApplyAdam``), else ``None``."""
    if _backend() != "tensorflow":
        return None
    from hyperstep.backends import tensorflow

    return tensorflow.adam_pass


def multi_tensor_adam() -> Any:
    """The module with PyTorch's fused multi-tensor Adam (``applies``, ``adam``:
    :mod:`hyperstep.backends.torch`) on torch, else ``None``."""
    if _backend() != "torch":
        return None
    from hyperstep.backends import torch

    return torch
