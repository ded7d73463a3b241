"""The optimizers inside an optimizer: what ``hs.find_lr`` ramps and copies.

Keras's ``LossScaleOptimizer`` (what ``compile`` adds under ``mixed_float16``) and
``hs.SkipNonFinite`` hold one ``inner_optimizer``; Keras's ``MultiOptimizer`` holds several
(``optimizers``). ``hs.scheduled`` and ``hs.StepOptimizer`` optimizers are leaves: they
hold the hyperparameters and the clock.
"""

from __future__ import annotations

from typing import Any

import keras

from hyperstep.optim.optimizer import StepOptimizer
from hyperstep.optim.scheduled import ScheduledOptimizer


def is_hyperstep(optimizer: Any) -> bool:
    """Whether ``optimizer`` keeps hyperstep hyperparameters and a clock."""
    return isinstance(optimizer, (ScheduledOptimizer, StepOptimizer))


def inner(optimizer: Any) -> list[Any]:
    """The optimizers ``optimizer`` wraps directly (none for a leaf)."""
    if is_hyperstep(optimizer):
        return []
    found = getattr(optimizer, "inner_optimizer", None)
    if isinstance(found, keras.optimizers.Optimizer):
        return [found]
    multi = getattr(keras.optimizers, "MultiOptimizer", None)
    if multi is not None and isinstance(optimizer, multi):
        return list(optimizer.optimizers)
    return []


def every(optimizer: Any) -> list[Any]:
    """``optimizer`` and every optimizer inside it, outermost first, each once."""
    found: list[Any] = []
    pending = [optimizer]
    while pending:
        current = pending.pop(0)
        if all(current is not seen for seen in found):
            found.append(current)
            pending.extend(inner(current))
    return found


def leaves(optimizer: Any) -> list[Any]:
    """The optimizers that update variables themselves (no wrapper), outermost first."""
    return [o for o in every(optimizer) if not inner(o)]


def accumulation_steps(optimizer: Any) -> int:
    """Batches per applied update: the ``gradient_accumulation_steps`` of the first
    optimizer (outermost first) that has one, else 1."""
    for found in every(optimizer):
        steps = getattr(found, "gradient_accumulation_steps", None)
        if steps:
            return int(steps)
    return 1
