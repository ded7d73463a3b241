"""What an optimizer's update needs from the backend: scalars, gating, fused kernels.

``keras_number(name, cls, value, exact, static)`` is a hyperparameter's value in the one
form this backend hands Keras's optimizer code (bitwise Keras's updates; its per-class
tables are keyed by :func:`~hyperstep.backends.optimizer_classes.keras_base_name`);
``after(scalars, tensors)`` orders a TensorFlow graph's updates after their values;
:func:`fused_updates`, :func:`adam_pass` and :func:`multi_tensor_adam` name the backend's
fused kernels, ``None`` where there are none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hyperstep.backends.optimizer_classes import keras_base_name
from hyperstep.backends.scopes import current_backend


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


# ---- what hs.scheduled hands Keras's optimizer code -------------------------------------------
def keras_number(
    name: str,
    cls: type,
    value: Any,
    exact: Any,
    static: float | None,
    pieces: Callable[[], tuple[float, ...]] = tuple,
) -> Any:
    """Hyperparameter ``name`` of optimizer class ``cls`` in the one form this backend hands
    Keras's optimizer code (the table in :mod:`hyperstep.backends`).

    ``value()`` is the float32 value, ``exact()`` the same in float64 with a constant exact
    (``None`` for the learning rate, which reaches Keras as Keras's own float32 variable
    would: ``value()``, on TensorFlow as a
    :class:`~hyperstep.backends.tensorflow.KerasRate`, whose operators are Keras's ops as the
    variable's are), ``static`` the constant (``None`` for a schedule), ``pieces()`` the
    constants a schedule takes whole (on JAX their arithmetic with numbers rounds like their
    Python floats, as a constant's does; ``()``: ``static`` alone), called only there.

    - TensorFlow: an :class:`~hyperstep.backends.tensorflow.ExactScalar` (a Python float's
      semantics: rounded once to the dtype it meets, ``if``s answered by ``static``);
    - JAX: a :class:`~hyperstep.backends.static.StaticScalar` (``if``s answered by
      ``static``; a constant's arithmetic with numbers rounds like its Python float; weakly
      typed, so promoted to the variable's dtype as a Python float), but
      the (weakly typed) float32 array for the names of
      :data:`hyperstep.backends.static.ARRAYS_ONLY`
      (Keras hands them to a JAX function that takes arrays only);
    - torch (where an update is not eager on the CPU, which takes Python numbers:
      :func:`hyperstep.optim.resolve.keras_value`): ``exact()`` for the names of
      :data:`hyperstep.backends.torch.PYTHON_NUMBERS` (Keras combines them with numbers in
      Python), else ``value()``.
    """
    backend = current_backend()
    if exact is None:  # the learning rate
        if backend == "tensorflow":
            from hyperstep.backends.tensorflow import KerasRate

            return KerasRate(value())
        return value()
    if backend == "tensorflow":
        from hyperstep.backends.tensorflow import ExactScalar

        return ExactScalar(exact(), static)
    if backend == "jax":
        from hyperstep.backends.static import ARRAYS_ONLY, StaticScalar, weak

        if name in ARRAYS_ONLY.get(keras_base_name(cls) or "", ()):
            return weak(value())  # promoted as a Python float: to the other's dtype
        return StaticScalar(value(), static, exact=pieces() or static is not None)
    if backend == "torch":
        from hyperstep.backends.torch import exact_scalar, python_numbers

        if name in python_numbers(cls):
            return exact_scalar(value, exact)
    return value()


def scalar_tensor(value: Any) -> Any:
    """The tensor behind a value from :func:`keras_number` (itself for a plain tensor)."""
    from hyperstep.backends.static import StaticNumber, StaticScalar

    if isinstance(value, StaticScalar):
        return value.value
    if isinstance(value, StaticNumber):
        return value.tensor  # type: ignore[attr-defined]
    if current_backend() == "tensorflow":
        from hyperstep.backends.tensorflow import KerasRate

        if isinstance(value, KerasRate):
            return value.tensor
    return value


def in_dtype(value: Any, dtype: Any) -> Any:
    """A value from :func:`keras_number` (or a Python number) as a scalar of ``dtype``,
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


def trains_statelessly() -> bool:
    """Whether Keras trains statelessly (JAX): only ``optimizer.variables`` go into and out of
    a jitted step, so a clock's step and hyperparameter state read there must be among them."""
    return current_backend() == "jax"


def optimizer_mixins() -> tuple[type, ...]:
    """Backend mixins for ``hs.scheduled``'s classes (TensorFlow: one ``iterations`` read)."""
    if current_backend() != "tensorflow":
        return ()
    from hyperstep.backends.tensorflow import SharedIterations

    return (SharedIterations,)


def fused_updates() -> Any:
    """The module of fused updates for ``hs.scheduled(..., fused=True)``:
    :mod:`hyperstep.backends.tensorflow` (one-pass ``ResourceApply*`` kernels per variable),
    :mod:`hyperstep.backends.torch` (PyTorch's multi-tensor fused kernels per group), or
    ``None`` on JAX, where XLA already fuses Keras's update into one pass."""
    name = current_backend()
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
    if current_backend() != "tensorflow":
        return None
    from hyperstep.backends import tensorflow

    return tensorflow.adam_pass


def multi_tensor_adam() -> Any:
    """The module with PyTorch's fused multi-tensor Adam (``applies``, ``adam``:
    :mod:`hyperstep.backends.torch`) on torch, else ``None``."""
    if current_backend() != "torch":
        return None
    from hyperstep.backends import torch

    return torch
