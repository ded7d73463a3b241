"""The hyperstep optimizers inside an optimizer and its wrappers.

``model.optimizer`` is often not the optimizer compiled: under ``mixed_float16`` Keras wraps
it in ``keras.optimizers.LossScaleOptimizer``; ``hs.SkipNonFinite`` wraps one too (both as
``inner_optimizer``), and ``keras.optimizers.MultiOptimizer`` holds several (``optimizers``).
:func:`hyperstep_optimizers` looks through all of them; every hyperstep tool that takes an
optimizer (``hs.ReduceOnPlateau``, ``hs.Cooldown``, ``LogHyperparameters``, ``read_all``,
``hs.SWA``/``hs.EMA``, ``hs.tune.trainable``, ``hs.find_lr``) goes through it.

A hyperstep optimizer is one with a hyperstep ``clock`` and a ``hyperparameters`` dict
(``hs.scheduled(...)``, ``hs.StepOptimizer``).
"""

from __future__ import annotations

from typing import Any

from hyperstep.clock import Clock

__all__ = ["hyperstep_optimizer", "hyperstep_optimizers", "is_hyperstep_optimizer"]

#: wrappers nest rarely deeper than two (SkipNonFinite around a LossScaleOptimizer)
_DEPTH = 8


def is_hyperstep_optimizer(optimizer: Any) -> bool:
    """Whether ``optimizer`` itself holds hyperstep hyperparameters and a clock."""
    clock = getattr(optimizer, "clock", None)
    return isinstance(clock, Clock) and isinstance(
        getattr(optimizer, "hyperparameters", None), dict
    )


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
    found: list[Any] = []
    pending: list[tuple[Any, int]] = [(optimizer, 0)]
    while pending:
        current, depth = pending.pop(0)
        if current is None or depth > _DEPTH or any(current is f for f in found):
            continue
        inner = getattr(current, "inner_optimizer", None)
        if inner is not None:  # a wrapper, also one that shows its inner's hyperparameters
            pending.append((inner, depth + 1))
            continue
        if is_hyperstep_optimizer(current):
            found.append(current)
            continue
        many = getattr(current, "optimizers", None) if _is_keras_optimizer(current) else None
        if isinstance(many, (list, tuple)):
            pending.extend((each, depth + 1) for each in many)
    return found


def hyperstep_optimizer(optimizer: Any) -> Any:
    """The one hyperstep optimizer in ``optimizer`` (see :func:`hyperstep_optimizers`), or
    ``optimizer`` itself when it holds none or several (the caller then reports it)."""
    found = hyperstep_optimizers(optimizer)
    return found[0] if len(found) == 1 else optimizer


def _is_keras_optimizer(value: Any) -> bool:
    import keras

    return isinstance(value, keras.optimizers.Optimizer)
