# The public surface of `import hyperstep as hs`, written once: one line per name, sorted.
# Type checkers and editors read this file as the package's stub; hyperstep/__init__.py reads
# it to build `__all__` and to import each name on its first use (PEP 562), so that `import
# hyperstep` imports no Keras. tests/test_public_api.py checks it.
from hyperstep import callbacks as callbacks
from hyperstep import errors as errors
from hyperstep import rules as rules
from hyperstep import schedules as schedules
from hyperstep import tune as tune
from hyperstep.clock import Clock as Clock
from hyperstep.control.controllers import ReduceOnPlateau as ReduceOnPlateau
from hyperstep.control.cooldown import Cooldown as Cooldown
from hyperstep.control.hyperparameter import Hyperparameter as Hyperparameter
from hyperstep.control.remote import Remote as Remote
from hyperstep.diagnosis.diagnose import doctor as doctor
from hyperstep.diagnosis.report import Diagnosis as Diagnosis
from hyperstep.diagnosis.report import Finding as Finding
from hyperstep.optim.averaging import EMA as EMA
from hyperstep.optim.averaging import SWA as SWA
from hyperstep.optim.averaging import averaged_weights as averaged_weights
from hyperstep.optim.averaging import refresh_batch_norm as refresh_batch_norm
from hyperstep.optim.averaging import swa_learning_rate as swa_learning_rate
from hyperstep.optim.finite import SkipNonFinite as SkipNonFinite
from hyperstep.optim.groups import Group as Group
from hyperstep.optim.optimizer import StepOptimizer as StepOptimizer
from hyperstep.optim.scheduled import scheduled as scheduled
from hyperstep.schedules.language import parse as parse
from hyperstep.tune.finding import LRFinding as LRFinding
from hyperstep.tune.lr_find import find_lr as find_lr

__version__: str
