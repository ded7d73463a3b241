"""Schedules: pure, vectorized, serializable functions of the step.

One vocabulary for Python, the command line and config files::

    import hyperstep as hs
    s = hs.schedules.warmup(hs.schedules.cosine(1e-3, steps=10_000, end=1e-5), steps=500)
    s(0); s(np.arange(1_000_000))
"""

from hyperstep.schedules.base import (
    BinaryOp,
    Chain,
    Constant,
    Epoch,
    Function,
    Negate,
    Schedule,
    Step,
    as_schedule,
    bind_epochs,
    clip,
    maximum,
    minimum,
)
from hyperstep.schedules.combinators import Join, Warmup, join, warmup
from hyperstep.schedules.families import (
    Cosine,
    CosineRestarts,
    Cyclic,
    Exponential,
    InverseSqrt,
    InverseTime,
    Linear,
    OneCycle,
    Piecewise,
    Polynomial,
    WarmupStableDecay,
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
from hyperstep.schedules.keras_compat import from_keras
from hyperstep.schedules.parse import parse
from hyperstep.schedules.sample import sample

constant = Constant

__all__ = [
    "BinaryOp",
    "Chain",
    "Constant",
    "Cosine",
    "CosineRestarts",
    "Cyclic",
    "Epoch",
    "Exponential",
    "Function",
    "InverseSqrt",
    "InverseTime",
    "Join",
    "Linear",
    "Negate",
    "OneCycle",
    "Piecewise",
    "Polynomial",
    "Schedule",
    "Step",
    "Warmup",
    "WarmupStableDecay",
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
    "parse",
    "piecewise",
    "polynomial",
    "sample",
    "warmup",
    "wsd",
]
