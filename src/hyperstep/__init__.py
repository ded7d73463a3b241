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
from hyperstep.optim.groups import Group  # noqa: E402
from hyperstep.optim.optimizer import StepOptimizer  # noqa: E402
from hyperstep.optim.scheduled import scheduled  # noqa: E402
from hyperstep.schedules import parse  # noqa: E402
from hyperstep.tune import LRFinding, find_lr  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "Clock",
    "Diagnosis",
    "Finding",
    "Group",
    "Hyperparameter",
    "LRFinding",
    "ReduceOnPlateau",
    "StepOptimizer",
    "__version__",
    "callbacks",
    "doctor",
    "errors",
    "find_lr",
    "parse",
    "rules",
    "scheduled",
    "schedules",
]
