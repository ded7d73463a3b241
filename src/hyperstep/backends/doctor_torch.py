"""The doctor's evidence on torch: autograd's gradients and the torch functions the loss calls.

    grads = torch.autograd.grad(loss, leaves, allow_unused=True)

with every ``keras.Variable`` read through ``keras.StatelessScope(state_mapping=...)`` as a
leaf sharing its storage (``value.detach().requires_grad_()``: nothing is assigned); the
trace is what a ``torch.overrides.TorchFunctionMode`` records. See "The doctor on every
backend" in docs/backends.md.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterable
from typing import Any

import keras
import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from hyperstep.backends.traces import Trace, TracedOp, user_source

#: Torch functions through which no gradient flows.
NON_DIFFERENTIABLE = frozenset(
    {
        "detach",
        "detach_",
        "round",
        "round_",
        "floor",
        "ceil",
        "sign",
        "trunc",
        "argmax",
        "argmin",
        "isnan",
        "isinf",
        "isfinite",
    }
)
#: Torch functions through which the value leaves torch (to NumPy or Python).
ESCAPES = frozenset({"numpy", "item", "tolist", "__array__", "__float__", "__int__", "__bool__"})


def is_raw_variable(value: Any) -> bool:
    """A ``torch.nn.Parameter`` or a floating tensor with ``requires_grad``."""
    if isinstance(value, torch.nn.Parameter):
        return True
    return isinstance(value, torch.Tensor) and bool(value.requires_grad)


def raw_kind(value: Any) -> str:
    return "torch Parameter" if isinstance(value, torch.nn.Parameter) else "torch tensor"


def raw_trainable(value: Any) -> bool:
    return bool(value.requires_grad)


def underlying(variable: Any) -> Any:
    """The ``torch.nn.Parameter`` behind a ``keras.Variable`` (or the tensor itself)."""
    return variable.value if isinstance(variable, keras.Variable) else variable


def dtype_name(variable: Any) -> str:
    if isinstance(variable, keras.Variable):
        return str(variable.dtype)
    return str(variable.dtype).removeprefix("torch.")


def to_numpy(variable: Any) -> np.ndarray:
    return np.asarray(underlying(variable).detach().cpu().numpy())


def snapshot(variables: Iterable[Any]) -> list[tuple[Any, Any]]:
    """A copy of every distinct variable's tensor, for :func:`restore`."""
    saved: dict[int, tuple[Any, Any]] = {}
    for variable in variables:
        tensor = underlying(variable)
        if isinstance(tensor, torch.Tensor) and id(tensor) not in saved:
            saved[id(tensor)] = (tensor, tensor.detach().clone())
    return list(saved.values())


def restore(saved: list[tuple[Any, Any]]) -> None:
    with torch.no_grad():
        for tensor, value in saved:
            tensor.copy_(value)


def build(compute: Callable[[Any], Any], batch: Any, state: list[Any]) -> None:
    """Build an unbuilt model by running the loss once in a ``StatelessScope``: nothing is
    assigned (``state`` keeps its values), and the variables the pass creates get their
    initial values on leaving it."""
    with keras.StatelessScope():
        compute(batch)


def _run(
    compute: Callable[[Any], Any], batch: Any, variables: list[Any], raw: list[Any], mode: Any
) -> tuple[Any, list[Any], list[Any]]:
    """The loss run once (inside ``mode``) on a leaf per variable, the leaves and the raw
    tensors."""
    leaves = [v.value.detach().requires_grad_(True) for v in variables]
    with keras.StatelessScope(state_mapping=list(zip(variables, leaves, strict=True))), mode:
        loss = compute(batch)
    return loss, leaves, [b.variable for b in raw if isinstance(b.variable, torch.Tensor)]


