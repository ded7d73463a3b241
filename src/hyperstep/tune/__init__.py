"""Tuning: population-based training on Ray Tune (:mod:`hyperstep.tune.ray`); the
learning-rate range test is ``hs.find_lr``."""

from hyperstep.tune.ray import replay, trainable

__all__ = ["replay", "trainable"]
