"""The demo: a real training run that uses every piece of hyperstep, resumable.

An MLP learns scikit-learn's bundled 8x8 digits (1,797 images; nothing is downloaded),
its logits divided by a trainable ``temperature``. One :class:`hyperstep.StepOptimizer`
(AdamW) on one :class:`hyperstep.Clock` runs:

* ``learning_rate = warmup(cosine(...))`` times the scale :class:`hyperstep.ReduceOnPlateau`
  lowers when ``val_loss`` stalls (the schedule keeps running underneath);
* ``weight_decay = linear(0, 0.05)`` over the run;
* the group ``temperature`` (the temperature variable) with its own learning rate
  schedule and no weight decay.

Before training :func:`hyperstep.doctor` checks that every variable trains. One line per
epoch shows the run; the run directory receives ``metrics.csv`` (per epoch),
``hyperparameters.csv`` (per step, from :class:`hyperstep.callbacks.LogHyperparameters`),
TensorBoard events, ``report.png``, ``model.weights.h5`` and ``summary.json``.

Stopping the run (Ctrl-C, or a kill) and calling :func:`train` again resumes after the
last complete epoch and ends with the same trajectories and bit-identical weights as an
uninterrupted run: the data order is a fixed permutation per epoch, ops are deterministic,
and the clock, hyperparameters and plateau state are optimizer variables saved with the
weights (:mod:`hyperstep.demo.state`). A finished run is not trained again; ``fresh=True``
starts over. The rooms: :mod:`~hyperstep.demo.model` (data, model, schedules, optimizer),
:mod:`~hyperstep.demo.train` (the run), :mod:`~hyperstep.demo.state` (the run directory)
and :mod:`~hyperstep.demo.report` (``report.png``).
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
