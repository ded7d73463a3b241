"""One-pass updates for ``hs.scheduled(..., fused=True)`` on TensorFlow (opt-in).

TensorFlow-specific (``tf.raw_ops``). Keras writes each optimizer's update as separate
elementwise TensorFlow ops, each a pass over the weights. When at least one hyperparameter
of an ``hs.scheduled(..., fused=True)`` optimizer is read, two updates are done in fewer
passes, with the same formulas (not bitwise Keras's: the default, ``fused=False``, is):

* decoupled weight decay, ``w <- w * (1 - lr * wd)`` (torch's form: one multiply) instead of
  Keras's ``w <- w - w * wd * lr`` (two multiplies and a subtraction), just before the
  variable's own update;
* Adam and AdamW (without ``amsgrad``), with TensorFlow's fused kernel
  ``ResourceApplyAdam``:

  ``alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)``, ``t = iterations + 1``
  ``m += (g - m) * (1 - beta_1)``;  ``v += (g^2 - v) * (1 - beta_2)``
  ``w -= m * alpha / (sqrt(v) + epsilon)``

  which is Keras's ``Adam.update_step`` term for term, computed in one pass instead of about
  twelve. The scalars are rounded to the variable's dtype first (``1 - beta_1`` in float32;
  Keras computes it from a Python float), so values agree to float32 rounding, not bitwise.

Without ``fused=True``, ``hs.scheduled`` runs Keras's own code and is bitwise the plain
optimizer with the same values set before each step.
"""

from __future__ import annotations

from typing import Any

from hyperstep._backend import native_variable, require_tensorflow

require_tensorflow("hyperstep.optim._fused (TensorFlow's fused update kernels)")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from hyperstep.optim._exact import ExactScalar  # noqa: E402

_KERNEL_DTYPES = (tf.float32, tf.float64)


def _scalar(value: Any, dtype: Any) -> Any:
    """``value`` in ``dtype``: an :class:`ExactScalar` through its conversion (one cast per
    graph and dtype, shared by every variable's update), a tensor cast."""
    if isinstance(value, ExactScalar):
        return tf.convert_to_tensor(value, dtype)
    return tf.cast(value, dtype)


def decays_in_update(optimizer: Any) -> bool:
    """Whether :func:`decay` replaces ``optimizer``'s weight decay: Keras's standard one
    (Muon, which decays some variables with its own rate, keeps its own)."""
    base = keras.optimizers.Optimizer._apply_weight_decay
    return bool(optimizer._hs_base._apply_weight_decay is base)


def decay(optimizer: Any, variable: Any, learning_rate: Any) -> None:
    """``w <- w * (1 - lr * wd)`` if ``optimizer`` decays ``variable``; call it just before
    the variable's update, in place of Keras's ``_apply_weight_decay`` for all variables."""
    weight_decay = optimizer.weight_decay
    if weight_decay is None or not optimizer._use_weight_decay(variable):
        return
    var = native_variable(variable)
    keep = 1 - _scalar(learning_rate, var.dtype) * _scalar(weight_decay, var.dtype)
    var.assign(var * keep)


def adam_applies(optimizer: Any, gradient: Any, variable: Any) -> bool:
    """Whether :func:`adam` computes ``optimizer``'s update of ``variable``.

    Keras's ``Adam.update_step`` itself (Adam, AdamW, not a subclass that overrides it),
    without ``amsgrad``, a dense gradient and a float32 or float64 variable.
    """
    return (
        optimizer._hs_base.update_step is keras.optimizers.Adam.update_step
        and not optimizer.amsgrad
        and isinstance(gradient, tf.Tensor)
        and native_variable(variable).dtype in _KERNEL_DTYPES
    )


def adam(optimizer: Any, gradient: Any, variable: Any, learning_rate: Any) -> Any:
    """Keras's Adam update of ``variable`` with ``ResourceApplyAdam`` (see the module)."""
    var = native_variable(variable)
    dtype = var.dtype
    t = tf.cast(optimizer.iterations + 1, dtype)
    beta_1 = _scalar(optimizer.beta_1, dtype)
    beta_2 = _scalar(optimizer.beta_2, dtype)
    index = optimizer._get_variable_index(variable)
    return tf.raw_ops.ResourceApplyAdam(
        var=var.handle,
        m=native_variable(optimizer._momentums[index]).handle,
        v=native_variable(optimizer._velocities[index]).handle,
        beta1_power=tf.pow(beta_1, t),
        beta2_power=tf.pow(beta_2, t),
        lr=_scalar(learning_rate, dtype),
        beta1=beta_1,
        beta2=beta_2,
        epsilon=_scalar(optimizer.epsilon, dtype),
        grad=tf.cast(gradient, dtype),
    )
