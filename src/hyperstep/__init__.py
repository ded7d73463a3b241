"""hyperstep: the training step, first-class in Keras 3 / TensorFlow.

Schedule any hyperparameter, change it at run time without retracing, let metric-driven
controllers compose with schedules, resume exactly.
"""

from hyperstep._backend import check_backend as _check_backend

_check_backend()

from hyperstep import callbacks, errors, schedules  # noqa: E402
from hyperstep.clock import Clock  # noqa: E402
from hyperstep.control.controllers import ReduceOnPlateau  # noqa: E402
from hyperstep.control.hyperparameter import Hyperparameter  # noqa: E402
from hyperstep.doctor import Diagnosis, Finding, doctor  # noqa: E402
from hyperstep.optim import rules  # noqa: E402
from hyperstep.optim.averaging import (  # noqa: E402
    EMA,
    SWA,
    averaged_weights,
    refresh_batch_norm,
    swa_learning_rate,
)
from hyperstep.optim.finite import SkipNonFinite  # noqa: E402
from hyperstep.optim.groups import Group  # noqa: E402
from hyperstep.optim.optimizer import StepOptimizer  # noqa: E402
from hyperstep.optim.scheduled import scheduled  # noqa: E402
from hyperstep.schedules import parse  # noqa: E402

__version__ = "0.1.0"

__all__ = [  # noqa: RUF022 (plain sorted order, checked by tests/test_public_api.py)
    "Clock",
    "Diagnosis",
    "EMA",
    "Finding",
    "Group",
    "Hyperparameter",
    "ReduceOnPlateau",
    "SWA",
    "SkipNonFinite",
    "StepOptimizer",
    "__version__",
    "averaged_weights",
    "callbacks",
    "doctor",
    "errors",
    "parse",
    "refresh_batch_norm",
    "rules",
    "scheduled",
    "schedules",
    "swa_learning_rate",
]
