"""hyperstep: the training step, first-class in Keras 3 / TensorFlow.

Schedule any hyperparameter, change it at run time without retracing, let metric-driven
controllers compose with schedules, resume exactly.

Importing ``hyperstep`` is cheap: each public name is imported (and Keras with it) the first
time it is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hyperstep import _registration

__version__ = "0.1.0"

#: public name -> (module, attribute or None for the module itself)
_LAZY: dict[str, tuple[str, str | None]] = {
    "Clock": ("hyperstep.clock", "Clock"),
    "Cooldown": ("hyperstep.control.cooldown", "Cooldown"),
    "Diagnosis": ("hyperstep.doctor.report", "Diagnosis"),
    "EMA": ("hyperstep.optim.averaging", "EMA"),
    "Finding": ("hyperstep.doctor.report", "Finding"),
    "Group": ("hyperstep.optim.groups", "Group"),
    "Hyperparameter": ("hyperstep.control.hyperparameter", "Hyperparameter"),
    "LRFinding": ("hyperstep.tune.finding", "LRFinding"),
    "ReduceOnPlateau": ("hyperstep.control.controllers", "ReduceOnPlateau"),
    "Remote": ("hyperstep.control.remote", "Remote"),
    "SWA": ("hyperstep.optim.averaging", "SWA"),
    "SkipNonFinite": ("hyperstep.optim.finite", "SkipNonFinite"),
    "StepOptimizer": ("hyperstep.optim.optimizer", "StepOptimizer"),
    "averaged_weights": ("hyperstep.optim.averaging", "averaged_weights"),
    "callbacks": ("hyperstep.callbacks", None),
    "find_lr": ("hyperstep.tune.lr_find", "find_lr"),
    "errors": ("hyperstep.errors", None),
    "parse": ("hyperstep.schedules.parse", "parse"),
    "refresh_batch_norm": ("hyperstep.optim.averaging", "refresh_batch_norm"),
    "rules": ("hyperstep.rules", None),
    "scheduled": ("hyperstep.optim.scheduled", "scheduled"),
    "schedules": ("hyperstep.schedules", None),
    "swa_learning_rate": ("hyperstep.optim.averaging", "swa_learning_rate"),
    "tune": ("hyperstep.tune", None),
}

__all__ = [  # noqa: RUF022 (plain sorted order, checked by tests/test_public_api.py)
    "Clock",
    "Cooldown",
    "Diagnosis",
    "EMA",
    "Finding",
    "Group",
    "Hyperparameter",
    "LRFinding",
    "ReduceOnPlateau",
    "Remote",
    "SWA",
    "SkipNonFinite",
    "StepOptimizer",
    "__version__",
    "averaged_weights",
    "callbacks",
    "doctor",
    "errors",
    "find_lr",
    "parse",
    "refresh_batch_norm",
    "rules",
    "scheduled",
    "schedules",
    "swa_learning_rate",
    "tune",
]

# Cheap (no Keras): what hyperstep saved loads after `import hyperstep` alone, whether Keras
# is imported before or after (hyperstep._registration)
_registration.install()

# Eager and cheap (no Keras): the doctor package is callable, `hs.doctor(model, data)`;
# type checkers see the function it calls
if TYPE_CHECKING:
    from hyperstep.doctor import doctor
else:
    from hyperstep import doctor

if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from hyperstep import callbacks, errors, rules, schedules, tune
    from hyperstep.clock import Clock
    from hyperstep.control.controllers import ReduceOnPlateau
    from hyperstep.control.cooldown import Cooldown
    from hyperstep.control.hyperparameter import Hyperparameter
    from hyperstep.control.remote import Remote
    from hyperstep.doctor.report import Diagnosis, Finding
    from hyperstep.optim.averaging import (
        EMA,
        SWA,
        averaged_weights,
        refresh_batch_norm,
        swa_learning_rate,
    )
    from hyperstep.optim.finite import SkipNonFinite
    from hyperstep.optim.groups import Group
    from hyperstep.optim.optimizer import StepOptimizer
    from hyperstep.optim.scheduled import scheduled
    from hyperstep.schedules.parse import parse
    from hyperstep.tune import LRFinding, find_lr


def __getattr__(name: str) -> Any:
    """Import a public name on first use (PEP 562), checking Keras's backend first."""
    if name not in _LAZY:
        raise AttributeError(f"module 'hyperstep' has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    if name != "errors":
        from hyperstep.backends import check_backend

        check_backend()
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
