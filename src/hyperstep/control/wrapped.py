"""The hyperstep optimizers inside an optimizer and its wrappers.

``model.optimizer`` is often not the optimizer compiled: under ``mixed_float16`` Keras wraps
it in ``keras.optimizers.LossScaleOptimizer``; ``hs.SkipNonFinite`` wraps one too (both as
``inner_optimizer``), and ``keras.optimizers.MultiOptimizer`` holds several (``optimizers``).
:func:`hyperstep_optimizers` looks through all of them, for every hyperstep tool that takes
an optimizer.

A hyperstep optimizer is one with a hyperstep ``clock`` and a ``hyperparameters`` dict
(``hs.scheduled(...)``, ``hs.StepOptimizer``);
:func:`hyperstep.control.hyperparameter.controlled_hyperparameter` finds the hyperparameter a
controller given an optimizer acts on.
"""

from __future__ import annotations

from typing import Any

from hyperstep.clock import Clock

__all__ = [
    "accumulation_steps",
    "every_optimizer",
    "hyperstep_optimizer",
    "hyperstep_optimizers",
    "inner_optimizers",
    "is_hyperstep_optimizer",
    "leaf_optimizers",
]

#: wrappers nest rarely deeper than two (SkipNonFinite around a LossScaleOptimizer)
_DEPTH = 8


def is_hyperstep_optimizer(optimizer: Any) -> bool:
    """Whether ``optimizer`` itself holds hyperstep hyperparameters and a clock."""
    clock = getattr(optimizer, "clock", None)
    return isinstance(clock, Clock) and isinstance(
        getattr(optimizer, "hyperparameters", None), dict
    )


def inner_optimizers(optimizer: Any) -> list[Any]:
    """The optimizers ``optimizer`` wraps directly: its ``inner_optimizer``
    (``LossScaleOptimizer``, ``hs.SkipNonFinite``), a ``MultiOptimizer``'s ``optimizers``,
    none for an optimizer that updates variables itself."""
    inner = getattr(optimizer, "inner_optimizer", None)
    if inner is not None:  # a wrapper, also one that shows its inner's hyperparameters
        return [inner]
    if is_hyperstep_optimizer(optimizer) or not _is_keras_optimizer(optimizer):
        return []
    many = getattr(optimizer, "optimizers", None)
    return list(many) if isinstance(many, (list, tuple)) else []


def every_optimizer(optimizer: Any) -> list[Any]:
    """``optimizer`` and every optimizer inside it, outermost first, each once.

    Example:
        >>> import keras, hyperstep as hs
        >>> opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
        >>> wrapped = keras.optimizers.LossScaleOptimizer(opt)
        >>> every_optimizer(wrapped) == [wrapped, opt]
        True
    """
    found: list[Any] = []
    pending: list[tuple[Any, int]] = [(optimizer, 0)]
    while pending:
        current, depth = pending.pop(0)
        if current is None or depth > _DEPTH or any(current is f for f in found):
            continue
        found.append(current)
        pending.extend((each, depth + 1) for each in inner_optimizers(current))
    return found


def leaf_optimizers(optimizer: Any) -> list[Any]:
    """The optimizers in ``optimizer`` that update variables themselves (no wrapper),
    outermost first."""
    return [o for o in every_optimizer(optimizer) if not inner_optimizers(o)]


def hyperstep_optimizers(optimizer: Any) -> list[Any]:
    """Every hyperstep optimizer in ``optimizer``: itself, or those its wrappers hold
    (``inner_optimizer``: ``LossScaleOptimizer``, ``hs.SkipNonFinite``; ``optimizers``:
    ``MultiOptimizer``, in its order). Empty for anything else.

    Example:
        >>> import keras, hyperstep as hs
        >>> opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
        >>> wrapped = keras.optimizers.LossScaleOptimizer(opt)
        >>> hyperstep_optimizers(wrapped) == [opt]
        True
    """
    return [o for o in leaf_optimizers(optimizer) if is_hyperstep_optimizer(o)]


def accumulation_steps(optimizer: Any) -> int:
    """Batches per applied update: the ``gradient_accumulation_steps`` of the first
    optimizer in ``optimizer`` (outermost first) that has one, else 1."""
    for found in every_optimizer(optimizer):
        steps = getattr(found, "gradient_accumulation_steps", None)
        if steps:
            return int(steps)
    return 1


def hyperstep_optimizer(optimizer: Any) -> Any:
    """The one hyperstep optimizer in ``optimizer`` (see :func:`hyperstep_optimizers`), or
    ``optimizer`` itself when it holds none or several (the caller then reports it)."""
    found = hyperstep_optimizers(optimizer)
    return found[0] if len(found) == 1 else optimizer


def _is_keras_optimizer(value: Any) -> bool:
    import keras

    return isinstance(value, keras.optimizers.Optimizer)
