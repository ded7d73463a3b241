"""The ops schedules are written with: ``keras.ops``, or NumPy in a process without Keras.

Chosen once, when :mod:`hyperstep.schedules` is first imported: NumPy
(:mod:`hyperstep.backends.numpy_ops`) only if the process asked for it with
``numpy_ops.request()`` before importing Keras (the command line's ``plot`` does), else
``keras.ops`` itself, so the training path is exactly ``keras.ops`` code.
"""

from __future__ import annotations

import contextlib
from typing import Any

from hyperstep.backends import numpy_ops

#: whether schedules evaluate with NumPy in this process (no Keras imported for them)
NUMPY: bool = numpy_ops.selected()

ops: Any = numpy_ops
#: a scope in which ``ops`` computes in float64, JAX without x64 included
#: (``hyperstep.backends.float64_scope``): the vocabulary's words compute in it
float64_scope: Any = contextlib.nullcontext
if not NUMPY:
    from keras import ops as keras_ops

    from hyperstep import backends

    ops = keras_ops
    float64_scope = backends.float64_scope
