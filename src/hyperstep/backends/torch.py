"""Torch: fused updates for ``hs.scheduled(..., fused=True)`` (opt-in).

Keras's torch Adam and AdamW (``keras/src/backend/torch/optimizers/torch_adam.py``) update
every variable with about ten ``torch._foreach_*`` calls, each a pass over all the weights
(plus a ``_foreach_mul_`` for the weight decay, and temporaries for ``g * g``, ``sqrt(v)``,
...). With ``fused=True``, ``hs.scheduled`` hands the values it computed for this update to
PyTorch's fused kernel (``torch._fused_adamw_``, or ``torch._fused_adam_`` without weight
decay: the kernels of ``torch.optim.AdamW(fused=True)``), one pass per tensor, grouped by
device, dtype and whether the variable decays (Keras's ``exclude_from_weight_decay``), once
per :class:`~hyperstep.Group` with that group's values. The kernel computes, with
``t = iterations + 1``:

``w <- w * (1 - lr * wd)``  (decoupled weight decay, as Keras's torch optimizers do it)
``m <- m + (1 - beta_1) * (g - m)``;  ``v <- beta_2 * v + (1 - beta_2) * g^2``
``w <- w - lr / (1 - beta_1^t) * m / (sqrt(v) / sqrt(1 - beta_2^t) + eps')``

with ``eps' = epsilon / sqrt(1 - beta_2^t)`` (computed in float64), so that the update is
Keras's ``w -= lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(v) + epsilon)`` term for
term (PyTorch's own Adam puts ``epsilon`` inside the bias-corrected denominator). It equals
``torch.optim.AdamW(fused=True)`` whose ``lr`` and ``eps`` are set to ``lr`` and ``eps'``
before each step, bitwise (tested); it equals Keras's update to float32 rounding (the
kernel's scalars are float64 and it orders the arithmetic differently), not bitwise: the
default, ``fused=False``, is bitwise the plain Keras optimizer. ``amsgrad`` uses the
kernel's ``max_exp_avg_sqs`` (Keras's ``velocity_hats``).

The values must be Python numbers for the kernel: on eager CPU torch they are
(``Hyperparameter.host_float``); elsewhere (the clock on a GPU) each is read back once per
update. Under ``torch.compile`` and inside ``keras.StatelessScope`` the update falls back to
Keras's own code. Other optimizers (SGD, RMSprop, ...) run Keras's own code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import torch

from hyperstep.backends import in_stateless_scope

try:  # Keras's torch optimizers (private): if they move, fused=True runs Keras's code
    from keras.src.backend.torch.optimizers import torch_adam
    from keras.src.backend.torch.optimizers.torch_optimizer import TorchOptimizer

    _KERAS_ADAM: Any = torch_adam.Adam._parallel_update_step
    _KERAS_DECAY: Any = TorchOptimizer._apply_weight_decay
except (ImportError, AttributeError):
    _KERAS_ADAM = _KERAS_DECAY = None

_KERNEL_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _adam_like(optimizer: Any) -> bool:
    """Whether ``optimizer`` runs Keras's torch Adam update (Adam, AdamW) and weight decay."""
    base = optimizer._hs_base
    return bool(
        _KERAS_ADAM is not None
        and getattr(base, "_parallel_update_step", None) is _KERAS_ADAM
        and base._apply_weight_decay is _KERAS_DECAY
    )


def decays_in_update(optimizer: Any) -> bool:
    """Whether :func:`group_update` replaces ``optimizer``'s weight decay (Adam, AdamW)."""
    return _adam_like(optimizer)


def decay(optimizer: Any, variable: Any, learning_rate: Any) -> None:
    """Not used on torch: :func:`group_update` decays (Keras's torch Adam has no per-variable
    ``update_step`` path); present for the backends' common interface."""


def adam_applies(optimizer: Any, gradient: Any, variable: Any) -> bool:
    """Always ``False`` on torch: the per-variable path is TensorFlow's (see ``group_update``)."""
    return False


def sgd_applies(optimizer: Any, gradient: Any, variable: Any) -> bool:
    """Always ``False`` on torch (see the module: Keras's SGD keeps its ``_foreach`` code)."""
    return False


