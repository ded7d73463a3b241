"""Update rules for :class:`hyperstep.StepOptimizer`, gathered in one namespace: ``hs.rules.X``.

- :class:`Rule`: the base class (the equation of one step for one variable);
  :func:`register_rule` and :func:`get_rule` to name and find rules.
- Built-in rules matching Keras's optimizers: :class:`SGDRule`, :class:`AdamRule`,
  :class:`AdamWRule`, :class:`LionRule`.
- Schedule-free rules (Defazio et al., arXiv 2405.15682): :class:`ScheduleFreeAdamWRule`,
  :class:`ScheduleFreeSGDRule`.

The rules live in the optimizer room (``hyperstep.optim.rules``,
``hyperstep.optim.schedule_free``); this module only re-exports them.
"""

from hyperstep.optim.rules import (
    AdamRule,
    AdamWRule,
    LionRule,
    Rule,
    SGDRule,
    Values,
    get_rule,
    register_rule,
)
from hyperstep.optim.schedule_free import ScheduleFreeAdamWRule, ScheduleFreeSGDRule

__all__ = [
    "AdamRule",
    "AdamWRule",
    "LionRule",
    "Rule",
    "SGDRule",
    "ScheduleFreeAdamWRule",
    "ScheduleFreeSGDRule",
    "Values",
    "get_rule",
    "register_rule",
]
