"""Tuning: population-based training on Ray Tune.

:func:`trainable` and :func:`replay` run and replay population-based training (Ray is
imported only by :func:`trainable`). The learning-rate range test is ``hs.find_lr``.
"""

from hyperstep.tune.ray import replay, trainable

__all__ = ["replay", "trainable"]
