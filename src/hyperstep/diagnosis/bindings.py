"""Bindings: every variable reachable from a layer's attributes, named ``<layer.path>/<attr>``.

``bindings(model)`` walks each layer's attributes (and lists, tuples, dicts and modules
inside them: ``tf.Module``, ``types.SimpleNamespace``) and returns one :class:`Binding` per
``keras.Variable`` or raw variable found: what the backend trains outside Keras
(:mod:`hyperstep.backends.doctor`: a ``tf.Variable``; a ``torch.nn.Parameter``, also in a
layer's torch ``_parameters``; a floating ``jax.Array``). :mod:`hyperstep.diagnosis.probe`
compares them with ``model.variables``.
"""

from __future__ import annotations

import dataclasses
import sys
import types
from collections.abc import Iterator
from typing import Any

import keras
import numpy as np

from hyperstep.backends.doctor import tracer

# Keras bookkeeping attributes that hold no user state worth walking.
_SKIP_ATTRIBUTES = frozenset(
    {
        "_tracker",
        "_trainable_variables",
        "_non_trainable_variables",
        "_layers",
        "_metrics",
        "_seed_generators",
        "_loss_tracker",
        "_compile_loss",
        "_compile_metrics",
        "_inbound_nodes",
        "_outbound_nodes",
        "_losses",
        "optimizer",
        "_optimizer",
        "train_function",
        "test_function",
        "predict_function",
        "_functional",
        "_operations",
        "_inputs_struct",
        "torch_params",
        "_torch_params",
        "_modules",
        "_parameters",
        "_buffers",
        "_outputs_struct",
        "_nodes",
        "_nodes_by_depth",
        "_operations_by_depth",
    }
)


_MAX_DEPTH = 4


def underlying(variable: Any) -> Any:
    """The object that names a variable across reads (TF: the ``tf.Variable`` behind a
    ``keras.Variable``; torch: its ``Parameter``; JAX: the ``keras.Variable``)."""
    return tracer().underlying(variable)


def key(variable: Any) -> int:
    """Identity of a variable: the id of :func:`underlying`."""
    return id(underlying(variable))


def dtype_name(variable: Any) -> str:
    """The variable's dtype as Keras names it (``float32``, ``int32``)."""
    return str(tracer().dtype_name(variable))


def is_float(variable: Any) -> bool:
    """Whether gradients can flow into the variable (floating or complex dtype)."""
    name = dtype_name(variable)
    return name.startswith(("float", "bfloat", "complex", "half", "double"))


@dataclasses.dataclass
class Binding:
    """A variable found in a layer's attributes.

    Attributes:
        path: ``<layer.path>/<attribute>[/<index or key>...]``.
        variable: The ``keras.Variable`` or ``tf.Variable`` found there.
        owner: The layer whose attribute holds it.
        attribute: The attribute chain below the layer, e.g. ``scale`` or ``scales/0``.
        container: ``"attribute"``, ``"list"``, ``"dict"`` or ``"module"`` (a ``tf.Module``
            or other plain object that Keras does not look inside).
    """

    path: str
    variable: Any
    owner: Any
    attribute: str
    container: str
    holder: Any = None
    slot: Any = None

    def put(self, value: Any) -> None:
        """Hold ``value`` where the variable was found (the doctor swaps in traced values);
        only for bindings with a ``holder`` (not in tuples nor torch's ``_parameters``)."""
        if self.container in ("attribute", "module"):
            object.__setattr__(self.holder, self.slot, value)
        else:
            self.holder[self.slot] = value


def layers_of(model: Any) -> list[Any]:
    """Every layer of the model (the model first), as Keras tracks them."""
    flatten = getattr(model, "_flatten_layers", None)
    if flatten is not None:
        return list(flatten(include_self=True, recursive=True))
    return [model]


def layer_path(layer: Any) -> str:
    return str(getattr(layer, "path", None) or layer.name)


def bindings(model: Any) -> list[Binding]:
    """Every variable reachable from the attributes of the model's layers."""
    found: list[Binding] = []
    seen: set[int] = set()
    for layer in layers_of(model):
        base = layer_path(layer)
        for name, value in _attributes(layer):
            found.extend(_scan(value, base, layer, name, "attribute", 0, seen, layer, name))
        # torch: a Parameter assigned to a layer (a torch.nn.Module) lands in _parameters
        parameters = vars(layer).get("_parameters")
        if isinstance(parameters, dict):
            for name, value in parameters.items():
                if value is not None and tracer().is_raw_variable(value):
                    found.append(Binding(f"{base}/{name}", value, layer, name, "attribute"))
    return found


def _attributes(obj: Any) -> list[tuple[str, Any]]:
    """The object's attributes worth walking, public first (so a variable is named after
    the attribute users wrote, not after TensorFlow's checkpoint bookkeeping)."""
    items = [
        (name, value)
        for name, value in vars(obj).items()
        if name not in _SKIP_ATTRIBUTES and not name.startswith("_self_")
    ]
    return sorted(items, key=lambda item: item[0].startswith("_"))


def _is_module(value: Any) -> bool:
    """A plain container of attributes Keras does not look inside."""
    if isinstance(value, types.SimpleNamespace):
        return True
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(value, tf.Module)


def _scan(
    value: Any,
    base: str,
    owner: Any,
    attribute: str,
    container: str,
    depth: int,
    seen: set[int],
    holder: Any = None,
    slot: Any = None,
) -> Iterator[Binding]:
    if isinstance(value, keras.Variable) or tracer().is_raw_variable(value):
        yield Binding(f"{base}/{attribute}", value, owner, attribute, container, holder, slot)
        return
    if depth >= _MAX_DEPTH or id(value) in seen:
        return
    if isinstance(value, (str, bytes, int, float, np.ndarray)) or value is None:
        return
    if isinstance(value, (keras.layers.Layer, keras.optimizers.Optimizer, keras.metrics.Metric)):
        return
    if keras.ops.is_tensor(value):
        return
    seen.add(id(value))
    if isinstance(value, dict):
        for k, item in list(value.items()):
            yield from _scan(
                item, base, owner, f"{attribute}/{k}", "dict", depth + 1, seen, value, k
            )
    elif isinstance(value, (list, tuple, set, frozenset)):
        mutable = value if isinstance(value, list) else None
        for i, item in enumerate(value):
            yield from _scan(
                item, base, owner, f"{attribute}/{i}", "list", depth + 1, seen, mutable, i
            )
    elif _is_module(value):
        for k, item in _attributes(value):
            yield from _scan(
                item, base, owner, f"{attribute}/{k}", "module", depth + 1, seen, value, k
            )


def describe_owner(binding: Binding) -> str:
    return f"{type(binding.owner).__name__} `{layer_path(binding.owner)}`"


def is_keras_class(obj: Any) -> bool:
    """Whether the object's class is Keras's own (its design decides what trains)."""
    return type(obj).__module__.split(".")[0] in ("keras", "tf_keras")
