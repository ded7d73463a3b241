"""The demo: a real training run that uses every piece of hyperstep, resumable.

An MLP learns scikit-learn's bundled 8x8 digits with one :class:`hyperstep.StepOptimizer`
(AdamW) on one clock: a scheduled learning rate under :class:`hyperstep.ReduceOnPlateau`, a
scheduled weight decay and a temperature group, the doctor first (README.md, "The demo", has
what it shows and writes). Stopped and run again, :func:`train` resumes after the last
complete epoch and ends with bit-identical weights (:mod:`~hyperstep.demo.state`). The rooms:
:mod:`~hyperstep.demo.model`, :mod:`~hyperstep.demo.train`, :mod:`~hyperstep.demo.state` and
:mod:`~hyperstep.demo.report`.
"""

from hyperstep.demo.model import DEFAULT_EPOCHS, TARGET_ACCURACY, build_training, load_data
from hyperstep.demo.state import FILES, DamagedRunError
from hyperstep.demo.train import train

__all__ = [
    "DEFAULT_EPOCHS",
    "FILES",
    "TARGET_ACCURACY",
    "DamagedRunError",
    "build_training",
    "load_data",
    "train",
]
