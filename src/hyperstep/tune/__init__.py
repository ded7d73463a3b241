"""Tuning: population-based training on Ray Tune.

:func:`trainable` and :func:`replay` run and replay population-based training (Ray is
imported only by :func:`trainable`). The learning-rate range test is ``hs.find_lr``
(``hs.tune.find_lr`` and ``hs.tune.LRFinding`` until 0.1: the former names still work, with a
``DeprecationWarning``).
"""

from hyperstep.errors import renamed
from hyperstep.tune.ray import trainable
from hyperstep.tune.replay import replay

__all__ = ["replay", "trainable"]

__getattr__ = renamed(
    __name__, {"find_lr": "hyperstep.find_lr", "LRFinding": "hyperstep.LRFinding"}
)
