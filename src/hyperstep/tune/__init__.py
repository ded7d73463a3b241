"""Tuning: the learning-rate range test and population-based training on Ray Tune.

:func:`find_lr` runs the range test; :func:`trainable` and :func:`replay` run and replay
population-based training (Ray is imported only by :func:`trainable`).
"""

from hyperstep.tune.finding import LRFinding
from hyperstep.tune.lr_find import find_lr
from hyperstep.tune.ray import trainable
from hyperstep.tune.replay import replay

__all__ = ["LRFinding", "find_lr", "replay", "trainable"]
