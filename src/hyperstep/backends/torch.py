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
from keras.src.backend.torch.optimizers import torch_adam
from keras.src.backend.torch.optimizers.torch_optimizer import TorchOptimizer

from hyperstep.backends import in_stateless_scope

_KERNEL_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def _adam_like(optimizer: Any) -> bool:
    """Whether ``optimizer`` runs Keras's torch Adam update (Adam, AdamW) and weight decay."""
    base = optimizer._hs_base
    return bool(
        getattr(base, "_parallel_update_step", None) is torch_adam.Adam._parallel_update_step
        and base._apply_weight_decay is TorchOptimizer._apply_weight_decay
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


def _number(value: Any) -> float:
    """A hyperparameter value as a Python float (a tensor is read back: one sync on a GPU)."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, keras.Variable):
        value = value.value
    return float(value)


def group_update(
    optimizer: Any, grads: Sequence[Any], variables: Sequence[Any], learning_rate: Any
) -> bool:
    """Update ``variables`` (one group) with PyTorch's fused Adam kernel; ``False`` (nothing
    done) where it does not apply: not Keras's Adam or AdamW, ``torch.compile``, a stateless
    scope, or a gradient whose dtype, device or layout the kernel does not take."""
    if not _adam_like(optimizer) or torch.compiler.is_compiling() or in_stateless_scope():
        return False
    params = [v.value for v in variables]
    for param, grad in zip(params, grads, strict=True):
        if (
            not isinstance(grad, torch.Tensor)
            or grad.layout != torch.strided
            or grad.dtype != param.dtype
            or grad.device != param.device
            or param.dtype not in _KERNEL_DTYPES
        ):
            return False
    lr = _number(learning_rate)
    beta_1 = _number(optimizer.beta_1)
    beta_2 = _number(optimizer.beta_2)
    weight_decay = 0.0 if optimizer.weight_decay is None else _number(optimizer.weight_decay)
    iterations = optimizer.iterations.value
    t = int(iterations) + 1 if iterations.device.type == "cpu" else None
    # Keras's epsilon outside the bias correction: eps' = eps / sqrt(1 - beta_2^t)
    epsilon = _number(optimizer.epsilon)
    amsgrad = bool(optimizer.amsgrad)
    buckets: dict[tuple[Any, Any, bool], list[int]] = {}
    for index, (variable, param) in enumerate(zip(variables, params, strict=True)):
        decays = weight_decay != 0.0 and optimizer._use_weight_decay(variable)
        buckets.setdefault((param.device, param.dtype, decays), []).append(index)
    with torch.no_grad():
        for (device, _, decays), indices in buckets.items():
            chosen = [variables[i] for i in indices]
            slots = [optimizer._get_variable_index(v) for v in chosen]
            if t is None:  # the counter on a device: one read back per update and bucket
                t = int(iterations) + 1
            step = torch.full((), float(t), dtype=torch.float32, device=device)
            kernel = torch._fused_adamw_ if decays else torch._fused_adam_
            kernel(
                [params[i] for i in indices],
                [grads[i] for i in indices],
                [optimizer._momentums[s].value for s in slots],
                [optimizer._velocities[s].value for s in slots],
                [optimizer._velocity_hats[s].value for s in slots] if amsgrad else [],
                [step] * len(indices),
                lr=lr,
                beta1=beta_1,
                beta2=beta_2,
                weight_decay=weight_decay if decays else 0.0,
                eps=epsilon / (1.0 - beta_2**t) ** 0.5,
                amsgrad=amsgrad,
                maximize=False,
            )
    return True
