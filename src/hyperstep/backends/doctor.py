"""The doctor's per-backend evidence: one module per Keras backend, chosen once.

:func:`tracer` returns the module for the running backend (:mod:`.doctor_tf`,
:mod:`.doctor_jax` or :mod:`.doctor_torch`). Each answers the same questions about
variables, so :mod:`hyperstep.diagnosis` never asks which backend it runs on:

* ``is_raw_variable(value)``, ``raw_kind(value)``, ``raw_trainable(value)``: a variable
  held on a layer outside Keras's tracking (TF: a ``tf.Variable``; torch: a
  ``torch.nn.Parameter`` or a tensor with ``requires_grad``; JAX: a floating ``jax.Array``
  or a ``tf.Variable``);
* ``underlying(variable)``: the object whose identity names a variable across reads;
* ``dtype_name(variable)``, ``to_numpy(variable)``;
* ``snapshot(variables)`` / ``restore(saved)``; ``build(compute, batch, state)``;
* ``gradient_kinds(compute, batch, variables, raw)``: the loss and, per variable,
  ``"none"``, ``"zero"`` or ``"nonzero"`` from the backend's own gradients;
* ``trace(compute, batch, variables, raw)``: the loss's computation as a :class:`Trace`
  (JAX: the jaxpr; torch: the dispatched torch functions), or ``None`` on TensorFlow, where
  :mod:`hyperstep.diagnosis.graph` reads the traced ``tf.Graph`` itself;
* ``local_batch(batch)``, ``numpy_batch(batch)``.
"""

from __future__ import annotations

import dataclasses
import linecache
import os
import sysconfig
from collections.abc import Iterable
from types import ModuleType

__all__ = ["Trace", "TracedOp", "tracer", "user_source"]


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
    """

    type: str
    name: str
    source: str | None
    inputs: tuple[int, ...]
    outputs: tuple[tuple[int, bool], ...]
    stops: bool = False


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


def user_source(frames: Iterable[tuple[str, int]]) -> str | None:
    """``file:line: `code``` of the first frame (innermost first) that is the user's code."""
    for filename, lineno in frames:
        if filename.startswith("<"):
            continue
        path = os.path.normcase(os.path.realpath(filename))
        if "site-packages" in path or path.startswith(_INTERNAL_DIRS):
            continue
        line = linecache.getline(filename, lineno).strip()
        text = f"{filename}:{lineno}"
        return f"{text}: `{line}`" if line else text
    return None


def tracer() -> ModuleType:
    """The doctor's module for the running Keras backend."""
    import keras

    name = keras.backend.backend()
    if name == "jax":
        from hyperstep.backends import doctor_jax

        return doctor_jax
    if name == "torch":
        from hyperstep.backends import doctor_torch

        return doctor_torch
    if name != "tensorflow":
        from hyperstep.errors import BackendError

        raise BackendError(
            "hs.doctor runs on Keras's TensorFlow, JAX and torch backends; Keras is running "
            f"on {name!r}. Set KERAS_BACKEND=tensorflow, jax or torch before importing keras."
        )
    from hyperstep.backends import doctor_tf

    return doctor_tf
