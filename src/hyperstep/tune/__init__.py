"""Tuning: the learning-rate range test (:func:`find_lr`) and population-based training on
Ray Tune (:func:`trainable`, :func:`replay`; Ray is imported only by :func:`trainable`)."""

from hyperstep.tune.finding import LRFinding
from hyperstep.tune.lr_find import find_lr
from hyperstep.tune.ray import trainable
from hyperstep.tune.replay import replay

__all__ = ["LRFinding", "find_lr", "replay", "trainable"]