def gradient_kinds(
    compute: Callable[[Any], Any], batch: Any, variables: list[Any], raw: list[Any]
) -> tuple[Any, dict[int, str]]:
    """The loss and, by ``id(underlying(v))``, ``"none"``, ``"zero"`` or ``"nonzero"``."""
    loss, leaves, tensors = _run(compute, batch, variables, raw, contextlib.nullcontext())
    loss = torch.as_tensor(loss)
    inputs = [*leaves, *tensors]
    total = loss.float().sum()
    grads = (
        torch.autograd.grad(total, inputs, allow_unused=True)
        if total.requires_grad and inputs
        else [None] * len(inputs)
    )
    kinds: dict[int, str] = {}
    for item, grad in zip([*(underlying(v) for v in variables), *tensors], grads, strict=True):
        if grad is None:
            kinds[id(item)] = "none"
        else:
            kinds[id(item)] = "nonzero" if bool((grad != 0).any()) else "zero"
    return loss.detach(), kinds


def _tensors(value: Any) -> list[Any]:
    return [item for item in keras.tree.flatten(value) if isinstance(item, torch.Tensor)]


def _frames() -> list[tuple[str, int]]:
    frame: Any = sys._getframe(2)
    found: list[tuple[str, int]] = []
    while frame is not None and len(found) < 64:
        found.append((frame.f_code.co_filename, frame.f_lineno))
        frame = frame.f_back
    return found


class _Recorder(TorchFunctionMode):
    """Records each torch function with the ids of its input and output tensors."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[TracedOp] = []
        self.keep: list[Any] = []  # every tensor seen stays alive: ids stay unique

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", str(func))
        if name == "__get__":
            return out
        inputs = _tensors([args, kwargs or {}])
        outputs = _tensors(out)
        escapes = name in ESCAPES
        if not inputs or not (outputs or escapes):
            if outputs:
                self.keep.extend(outputs)
            return out
        self.keep.extend(inputs)
        self.keep.extend(outputs)
        self.ops.append(
            TracedOp(
                name,
                f"torch {name} #{len(self.ops) + 1}",
                user_source(_frames()),
                tuple(id(t) for t in inputs),
                tuple((id(t), bool(t.is_floating_point() or t.is_complex())) for t in outputs),
                stops=name in NON_DIFFERENTIABLE or escapes,
            )
        )
        return out


def _centred(ops: list[TracedOp]) -> set[int]:
    """Inputs ``x`` of Keras's torch ``moments``: ``mean(x)`` and ``mean(square(x))``."""
    means = {op.inputs[0] for op in ops if op.type == "mean" and op.inputs}
    squares = {op.outputs[0][0]: op.inputs[0] for op in ops if op.type == "square" and op.inputs}
    return {x for out, x in squares.items() if out in means and x in means}


def trace(compute: Callable[[Any], Any], batch: Any, variables: list[Any], raw: list[Any]) -> Trace:
    """The torch functions of one run of the loss, as a :class:`Trace`."""
    recorder = _Recorder()
    loss, leaves, tensors = _run(compute, batch, variables, raw, recorder)
    sources = {id(underlying(v)): id(leaf) for v, leaf in zip(variables, leaves, strict=True)}
    sources.update({id(t): id(t) for t in tensors})
    recorder.keep.extend([loss, *leaves])
    return Trace(recorder.ops, sources, id(loss), _centred(recorder.ops), recorder.keep)


def numpy_batch(batch: Any) -> Any:
    """NumPy arrays (and ``tf.data``'s tensors) as torch tensors, as Keras's torch trainer
    hands them to the step (``tensor - ndarray`` fails on a tensor that requires grad)."""
    tf = sys.modules.get("tensorflow")

    def convert(value: Any) -> Any:
        if tf is not None and isinstance(value, (tf.Tensor, tf.Variable)):
            value = value.numpy()
        if isinstance(value, np.ndarray):
            return keras.ops.convert_to_tensor(value)
        return value

    return keras.tree.map_structure(convert, batch)


def first_step(model: Any, args: tuple[Any, ...]) -> tuple[Any, Callable[[], tuple[Any, ...]]]:
    """The batch of ``model.train_function([batch])``'s first call (Keras's torch trainer),
    and the call's arguments once the doctor is done: unchanged (the variables are the state)."""
    return args[0][0], lambda: args
