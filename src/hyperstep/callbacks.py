"""Keras callbacks, gathered in one namespace: ``hs.callbacks.X``.

- :class:`LogHyperparameters`: every hyperparameter's value in ``fit``'s logs, per-step CSV
  and TensorBoard scalars.
- :class:`StartCooldown`: starts a :class:`hyperstep.Cooldown` at a step or epoch, after a
  time budget, or when a file appears.
- :class:`Doctor`: a pre-flight diagnosis on the first batch of ``fit()``.
- :class:`AveragedWeights`: evaluate, predict and save with averaged weights (schedule-free
  ``x``, SWA, EMA) inside ``fit``.
- :class:`FollowEpochs`: ``epoch`` is fit's epoch (what every ``fit`` does by itself; for a
  clock the model does not reach).
- :func:`read_all`: every hyperparameter's value in one call, for custom loops.

The classes live in the rooms that own them (``control``, ``diagnosis``, ``optim``); this
module only re-exports them. The plateau controller, a callback too, is ``hs.ReduceOnPlateau``.
"""

from hyperstep.control.callbacks import LogHyperparameters, read_all
from hyperstep.control.cooldown import StartCooldown
from hyperstep.control.epochs import FollowEpochs
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
