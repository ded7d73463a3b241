"""The loss traced as a graph: which op stops a variable's gradient, and where.

:class:`GraphFacts` traces ``batch -> loss`` once with ``tf.function(...).get_concrete_function``
and walks the graph from a variable's captured handle towards the loss output along data
edges. A path stops at an op in :data:`NON_DIFFERENTIABLE` (or with no registered
gradient) and at any edge whose dtype carries no gradient (integers, booleans: a cast to
``int32`` or a comparison). Each stopping op is reported with its type, its name and the
innermost frame of its creation stack that is the user's own code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import keras

from hyperstep.backends import require_tensorflow

require_tensorflow("hyperstep.diagnosis.graph (the doctor's graph analysis)")

import tensorflow as tf  # noqa: E402

from hyperstep.backends.internals import gradient_function  # noqa: E402
from hyperstep.backends.traces import user_source  # noqa: E402
from hyperstep.diagnosis.paths import OpFact, PathFact  # noqa: E402

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
OPAQUE = frozenset(
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
_SHAPE_LIKE = frozenset({"Shape", "ShapeN", "Size", "Rank", "BroadcastArgs"})
_GRADIENT_DTYPES = (tf.resource, tf.variant)


def _source(op: Any) -> str | None:
    """The innermost frame of the op's creation stack that is the user's code."""
    try:
        frames = list(op.traceback)
    except (AttributeError, TypeError):
        return None
    return user_source((frame.filename, frame.lineno) for frame in reversed(frames))


def _stops_gradient(op: Any, opaque: bool) -> bool:
    if op.type in NON_DIFFERENTIABLE or (opaque and op.type in OPAQUE):
        return True
    if op.type in OPAQUE:
        return False
    try:
        return gradient_function(op) is None
    except LookupError:
        return True


def _carries_gradient(tensor: Any) -> bool:
    dtype = tensor.dtype
    return bool(dtype.is_floating or dtype.is_complex or dtype in _GRADIENT_DTYPES)


class GraphFacts:
    """The loss traced once as a graph, answering :meth:`path` for any variable.

    Args:
        compute: ``batch -> loss``.
        batch: The batch to trace with.
    """

    def __init__(self, compute: Callable[[Any], Any], batch: Any) -> None:
        function = tf.function(compute)
        self._concrete = function.get_concrete_function(batch)
        graph = self._concrete.graph
        self._captures = {id(external): internal for external, internal in graph.captures}
        self._loss_op = self._concrete.outputs[0].op
        # every op the loss depends on (data inputs only)
        reach: set[Any] = set()
        stack = [self._loss_op]
        while stack:
            op = stack.pop()
            if op in reach:
                continue
            reach.add(op)
            stack.extend(t.op for t in op.inputs)
        self._reaches_loss = reach
        # tensors that a batch/layer normalization centres (inputs of tf.nn.moments)
        self._normalized = {
            op.inputs[0].ref()
            for op in graph.get_operations()
            if op.type == "Mean" and op.name.endswith("moments/mean")
        }

    def normalized(self, variable: Any) -> bool:
        """Whether every differentiable path from the variable to the loss passes through a
        tensor that a normalization centres (the inputs of ``moments``).

        A zero gradient there is the normalization's invariance (a per-channel shift before
        BatchNormalization in training mode cancels), not a defect.
        """
        placeholder = self._captures.get(id(_handle(variable)))
        if placeholder is None:
            return False
        seen: set[Any] = set()
        stack = [placeholder]
        while stack:
            tensor = stack.pop()
            if tensor.ref() in self._normalized:
                continue
            for op in tensor.consumers():
                if op in seen or op not in self._reaches_loss:
                    continue
                seen.add(op)
                if op is self._loss_op:
                    return False
                if not _stops_gradient(op, False):
                    stack.extend(out for out in op.outputs if _carries_gradient(out))
        return True

    def path(self, variable: Any, opaque: bool = False) -> PathFact:
        """Classify the variable's paths to the loss (see :class:`PathFact`).

        With ``opaque=True`` ops with nested graphs (``If``, ``While``, function calls,
        custom gradients) also count as stops.
        """
        placeholder = self._captures.get(id(_handle(variable)))
        if placeholder is None or placeholder.op not in self._reaches_loss:
            return PathFact("unused")
        blockers: list[Any] = []
        seen: set[Any] = set()
        stack = [placeholder]
        while stack:
            tensor = stack.pop()
            for op in tensor.consumers():
                if op in seen or op not in self._reaches_loss:
                    continue
                seen.add(op)
                if op is self._loss_op:
                    return PathFact("open")
                if _stops_gradient(op, opaque):
                    blockers.append(op)
                    continue
                for out in op.outputs:
                    if _carries_gradient(out):
                        stack.append(out)
                    elif op not in blockers and any(
                        c in self._reaches_loss for c in out.consumers()
                    ):
                        blockers.append(op)
        blockers.sort(key=lambda op: op.type in _SHAPE_LIKE)
        return PathFact("blocked", tuple(OpFact(op.type, op.name, _source(op)) for op in blockers))


def _handle(variable: Any) -> Any:
    """The resource handle of a ``keras.Variable``'s ``tf.Variable`` (or a ``tf.Variable``'s)."""
    if isinstance(variable, keras.Variable):
        variable = variable.value
    return variable.handle
