"""Update rules for :class:`hyperstep.StepOptimizer`, gathered in one namespace: ``hs.rules.X``:
the base class :class:`Rule` with :func:`register_rule` and :func:`get_rule`, the rules of
Keras's optimizers and the schedule-free ones (Defazio et al., arXiv 2405.15682). They live in
``hyperstep.optim.rules`` and ``hyperstep.optim.schedule_free``; this module re-exports them.
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
