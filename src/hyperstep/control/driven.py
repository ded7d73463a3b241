"""The table through which :class:`hyperstep.Remote` drives a replaced schedule into a step
that runs several steps per call (``fit(steps_per_execution=k)``, callbacks between calls).

``override_at(step) = override if set (not nan) else table[step - start] if 0 <= step -
start < N else nan``: the effective override a hyperparameter reads once it is *armed*
(:meth:`hyperstep.Hyperparameter.arm`, before the step is traced). ``table`` (float32, ``N``
entries, nan where unused) and ``start`` (an integer) are variables the Remote writes at
every execution boundary with the next ``N >= k`` values of the replaced schedule, exactly
the float32 numbers it would write into the override one step at a time; so the step is
traced once, and an unarmed hyperparameter's step has none of these ops.
"""

from __future__ import annotations

import math
from typing import Any

import keras
from keras import ops

from hyperstep.backends import integer_dtype, read_once

__all__ = ["START", "TABLE", "new_table", "override_at"]

#: the names of the two variables (not saved: the Remote writes them from its journal)
TABLE, START = "driven_table", "driven_start"


def new_table(layer: Any, steps: int) -> tuple[Any, Any]:
    """Create ``(table, start)`` on ``layer`` (a hyperparameter): ``steps`` nan entries,
    ``start = -1``."""
    table = layer.add_weight(
        shape=(steps,),
        dtype="float32",
        initializer=keras.initializers.Constant(math.nan),
        trainable=False,
        aggregation="only_first_replica",
        name=TABLE,
    )
    start = layer.add_weight(
        shape=(),
        dtype=integer_dtype(),
        initializer=keras.initializers.Constant(-1),
        trainable=False,
        aggregation="only_first_replica",
        name=START,
    )
    return table, start


def override_at(override: Any, armed: tuple[Any, Any], step: Any) -> Any:
    """The effective override at ``step`` (a scalar or an array of steps): see the module
    docstring."""
    table, start = armed
    values = read_once(table)
    size = int(table.shape[0])
    index = ops.subtract(ops.cast(step, "int32"), ops.cast(start.value, "int32"))
    inside = ops.logical_and(ops.greater_equal(index, 0), ops.less(index, size))
    entry = ops.take(values, ops.clip(index, 0, size - 1))
    entry = ops.where(inside, entry, math.nan)
    return ops.where(ops.isnan(override), entry, override)
