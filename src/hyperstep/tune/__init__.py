"""Tuning before training: the learning-rate range test (:func:`find_lr`)."""

from hyperstep.tune.finding import LRFinding
from hyperstep.tune.lr_find import find_lr

__all__ = ["LRFinding", "find_lr"]
