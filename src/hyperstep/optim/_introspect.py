"""Which constructor arguments of a Keras optimizer are numeric hyperparameters.

A numeric hyperparameter is a constructor argument whose value is a number (not a bool)
that the optimizer reads at every update, such as ``learning_rate``, ``beta_1``,
``momentum`` or ``weight_decay``. Arguments that fix the structure of the update (how many
steps to accumulate, how slots are initialized, how many Newton-Schulz iterations) are not:
changing them at run time cannot work, so ``hs.scheduled`` refuses them by name.
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any

from hyperstep.errors import InvalidArgumentError, received

#: numeric arguments that fix the structure of the update; never scheduled
STRUCTURAL: dict[str, str] = {
    "gradient_accumulation_steps": "it fixes how many gradients are accumulated per update",
    "ema_overwrite_frequency": "it fixes how often the EMA overwrites the weights",
    "initial_accumulator_value": "it only initializes the accumulators when they are built",
    "ns_steps": "it is the number of Newton-Schulz iterations unrolled in the graph",
    "warmup_steps": "it is compared in Python when the update is traced",
    "initial_scale": "it only initializes the loss scale",
    "dynamic_growth_steps": "it is compared in Python when the update is traced",
}

#: arguments that default to None and are numbers when given (None = feature off)
OPTIONAL_NUMERIC = ("weight_decay", "clipnorm", "clipvalue", "global_clipnorm", "loss_scale_factor")

#: the numeric arguments every Keras optimizer takes (``BaseOptimizer.__init__``)
BASE_NUMERIC = (*OPTIONAL_NUMERIC[:4], "ema_momentum", "loss_scale_factor")

#: Keras optimizers that wrap other optimizers: schedule the inner one instead
WRAPPERS = ("LossScaleOptimizer", "MultiOptimizer")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def constructor_arguments(cls: type) -> dict[str, Any]:
    """Return ``{name: default}`` of the constructor arguments of ``cls`` and its bases."""
    found: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        for name, parameter in inspect.signature(init).parameters.items():
            if name == "self" or parameter.kind in (
                parameter.VAR_KEYWORD,
                parameter.VAR_POSITIONAL,
            ):
                continue
            found[name] = parameter.default
    return found


def numeric_names(cls: type) -> list[str]:
    """Return the names of the numeric hyperparameters of optimizer class ``cls``.

    Example:
        >>> import keras
        >>> numeric_names(keras.optimizers.SGD)[:4]
        ['learning_rate', 'momentum', 'weight_decay', 'clipnorm']
    """
    own: list[str] = []
    for name, default in constructor_arguments(cls).items():
        if name == "learning_rate" or name in STRUCTURAL or name in BASE_NUMERIC:
            continue
        if _is_number(default) or (default is None and name in OPTIONAL_NUMERIC):
            own.append(name)
    # the base-class arguments last, in one order for every optimizer
    return ["learning_rate", *own, *BASE_NUMERIC]


def check_names(cls: type, given: dict[str, Any], where: str = "hs.scheduled") -> None:
    """Raise ValueError naming the valid choices if a name of ``given`` (name -> value)
    cannot be scheduled on optimizer class ``cls``."""
    valid = numeric_names(cls)
    arguments = constructor_arguments(cls)
    for name, value in given.items():
        if name in valid:
            continue
        title = f"`{where}({cls.__name__}(), {name}=...)`"
        listing = f"Valid: {', '.join(valid)}."
        if name in STRUCTURAL:
            reason = f"`{name}` cannot be scheduled: {STRUCTURAL[name]}."
        elif name in arguments:
            kind = type(arguments[name]).__name__
            reason = (
                f"`{name}` is not a numeric hyperparameter of {cls.__name__} (it is a {kind} "
                "that fixes the structure of the update); set it on the optimizer instead."
            )
        else:
            close = difflib.get_close_matches(name, valid, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            reason = f"{cls.__name__} has no hyperparameter {name!r}.{hint}"
        raise InvalidArgumentError(f"{title}: {reason} {listing} {received(name, value)}")
