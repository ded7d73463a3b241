"""Schedules: pure, vectorized, serializable functions of the step.

One vocabulary for Python, the command line and config files (``hs.parse`` reads its
expressions)::

    import hyperstep as hs
    s = hs.schedules.warmup(hs.schedules.cosine(1e-3, steps=10_000, end=1e-5), steps=500)
    s(0); s(np.arange(1_000_000))

The classes behind the vocabulary (``Cosine``, ``Warmup``, the expression nodes
``BinaryOp``, ``Step``, ...) are importable from their modules
(:mod:`hyperstep.schedules.expressions`, ``families``, ``combinators``, ``wsd``); the
:class:`Schedule` base class from ``base``.
"""

from hyperstep.backends import numpy_ops
from hyperstep.schedules import keras_formulas, language
from hyperstep.schedules.base import Schedule
from hyperstep.schedules.combinators import join, warmup
from hyperstep.schedules.expressions import Constant as constant
from hyperstep.schedules.expressions import (
    Step,
    Total,
    as_schedule,
    bind_epochs,
    bind_total,
    clip,
    maximum,
    minimum,
)
from hyperstep.schedules.families import (
    cosine,
    cosine_restarts,
    cyclic,
    exponential,
    inverse_time,
    linear,
    one_cycle,
    piecewise,
    polynomial,
)
from hyperstep.schedules.hf import from_hf
from hyperstep.schedules.sample import sample
from hyperstep.schedules.wsd import cooldown, inverse_sqrt, wsd

total = Total()
"""The run's length, ``clock.total``: ``cosine(3e-4, steps=total)`` (see :class:`Total`)."""
progress = Step() / total
"""The fraction of the run done, ``step / total``: ``1e-3 * (1 - progress) ** 2``."""

# every module that defines words of the vocabulary or a reader of as_schedule is imported
# here, which registers them (schedules.base.CLASSES and READERS); Keras's schedules (and
# from_keras) only where Keras is (the command line plots without it)
_REGISTERING = [keras_formulas, language]
if not numpy_ops.selected():
    from hyperstep.schedules import keras_compat
    from hyperstep.schedules.keras_compat import from_keras

    _REGISTERING.append(keras_compat)

__all__ = [
    "Schedule",
    "as_schedule",
    "bind_epochs",
    "bind_total",
    "clip",
    "constant",
    "cooldown",
    "cosine",
    "cosine_restarts",
    "cyclic",
    "exponential",
    "from_hf",
    "from_keras",
    "inverse_sqrt",
    "inverse_time",
    "join",
    "linear",
    "maximum",
    "minimum",
    "one_cycle",
    "piecewise",
    "polynomial",
    "progress",
    "sample",
    "total",
    "warmup",
    "wsd",
]