def rmsprop_applies(optimizer: Any, gradient: Any, variable: Any) -> bool:
    """Always ``False`` on torch (PyTorch has no fused RMSprop kernel)."""
    return False


def _number(value: Any) -> float:
    """A hyperparameter value as a Python float (a tensor is read back: one sync on a GPU)."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, keras.Variable):
        value = value.value
    return float(value)


def applies(grads: Sequence[Any], variables: Sequence[Any]) -> bool:
    """Whether :func:`adam` can update ``variables``: eagerly (not under ``torch.compile``, not
    in a stateless scope), each gradient a dense tensor of its variable's dtype and device."""
    if torch.compiler.is_compiling() or in_stateless_scope():
        return False
    for variable, grad in zip(variables, grads, strict=True):
        param = variable.value
        if (
            not isinstance(grad, torch.Tensor)
            or grad.layout != torch.strided
            or grad.dtype != param.dtype
            or grad.device != param.device
            or param.dtype not in _KERNEL_DTYPES
        ):
            return False
    return True


def adam(
    grads: Sequence[Any],
    variables: Sequence[Any],
    slots: Sequence[Sequence[Any]],
    *,
    step: int,
    learning_rate: Any,
    beta_1: Any,
    beta_2: Any,
    epsilon: Any,
    weight_decay: Sequence[Any],
    amsgrad: bool,
) -> None:
    """Keras's Adam update of ``variables`` with PyTorch's fused kernel (see the module).

    ``slots``: per variable, its momentum and velocity (and velocity hat with ``amsgrad``)
    Keras variables; ``step``: ``t``, the update's 1-based count; ``weight_decay``: per
    variable, its decoupled weight decay (0 for none). Values may be numbers or tensors
    (read back once each). Call only where :func:`applies`.
    """
    lr, b1, b2 = _number(learning_rate), _number(beta_1), _number(beta_2)
    eps = _number(epsilon) / (1.0 - b2**step) ** 0.5  # Keras's epsilon, outside the correction
    buckets: dict[tuple[Any, Any, float], list[int]] = {}
    for index, (variable, decay) in enumerate(zip(variables, weight_decay, strict=True)):
        param = variable.value
        buckets.setdefault((param.device, param.dtype, _number(decay)), []).append(index)
    with torch.no_grad():
        for (device, _, decay), indices in buckets.items():
            t = torch.full((), float(step), dtype=torch.float32, device=device)
            kernel = torch._fused_adamw_ if decay != 0.0 else torch._fused_adam_
            kernel(
                [variables[i].value for i in indices],
                [grads[i] for i in indices],
                [slots[i][0].value for i in indices],
                [slots[i][1].value for i in indices],
                [slots[i][2].value for i in indices] if amsgrad else [],
                [t] * len(indices),
                lr=lr,
                beta1=b1,
                beta2=b2,
                weight_decay=decay,
                eps=eps,
                amsgrad=amsgrad,
                maximize=False,
            )


def group_update(
    optimizer: Any, grads: Sequence[Any], variables: Sequence[Any], learning_rate: Any
) -> bool:
    """Update ``variables`` (one group of a Keras Adam or AdamW wrapped by ``hs.scheduled``)
    with :func:`adam`; ``False`` (nothing done) where it does not apply."""
    if not _adam_like(optimizer) or not applies(grads, variables):
        return False
    amsgrad = bool(optimizer.amsgrad)
    slots = []
    for variable in variables:
        index = optimizer._get_variable_index(variable)
        found = [optimizer._momentums[index], optimizer._velocities[index]]
        slots.append([*found, optimizer._velocity_hats[index]] if amsgrad else found)
    weight_decay = 0.0 if optimizer.weight_decay is None else _number(optimizer.weight_decay)
    decays = [
        weight_decay if weight_decay != 0.0 and optimizer._use_weight_decay(v) else 0.0
        for v in variables
    ]
    adam(
        grads,
        variables,
        slots,
        step=int(optimizer.iterations.value) + 1,
        learning_rate=learning_rate,
        beta_1=optimizer.beta_1,
        beta_2=optimizer.beta_2,
        epsilon=optimizer.epsilon,
        weight_decay=decays,
        amsgrad=amsgrad,
    )
    return True
