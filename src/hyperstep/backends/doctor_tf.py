"""The doctor's evidence on TensorFlow: ``tf.GradientTape`` gradients, ``tf.Variable`` state,
and the loss traced once as a ``tf.Graph``.

See :mod:`hyperstep.backends.doctor` for what each function answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import keras
import numpy as np
import tensorflow as tf

from hyperstep.backends.fit import peek
from hyperstep.backends.internals import gradient_function
from hyperstep.backends.traces import Trace, TracedOp, user_source

#: Ops through which no useful gradient flows (the registered gradient is None or zero).
NON_DIFFERENTIABLE = frozenset(
    {
        "StopGradient",
        "ArgMax",
        "ArgMin",
        "Round",
        "Rint",
        "Floor",
        "Ceil",
        "Sign",
        "FloorDiv",
        "TruncateDiv",
        "Equal",
        "NotEqual",
        "Less",
        "LessEqual",
        "Greater",
        "GreaterEqual",
        "IsNan",
        "IsInf",
        "IsFinite",
        "EagerPyFunc",
        "PyFunc",
        "PyFuncStateless",
    }
)
#: Ops whose bodies live in other graphs: assumed to pass gradients unless nothing else explains.
NESTED = frozenset(
    {
        "PartitionedCall",
        "StatefulPartitionedCall",
        "If",
        "StatelessIf",
        "While",
        "StatelessWhile",
        "Case",
        "StatelessCase",
        "IdentityN",
    }
)
#: Ops that read only a shape: their integer output carries no gradient, and they are named
#: after the ops that stop one.
_SHAPE_LIKE = frozenset({"Shape", "ShapeN", "Size", "Rank", "BroadcastArgs"})


def is_raw_variable(value: Any) -> bool:
    """A ``tf.Variable`` (not Keras's)."""
    return isinstance(value, tf.Variable)


def raw_kind(value: Any) -> str:
    return "tf.Variable"


def raw_trainable(value: Any) -> bool:
    return bool(value.trainable)


def underlying(variable: Any) -> Any:
    """The ``tf.Variable`` behind a ``keras.Variable`` (or the variable itself)."""
    return variable.value if isinstance(variable, keras.Variable) else variable


def dtype_name(variable: Any) -> str:
    return str(tf.as_dtype(underlying(variable).dtype).name)


def to_numpy(variable: Any) -> np.ndarray:
    return np.asarray(underlying(variable).numpy())


def snapshot(variables: Iterable[Any]) -> list[tuple[Any, Any]]:
    """Copy the value of every distinct variable, for :func:`restore`."""
    saved: dict[int, tuple[Any, Any]] = {}
    for variable in variables:
        handle = underlying(variable)
        if id(handle) not in saved:
            saved[id(handle)] = (handle, tf.identity(handle.read_value()))
    return list(saved.values())


def restore(saved: list[tuple[Any, Any]]) -> None:
    """Assign back the values copied by :func:`snapshot`."""
    for handle, value in saved:
        handle.assign(value)


def build(compute: Callable[[Any], Any], batch: Any, state: list[Any]) -> None:
    """Build an unbuilt model by running the loss once, then put every variable back:
    those that existed from a snapshot, those the pass created to their initial value."""
    saved = snapshot(state)
    created: list[tuple[Any, Any]] = []

    def creator(next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        variable = next_creator(**kwargs)
        created.append((variable, tf.identity(variable.read_value())))
        return variable

    try:
        with tf.variable_creator_scope(creator):
            compute(batch)
    finally:
        restore(saved + created)


def gradient_kinds(
    compute: Callable[[Any], Any], batch: Any, variables: list[Any], raw: list[Any]
) -> tuple[Any, dict[int, str]]:
    """Run the loss and its gradient eagerly once, watching every variable given (and the
    ``tf.Variable`` of each binding in ``raw``).

    Returns:
        The loss, and for each variable's ``id(underlying(v))`` one of ``"none"`` (no
        gradient), ``"zero"`` (exactly zero everywhere) or ``"nonzero"``.
    """
    handles = [*(underlying(v) for v in variables), *(b.variable for b in raw)]
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        for handle in handles:
            tape.watch(handle)
        loss = compute(batch)
    loss = tf.convert_to_tensor(loss)
    grads = tape.gradient(loss, handles)
    kinds: dict[int, str] = {}
    for handle, grad in zip(handles, grads, strict=True):
        if grad is None:
            kinds[id(handle)] = "none"
            continue
        values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
        kinds[id(handle)] = "nonzero" if bool(tf.reduce_any(values != 0)) else "zero"
    return loss, kinds


def _stops_gradient(op: Any) -> bool:
    if op.type in NON_DIFFERENTIABLE:
        return True
    if op.type in NESTED or op.type in _SHAPE_LIKE:
        return False
    try:
        return gradient_function(op) is None
    except LookupError:
        return True


def _carries_gradient(tensor: Any) -> bool:
    dtype = tensor.dtype
    return bool(dtype.is_floating or dtype.is_complex or dtype in (tf.resource, tf.variant))


def _source(op: Any) -> str | None:
    """The innermost frame of the op's creation stack that is the user's code."""
    try:
        frames = list(op.traceback)
    except (AttributeError, TypeError):
        return None
    return user_source((frame.filename, frame.lineno) for frame in reversed(frames))


def trace(compute: Callable[[Any], Any], batch: Any, variables: list[Any], raw: list[Any]) -> Trace:
    """The loss traced once (``tf.function(compute).get_concrete_function(batch)``): the ops
    the loss depends on along data edges, each variable's value its captured handle, the
    inputs of ``tf.nn.moments`` centred."""
    concrete = tf.function(compute).get_concrete_function(batch)
    reach: set[Any] = set()
    stack = [concrete.outputs[0].op]
    while stack:
        op = stack.pop()
        if op not in reach:
            reach.add(op)
            stack.extend(t.op for t in op.inputs)
    ids: dict[Any, int] = {}

    def value(tensor: Any) -> int:
        return ids.setdefault(tensor.ref(), len(ids))

    ops = [op for op in concrete.graph.get_operations() if op in reach]
    traced = []
    for op in ops:
        outputs = tuple((value(t), _carries_gradient(t)) for t in op.outputs)
        stops, nested = _stops_gradient(op), op.type in NESTED
        # the user's line only where a path may stop (reading every op's stack is slow)
        source = _source(op) if stops or nested or not all(c for _, c in outputs) else None
        inputs = tuple(value(t) for t in op.inputs)
        traced.append(TracedOp(op.type, op.name, source, inputs, outputs, stops, nested))
    captures = {id(external): internal for external, internal in concrete.graph.captures}
    sources = {}
    for variable in [*(underlying(v) for v in variables), *(b.variable for b in raw)]:
        placeholder = captures.get(id(variable.handle))
        if placeholder is not None:
            sources[id(variable)] = value(placeholder)
    centred = {
        value(op.inputs[0]) for op in ops if op.type == "Mean" and op.name.endswith("moments/mean")
    }
    return Trace(traced, sources, value(concrete.outputs[0]), centred)


def numpy_batch(batch: Any) -> Any:
    """The batch as it is (TensorFlow reads tensors of any kind)."""
    return batch


def first_step(model: Any, args: tuple[Any, ...]) -> tuple[Any, Callable[[], tuple[Any, ...]]]:
    """The batch of ``model.train_function(iterator)``'s first call (the first replica's part
    of a distributed one, read from the values themselves: a callback runs outside the
    strategy's scope, where ``get_strategy().experimental_local_results`` returns a
    ``PerReplica`` whole), and the call's arguments once the doctor is done: the batch put
    back (:func:`~hyperstep.backends.fit.peek`; the variables are the state)."""
    batch, iterator = peek(args[0])

    def first(value: Any) -> Any:
        if isinstance(value, tf.distribute.DistributedValues):
            return value.values[0]
        return value

    return tf.nest.map_structure(first, batch), lambda: (iterator, *args[1:])
