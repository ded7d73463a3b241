"""Schedules: pure, vectorized, serializable functions of the step.

One vocabulary for Python, the command line and config files (``hs.parse`` reads its
expressions)::

    import hyperstep as hs
    s = hs.schedules.warmup(hs.schedules.cosine(1e-3, steps=10_000, end=1e-5), steps=500)
    s(0); s(np.arange(1_000_000))

The classes behind the vocabulary (``Cosine``, ``Warmup``, the expression nodes
``BinaryOp``, ``Step``, ...) are importable from their modules
(:mod:`hyperstep.schedules.base`, ``families``, ``cycles``, ``combinators``, ``wsd``).
"""

from typing import Any

from hyperstep.errors import renamed
from hyperstep.schedules.base import Constant as constant
from hyperstep.schedules.base import (
    Schedule,
    as_schedule,
    bind_epochs,
    clip,
    maximum,
    minimum,
)
from hyperstep.schedules.combinators import join, warmup
from hyperstep.schedules.families import (
    cosine,
    cosine_restarts,
    cyclic,
    exponential,
    inverse_sqrt,
    inverse_time,
    linear,
    one_cycle,
    piecewise,
    polynomial,
    wsd,
)
from hyperstep.schedules.hf import from_hf
from hyperstep.schedules.sample import sample

__all__ = [
    "Schedule",
    "as_schedule",
    "bind_epochs",
    "clip",
    "constant",
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
    "sample",
    "warmup",
    "wsd",
]


def __getattr__(name: str) -> Any:
    # Keras's schedules are imported only when asked for (the command line plots without Keras)
    if name == "from_keras":
        from hyperstep.schedules.keras_compat import from_keras

        return from_keras
    return _renamed(name)


#: ``hs.schedules.parse`` until 0.1 (the module is ``hyperstep.schedules.language``)
_renamed = renamed(__name__, {"parse": "hyperstep.parse"}, stacklevel=3)
