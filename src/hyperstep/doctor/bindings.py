"""Bindings: every variable reachable from a layer's attributes, named ``<layer.path>/<attr>``.

``bindings(model)`` walks each layer's attributes (and lists, tuples, dicts and ``tf.Module``
objects inside them) and returns one :class:`Binding` per ``keras.Variable`` or raw
``tf.Variable`` found; :mod:`hyperstep.doctor.probe` compares them with ``model.variables``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import keras
import numpy as np

from hyperstep._backend import require_tensorflow

require_tensorflow("hyperstep.doctor.bindings (the doctor's variable scan)")

import tensorflow as tf  # noqa: E402

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
        "_outputs_struct",
        "_nodes",
        "_nodes_by_depth",
        "_operations_by_depth",
    }
)


_MAX_DEPTH = 4


def underlying(variable: Any) -> tf.Variable:
    """Return the ``tf.Variable`` behind a ``keras.Variable`` (or the variable itself)."""
    value = variable.value if isinstance(variable, keras.Variable) else variable
    return value


def key(variable: Any) -> int:
    """Identity of a variable: the id of the ``tf.Variable`` that holds its value."""
    return id(underlying(variable))


def is_float(variable: Any) -> bool:
    """Whether gradients can flow into the variable (floating or complex dtype)."""
    dtype = tf.as_dtype(underlying(variable).dtype)
    return bool(dtype.is_floating or dtype.is_complex)


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
            found.extend(_scan(value, base, layer, name, "attribute", 0, seen))
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


def _scan(
    value: Any, base: str, owner: Any, attribute: str, container: str, depth: int, seen: set[int]
) -> Iterator[Binding]:
    if isinstance(value, (keras.Variable, tf.Variable)):
        yield Binding(f"{base}/{attribute}", value, owner, attribute, container)
        return
    if depth >= _MAX_DEPTH or id(value) in seen:
        return
    if isinstance(value, (str, bytes, int, float, np.ndarray, tf.Tensor)) or value is None:
        return
    if isinstance(value, (keras.layers.Layer, keras.optimizers.Optimizer, keras.metrics.Metric)):
        return
    seen.add(id(value))
    if isinstance(value, dict):
        for k, item in list(value.items()):
            yield from _scan(item, base, owner, f"{attribute}/{k}", "dict", depth + 1, seen)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for i, item in enumerate(value):
            yield from _scan(item, base, owner, f"{attribute}/{i}", "list", depth + 1, seen)
    elif isinstance(value, tf.Module):
        for k, item in _attributes(value):
            yield from _scan(item, base, owner, f"{attribute}/{k}", "module", depth + 1, seen)


def describe_owner(binding: Binding) -> str:
    return f"{type(binding.owner).__name__} `{layer_path(binding.owner)}`"


def is_keras_class(obj: Any) -> bool:
    """Whether the object's class is Keras's own (its design decides what trains)."""
    return type(obj).__module__.split(".")[0] in ("keras", "tf_keras")
