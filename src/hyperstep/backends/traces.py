"""A traced loss as data: what the doctor's per-backend modules return from ``trace``.

:class:`Trace` is the loss's computation as a data-flow graph of :class:`TracedOp`, each
naming its values by id (TensorFlow: the ops of a ``tf.Graph``; JAX: a jaxpr's equations;
torch: the dispatched torch functions); :func:`user_source` names the user's line behind an
operation. Backend-neutral: the per-backend modules (:mod:`.doctor_tf`, :mod:`.doctor_jax`,
:mod:`.doctor_torch`) build it and :mod:`hyperstep.diagnosis.paths` reads it.
"""

from __future__ import annotations

import dataclasses
import functools
import linecache
import os
import sysconfig
from collections.abc import Iterable

__all__ = ["Trace", "TracedOp", "user_source"]


@dataclasses.dataclass(frozen=True)
class TracedOp:
    """One operation of a traced loss.

    Attributes:
        type: The operation as the backend names it (``stop_gradient``, ``argmax``, ``to``).
        name: Where it is in the trace (``eqn 12``, ``torch.Tensor.detach #40``).
        source: The user's source line that made it, or ``None``.
        inputs: Ids of the values it reads.
        outputs: ``(id, carries_gradient)`` of each value it makes (integers and booleans
            carry none).
        stops: Whether no gradient flows through it (``stop_gradient``, ``round``, a
            callback into Python).
        nested: Whether its body is another graph (TensorFlow's ``If``, ``While``, function
            calls): it passes gradients unless the path is read with ``opaque=True``.
    """

    type: str
    name: str
    source: str | None
    inputs: tuple[int, ...] = ()
    outputs: tuple[tuple[int, bool], ...] = ()
    stops: bool = False
    nested: bool = False


@dataclasses.dataclass
class Trace:
    """The loss's computation as a data-flow graph of :class:`TracedOp`.

    Attributes:
        ops: The operations, in execution order.
        sources: The value id of each variable, by the variable's ``id(underlying(v))``.
        loss: The value id of the loss.
        centred: Value ids a normalization centres (the input of a batch's moments): a
            shift of such a value cancels, so a zero gradient behind it is by design.
        keep: Objects the ids refer to, kept alive while the trace is read.
    """

    ops: list[TracedOp]
    sources: dict[int, int]
    loss: int
    centred: set[int] = dataclasses.field(default_factory=set)
    keep: list[object] = dataclasses.field(default_factory=list)


_INTERNAL_DIRS = tuple(
    os.path.normcase(os.path.realpath(p))
    for p in {
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    }
)


@functools.lru_cache(maxsize=4096)
def _internal(filename: str) -> bool:
    path = os.path.normcase(os.path.realpath(filename))
    return filename.startswith("<") or "site-packages" in path or path.startswith(_INTERNAL_DIRS)


def user_source(frames: Iterable[tuple[str, int]]) -> str | None:
    """``file:line: `code``` of the first frame (innermost first) that is the user's code."""
    for filename, lineno in frames:
        if _internal(filename):
            continue
        line = linecache.getline(filename, lineno).strip()
        text = f"{filename}:{lineno}"
        return f"{text}: `{line}`" if line else text
    return None
