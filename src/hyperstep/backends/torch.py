"""Torch: fused updates for ``hs.scheduled`` and ``hs.StepOptimizer`` with ``fused=True``.

PyTorch's fused Adam kernel (``torch._fused_adamw_``, or ``torch._fused_adam_`` for the
variables that do not decay) takes the values of the update, one pass per tensor, grouped
by device, dtype and weight decay, once per :class:`~hyperstep.Group`; with ``t =
iterations + 1``, ``eps = epsilon / sqrt(1 - beta_2^t)`` (in float64) makes it Keras's
formula. Under ``torch.compile`` the update is one custom op, ``hyperstep::fused_adam_``,
which reads the values back when the step runs (:func:`adam` chooses). The numerics, the
fallbacks and the timings: docs/backends.md, "Fused updates".

Private APIs used here, each pinned by ``tests/backends/test_internals.py``: Keras's torch
``Adam._parallel_update_step`` and ``TorchOptimizer._apply_weight_decay`` (identity checks),
the optimizers' ``_momentums``/``_velocities``/``_velocity_hats``/``_get_variable_index``/
``_use_weight_decay``, ``torch._fused_adam_``/``_fused_adamw_`` and
``torch.utils._foreach_utils._get_fused_kernels_supported_devices``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import keras
import torch

from hyperstep.backends import versions
from hyperstep.backends.scopes import in_stateless_scope

# Keras's torch optimizers (private): if they move, fused=True runs Keras's code
_KERAS_ADAM, _KERAS_DECAY = versions.reach(
    "keras.src.backend.torch.optimizers.torch_adam.Adam._parallel_update_step/"
    "TorchOptimizer._apply_weight_decay",
    fallback=(None, None),
)
# the devices with fused Adam kernels, as torch.optim decides (private)
_devices = versions.reach(
    "torch.utils._foreach_utils._get_fused_kernels_supported_devices", fallback=None
)
_FUSED_DEVICES: tuple[str, ...] = tuple(_devices()) if _devices else ("cuda", "cpu")

_KERNEL_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16)

#: whether Keras's torch device holds float64 (not MPS), read once
#: (:func:`hyperstep.backends.keras_forms.torch_number`)
KERAS_FLOAT64 = keras.backend.backend() != "torch" or keras.ops.zeros(()).device.type != "mps"


def decays_in_update(optimizer: Any) -> bool:
    """Whether ``optimizer`` runs Keras's torch Adam update (Adam, AdamW) and weight decay,
    so that :func:`group_update` replaces its weight decay."""
    base = optimizer._hs_base
    return bool(
        _KERAS_ADAM is not None
        and getattr(base, "_parallel_update_step", None) is _KERAS_ADAM
        and base._apply_weight_decay is _KERAS_DECAY
    )


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


def kernels() -> bool:
    """Whether this torch has the fused Adam kernels (``torch._fused_adam_``/``_adamw_``)."""
    return hasattr(torch, "_fused_adam_") and hasattr(torch, "_fused_adamw_")


def applies(grads: Sequence[Any], variables: Sequence[Any]) -> bool:
    """Whether :func:`adam` can update ``variables``: outside a stateless scope, each gradient
    a dense tensor of its variable's dtype and device, on a device with PyTorch's fused Adam
    kernels (``torch.optim``'s list). Eager and under ``torch.compile`` alike (the metadata
    read here becomes dynamo's guards)."""
    if in_stateless_scope() or not kernels():
        return False
    for variable, grad in zip(variables, grads, strict=True):
        param = variable.value
        if (
            not isinstance(grad, torch.Tensor)
            or grad.layout != torch.strided
            or grad.dtype != param.dtype
            or grad.device != param.device
            or param.dtype not in _KERNEL_DTYPES
            or param.device.type not in _FUSED_DEVICES
        ):
            return False
    return True


def _launch(tensors: Sequence[Sequence[Any]], scalars: Sequence[float], amsgrad: bool) -> None:
    """One fused kernel call per device and dtype; ``tensors``: parameters, gradients, first
    and second moments, maximum second moments (``[]`` without ``amsgrad``), one list each;
    ``scalars``: ``t``, learning rate, ``beta_1``, ``beta_2``, ``epsilon``, weight decay."""
    step, lr, beta_1, beta_2, epsilon, decay = scalars
    eps = epsilon / (1.0 - beta_2**step) ** 0.5  # Keras's epsilon, outside the correction
    kernel = torch._fused_adamw_ if decay != 0.0 else torch._fused_adam_
    buckets: dict[tuple[Any, Any], list[int]] = {}
    for index, param in enumerate(tensors[0]):
        buckets.setdefault((param.device, param.dtype), []).append(index)
    with torch.no_grad():
        for (device, _), indices in buckets.items():
            t = torch.full((), float(step), dtype=torch.float32, device=device)
            params, grads, exp_avgs, exp_avg_sqs = ([f[i] for i in indices] for f in tensors[:4])
            kernel(
                params,
                grads,
                exp_avgs,
                exp_avg_sqs,
                [tensors[4][i] for i in indices] if amsgrad else [],
                [t] * len(indices),
                lr=lr,
                beta1=beta_1,
                beta2=beta_2,
                weight_decay=decay,
                eps=eps,
                amsgrad=amsgrad,
                maximize=False,
            )


def adam(
    grads: Sequence[Any],
    variables: Sequence[Any],
    slots: Sequence[Sequence[Any]],
    *,
    step: Any,
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
    variable, its decoupled weight decay (0 for none). Values may be numbers or tensors:
    eagerly each is read back once; under ``torch.compile`` they stay tensors and go to
    :func:`_fused_adam_op` (read back when the compiled step runs), one call per distinct
    weight decay (the same number or the same tensor object). Call only where
    :func:`applies`. Used by ``hs.scheduled`` and ``hs.StepOptimizer`` with ``fused=True``.
    """
    compiling = torch.compiler.is_compiling()
    common: list[Any] = [step, learning_rate, beta_1, beta_2, epsilon]
    if compiling:
        common = [_float64(value) for value in common]
    else:
        common = [int(_number(step)), *(_number(value) for value in common[1:])]
    by_decay: dict[Any, tuple[Any, list[int]]] = {}
    for index, decay in enumerate(weight_decay):
        if isinstance(decay, (int, float)) or not compiling:
            key: Any = _number(decay)  # eager: the value read back; compiled: a number
            decay = key
        else:
            key = id(decay)  # a tensor (the same object for the same decay)
        by_decay.setdefault(key, (decay, []))[1].append(index)
    for decay, indices in by_decay.values():
        tensors = [[variables[i].value for i in indices], [grads[i] for i in indices]]
        tensors += [[slots[i][k].value for i in indices] for k in range(len(slots[indices[0]]))]
        if not amsgrad:
            tensors.append([])
        if compiling:  # one opaque op: no `.item()` while dynamo traces
            _fused_adam_op(*tensors, torch.stack([*common, _float64(decay)]), amsgrad)
        else:
            _launch(tensors, [*common, decay], amsgrad)


@torch.library.custom_op(
    "hyperstep::fused_adam_",
    mutates_args=("params", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"),
    schema="(Tensor(a!)[] params, Tensor[] grads, Tensor(b!)[] exp_avgs, "
    "Tensor(c!)[] exp_avg_sqs, Tensor(d!)[] max_exp_avg_sqs, Tensor scalars, bool amsgrad) -> ()",
)
def _fused_adam_op(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    exp_avgs: list[torch.Tensor],
    exp_avg_sqs: list[torch.Tensor],
    max_exp_avg_sqs: list[torch.Tensor],
    scalars: torch.Tensor,
    amsgrad: bool,
) -> None:
    """:func:`_launch` as one opaque op for ``torch.compile``: ``scalars`` (float64, in
    :func:`_launch`'s order) is read back here, when the compiled step runs, not when dynamo
    traces it (no ``.item()`` in the graph)."""
    _launch([params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs], scalars.tolist(), amsgrad)


_fused_adam_op.register_fake(lambda *args: None)  # mutates its inputs, returns nothing


def _float64(value: Any) -> torch.Tensor:
    """``value`` (a number, a Keras variable or a tensor) as a float64 CPU scalar tensor."""
    if isinstance(value, keras.Variable):
        value = value.value
    return torch.as_tensor(value).to(device="cpu", dtype=torch.float64).reshape(())


def group_update(
    optimizer: Any, grads: Sequence[Any], variables: Sequence[Any], learning_rate: Any
) -> bool:
    """Update ``variables`` (one group of a Keras Adam or AdamW wrapped by ``hs.scheduled``)
    with :func:`adam` (eagerly or under ``torch.compile``, where the values stay tensors);
    ``False`` (nothing done) where it does not apply."""
    if not decays_in_update(optimizer) or not applies(grads, variables):
        return False
    amsgrad = bool(optimizer.amsgrad)
    slots = []
    for variable in variables:
        index = optimizer._get_variable_index(variable)
        found = [optimizer._momentums[index], optimizer._velocities[index]]
        slots.append([*found, optimizer._velocity_hats[index]] if amsgrad else found)
    if torch.compiler.is_compiling():  # tensors: they change without a recompile
        step: Any = _float64(optimizer.iterations) + 1.0
        weight_decay = optimizer.weight_decay
        decays = weight_decay is not None
    else:
        step = int(optimizer.iterations.value) + 1
        weight_decay = 0.0 if optimizer.weight_decay is None else _number(optimizer.weight_decay)
        decays = weight_decay != 0.0
    adam(
        grads,
        variables,
        slots,
        step=step,
        learning_rate=learning_rate,
        beta_1=optimizer.beta_1,
        beta_2=optimizer.beta_2,
        epsilon=optimizer.epsilon,
        weight_decay=[
            weight_decay if decays and optimizer._use_weight_decay(v) else 0.0 for v in variables
        ],
        amsgrad=amsgrad,
    )
    return True
