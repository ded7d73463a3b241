"""What an optimizer's update needs from the backend: gating, fused kernels.

(The form of its values: :mod:`hyperstep.backends.keras_forms`.)
``after(scalars, tensors)`` orders a TensorFlow graph's updates after their values;
:func:`fused_updates`, :func:`adam_pass` and :func:`multi_tensor_adam` name the backend's
fused kernels, ``None`` where there are none.
"""

from __future__ import annotations

from typing import Any

from hyperstep.backends.scopes import current_backend


def after(scalars: list[Any], tensors: list[Any]) -> list[Any]:
    """``tensors``, usable only once ``scalars`` are computed (in a TensorFlow graph).

    TensorFlow's executor runs whichever ops are ready, and full-size ops would wait,
    allocated, for the cheap reads behind the values; gated, each variable's update runs
    from its first op to its assign while its temporaries are hot. ``tf.identity`` forwards
    the buffer: nothing is copied. Eagerly and on other backends: ``tensors``.
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
