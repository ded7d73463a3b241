"""StepOptimizer's arguments, checked: the Keras ones it passes through, the names its rule
declares, the clock it runs on.

``KERAS_ARGUMENTS`` are the Keras optimizer arguments ``StepOptimizer`` hands its base
class; :func:`check_names` raises for a hyperparameter the rule does not declare (naming the
valid ones); :func:`pick_clock` is the clock given, else a given Hyperparameter's, else a new
one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hyperstep.clock import Clock
from hyperstep.control.hyperparameter import Hyperparameter
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.optim.rules import Rule

__all__ = ["KERAS_ARGUMENTS", "check_names", "pick_clock"]

#: Keras optimizer arguments StepOptimizer passes through (``weight_decay`` is a rule's).
KERAS_ARGUMENTS = (
    "clipnorm",
    "clipvalue",
    "global_clipnorm",
    "use_ema",
    "ema_momentum",
    "ema_overwrite_frequency",
    "loss_scale_factor",
    "gradient_accumulation_steps",
)


def check_names(rule: Rule, owner: str, given: Mapping[str, Any]) -> None:
    """Raise for a name in ``given`` that ``rule`` does not declare (naming the valid ones)."""
    unknown = [key for key in given if key not in rule.hyperparameters]
    if unknown:
        shown = ", ".join(received(key, given[key]).removeprefix("Received: ") for key in unknown)
        raise InvalidArgumentError(
            f"`{owner}` got hyperparameters that rule {type(rule).__name__} does not declare: "
            f"{unknown}. Valid ones: {list(rule.hyperparameters)}"
            + (
                f" (and the Keras arguments {list(KERAS_ARGUMENTS)})"
                if owner == "StepOptimizer"
                else ""
            )
            + f". Received: {shown}"
        )


def pick_clock(clock: Any, tables: list[Mapping[str, Any]], name: str) -> Any:
    """``clock`` (checked), else the clock of the first Hyperparameter in ``tables``, else a
    new :class:`~hyperstep.Clock` named ``name``."""
    if clock is not None:
        if not isinstance(clock, Clock):
            raise InvalidTypeError(
                f"`StepOptimizer(clock=...)` must be an `hs.Clock`. {received('clock', clock)}"
            )
        return clock
    for table in tables:
        for value in table.values():
            if isinstance(value, Hyperparameter):
                return value.clock
    return Clock(name=name)
