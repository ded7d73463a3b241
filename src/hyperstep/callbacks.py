"""Keras callbacks, gathered in one namespace: ``hs.callbacks.X`` (per-step logging, a
cooldown's start, the doctor, averaged weights, fit's epochs, and :func:`read_all` for custom
loops). The classes live in the rooms that own them (``control``, ``diagnosis``, ``optim``);
this module only re-exports them. The plateau controller, a callback too, is
``hs.ReduceOnPlateau``.
"""

from hyperstep.control.callbacks import LogHyperparameters
from hyperstep.control.cooldown import StartCooldown
from hyperstep.control.epochs import FollowEpochs
from hyperstep.control.reading import read_all
from hyperstep.diagnosis.callback import Doctor
from hyperstep.optim.averaging import AveragedWeights

__all__ = [
    "AveragedWeights",
    "Doctor",
    "FollowEpochs",
    "LogHyperparameters",
    "StartCooldown",
    "read_all",
]
