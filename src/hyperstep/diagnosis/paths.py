"""A variable's paths to the loss: :class:`PathFact`, and :class:`TraceFacts`, which reads
them from a backend's
:class:`~hyperstep.backends.traces.Trace` (TensorFlow's graph, JAX's jaxpr, torch's
dispatched functions).

A path is followed from the variable's value along data edges towards the loss. It stops
at an op through which no gradient flows (``stop_gradient``, ``round``, ``argmax``...) and
at an edge whose dtype carries no gradient (a cast to an integer, a comparison).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hyperstep.backends.traces import TracedOp


@dataclasses.dataclass(frozen=True)
class PathFact:
    """How a variable reaches the loss in the traced computation.

    Attributes:
        kind: ``"unused"`` (no path), ``"blocked"`` (every path stops at a
            non-differentiable op) or ``"open"`` (a differentiable path exists).
        blockers: The ops where the paths stop, the most telling first.
    """

    kind: str
    blockers: tuple[TracedOp, ...] = ()


class TraceFacts:
    """A backend's trace of the loss, answering :meth:`path` and :meth:`normalized`.

    Args:
        trace: The :class:`~hyperstep.backends.traces.Trace`.
        key: ``variable -> id`` as the trace's ``sources`` are keyed.
    """

    def __init__(self, trace: Any, key: Any) -> None:
        self._trace = trace
        self._key = key
        self._consumers: dict[int, list[int]] = {}
        producers: dict[int, list[int]] = {}
        for index, op in enumerate(trace.ops):
            for value in op.inputs:
                self._consumers.setdefault(value, []).append(index)
            for value, _ in op.outputs:
                producers.setdefault(value, []).append(index)
        reach: set[int] = set()
        stack = [trace.loss]
        seen = {trace.loss}
        while stack:
            for index in producers.get(stack.pop(), ()):
                if index in reach:
                    continue
                reach.add(index)
                for value in trace.ops[index].inputs:
                    if value not in seen:
                        seen.add(value)
                        stack.append(value)
        self._reach = reach

    def path(self, variable: Any, opaque: bool = False) -> PathFact:
        """Classify the variable's paths to the loss (see :class:`PathFact`); with
        ``opaque=True`` ops with nested graphs (``If``, ``While``, function calls, custom
        gradients) also count as stops."""
        trace = self._trace
        source = trace.sources.get(self._key(variable))
        if source is None:
            return PathFact("unused")
        blockers: list[Any] = []
        escapes: list[Any] = []
        ops_seen: set[int] = set()
        values_seen = {source}
        stack = [source]
        while stack:
            value = stack.pop()
            if value == trace.loss:
                return PathFact("open")
            for index in self._consumers.get(value, ()):
                if index in ops_seen:
                    continue
                ops_seen.add(index)
                op = trace.ops[index]
                if index not in self._reach:
                    if op.stops and not op.outputs:
                        escapes.append(op)  # the value left for NumPy or Python
                    continue
                if op.stops or (opaque and op.nested):
                    blockers.append(op)
                    continue
                for out, carries in op.outputs:
                    if carries:
                        if out not in values_seen:
                            values_seen.add(out)
                            stack.append(out)
                    elif op not in blockers and (
                        out == trace.loss
                        or any(i in self._reach for i in self._consumers.get(out, ()))
                    ):
                        blockers.append(op)
        # the ops that stop a gradient by what they are before those whose output is integer
        found = sorted(blockers, key=lambda op: not op.stops) or escapes
        if not found:
            return PathFact("unused")
        return PathFact("blocked", tuple(found))

    def normalized(self, variable: Any) -> bool:
        """Whether every differentiable path from the variable to the loss passes through a
        value a normalization centres (a zero gradient there is the normalization's
        invariance, not a defect)."""
        trace = self._trace
        source = trace.sources.get(self._key(variable))
        if source is None:
            return False
        seen = {source}
        stack = [source]
        while stack:
            value = stack.pop()
            if value in trace.centred:
                continue
            if value == trace.loss:
                return False
            for index in self._consumers.get(value, ()):
                op = trace.ops[index]
                if index not in self._reach or op.stops:
                    continue
                for out, carries in op.outputs:
                    if carries and out not in seen:
                        seen.add(out)
                        stack.append(out)
        return True
