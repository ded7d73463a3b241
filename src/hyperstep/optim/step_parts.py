"""StepOptimizer's parts outside its class: the checks of its arguments, the clock it picks,
PyTorch's fused Adam update per group, and the scratch buffers of TensorFlow's one-pass
kernels.

``fused_update(optimizer, grads, variables)`` runs ``torch._fused_adam_``/``_fused_adamw_``
once per group with the values as Python numbers (eagerly) or float64 tensors (under
``torch.compile``); ``False`` where it does not apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import keras

from hyperstep import backends
from hyperstep.clock import Clock
from hyperstep.control.hyperparameter import Hyperparameter
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.optim import rules as _rules
from hyperstep.optim.rules import Rule

__all__ = [
    "KERAS_ARGUMENTS",
    "check_names",
    "fused_update",
    "host_value",
    "pick_clock",
    "scratch_buffer",
]

KERAS_ARGUMENTS = (
    "clipnorm",
    "clipvalue",
    "global_clipnorm",
    "use_ema",
    "ema_momentum",
    "ema_overwrite_frequency",
    "loss_scale_factor",
    "gradient_accumulation_steps",
)


def fused_update(optimizer: Any, grads: Any, variables: Any) -> bool:
    """``StepOptimizer`` fusing: the Adam and AdamW rules through PyTorch's fused kernel, once per
    group (:func:`hyperstep.backends.torch.adam`); eagerly the values are Python numbers
    (the host table), under ``torch.compile`` float64 tensors
    (:meth:`~hyperstep.Hyperparameter.exact_at`: the same numbers, read back when the
    compiled step runs). ``False`` (nothing done) elsewhere: another rule or backend,
    or the clock not readable for free."""
    kernel = backends.multi_tensor_adam()
    rule = optimizer.rule
    if kernel is None or type(rule) not in (_rules.AdamRule, _rules.AdamWRule):
        return False
    compiling = backends.compiling()
    step: Any = None if compiling else backends.host_int(optimizer.clock.step)
    if (step is None and not compiling) or not kernel.applies(grads, variables):
        return False
    keys = ("momentum", "velocity", "velocity_hat") if rule.amsgrad else ("momentum", "velocity")
    members: dict[int, list[int]] = {}
    for variable in variables:
        index = optimizer._get_variable_index(variable)
        members.setdefault(optimizer._variable_group[index], []).append(index)
    position = {optimizer._get_variable_index(v): i for i, v in enumerate(variables)}
    update = optimizer._hs_update
    with update.fixed(optimizer.clock, host=False):  # (fixed already when called from `apply`)
        if compiling:
            step = update.step
        exact: dict[int, Any] = {}  # a Hyperparameter several groups share, read once

        def read(hp: Any) -> Any:
            if not compiling:
                return host_value(hp, step)
            if id(hp) not in exact:
                exact[id(hp)] = hp.exact_at(step)
            return exact[id(hp)]

        for group, indices in members.items():
            value = {key: read(hp) for key, hp in optimizer._tables[group].items()}
            decay = value.get("weight_decay", 0.0)
            kernel.adam(
                [grads[position[i]] for i in indices],
                [variables[position[i]] for i in indices],
                [[optimizer._slots[key][i] for key in keys] for i in indices],
                step=step + 1,
                learning_rate=value["learning_rate"],
                beta_1=value["beta_1"],
                beta_2=value["beta_2"],
                epsilon=value["epsilon"],
                weight_decay=[decay] * len(indices),
                amsgrad=rule.amsgrad,
            )
    return True


def scratch_buffer(optimizer: Any, variable: Any, key: str) -> Any:
    """A zero buffer like ``variable`` for a one-pass kernel (``Rule.fused_slots``), not an
    optimizer variable: neither saved nor restored; ``None`` where Keras overwrites the
    variable with its gradient."""
    if optimizer._overwrite_variable_with_gradient(variable):
        return None
    name = f"{optimizer.name}_{variable.path.replace('/', '_')}_{key}"
    return keras.Variable(
        "zeros", shape=variable.shape, dtype=variable.dtype, trainable=False, name=name
    )


def check_names(rule: Rule, owner: str, given: Mapping[str, Any]) -> None:
    """Raise for a name in ``given`` that ``rule`` does not declare (naming the valid ones)."""
    unknown = [key for key in given if key not in rule.hyperparameters]
    if unknown:
        shown = ", ".join(received(key, given[key]).removeprefix("Received: ") for key in unknown)
        raise InvalidArgumentError(
            f"`{owner}` got hyperparameters that rule {type(rule).__name__} does not declare: "
            f"{unknown}. Valid ones: {list(rule.hyperparameters)}"
            + (
                f" (and the Keras arguments {list(KERAS_ARGUMENTS)})"
                if owner == "StepOptimizer"
                else ""
            )
            + f". Received: {shown}"
        )


def pick_clock(clock: Any, tables: list[Mapping[str, Any]], name: str) -> Any:
    """``clock`` (checked), else the clock of the first Hyperparameter in ``tables``, else a
    new :class:`~hyperstep.Clock` named ``name``."""
    if clock is not None:
        if not isinstance(clock, Clock):
            raise InvalidTypeError(
                f"`StepOptimizer(clock=...)` must be an `hs.Clock`. {received('clock', clock)}"
            )
        return clock
    for table in tables:
        for value in table.values():
            if isinstance(value, Hyperparameter):
                return value.clock
    return Clock(name=name)


def host_value(hp: Any, step: int) -> float:
    """A Hyperparameter's value at ``step`` as a Python number (from its host table, else
    read back)."""
    value = hp.host_float(step)
    return float(hp.value) if value is None else value
