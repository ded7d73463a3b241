"""The config of an ``hs.scheduled`` optimizer: the wrapped optimizer nested, as Keras nests
``LossScaleOptimizer``'s inner one.

``{"optimizer": {"module", "class_name", "config", "registered_name"}, "hyperparameters",
"clock", "advance", "groups", "fused"}``: the wrapped optimizer serialized as Keras
serializes an instance (:func:`serialized`), found again as Keras finds a class
(:func:`wrapped_class`), so a file loads wherever Keras can load the wrapped class itself.
"""

from __future__ import annotations

from typing import Any

import keras

from hyperstep import backends
from hyperstep.errors import InvalidArgumentError, received


def serialized(cls: type, config: dict[str, Any]) -> dict[str, Any]:
    """``cls`` with ``config`` as Keras serializes an instance: a built-in optimizer under
    its public name (``keras.optimizers.Adam``, also for Keras's torch classes), any other
    class by module, name and registered name (what Keras needs to find it again)."""
    for klass in cls.__mro__:
        public = getattr(keras.optimizers, klass.__name__, None)
        if public is klass and backends.optimizer_class(klass) is cls:
            return {
                "module": "keras.optimizers",
                "class_name": klass.__name__,
                "config": config,
                "registered_name": None,
            }
        if public is klass:
            break
    return {
        "module": cls.__module__,
        "class_name": cls.__name__,
        "config": config,
        "registered_name": keras.saving.get_registered_name(cls),
    }


def wrapped_class(nested: Any, custom_objects: Any) -> type:
    """The optimizer class a nested config names, found as Keras finds a class: a
    built-in by its public name, any other by its registered name (or class name) among
    ``custom_objects`` and the registered classes."""
    if not isinstance(nested, dict) or not isinstance(nested.get("class_name"), str):
        raise InvalidArgumentError(
            "A config of `hs.scheduled(...)` names its wrapped optimizer as Keras serializes "
            f"one (module, class_name, config). {received('optimizer', nested)}"
        )
    name = nested["class_name"]
    found: Any = None
    if nested.get("module") == "keras.optimizers":
        found = getattr(keras.optimizers, name, None)
    else:
        key = nested.get("registered_name") or name
        found = keras.saving.get_registered_object(key, custom_objects=custom_objects)
        if found is None and custom_objects:
            found = custom_objects.get(name)
    if not (isinstance(found, type) and issubclass(found, keras.optimizers.Optimizer)):
        raise InvalidArgumentError(
            f"Cannot find the optimizer class {name!r} wrapped by `hs.scheduled`: register it "
            "with `@keras.saving.register_keras_serializable()` or pass it in "
            f"`custom_objects`, as Keras needs for the class itself. "
            f"{received('optimizer', {k: v for k, v in nested.items() if k != 'config'})}"
        )
    return found


def inner_config(nested: dict[str, Any]) -> dict[str, Any]:
    """The wrapped optimizer's own config (Keras's keys) from a nested config."""
    inner = nested.get("config", {})
    if not isinstance(inner, dict):
        raise InvalidArgumentError(
            "The wrapped optimizer's config in a config of `hs.scheduled(...)` must be a "
            f"dict. {received('config', inner)}"
        )
    return inner
