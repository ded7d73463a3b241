"""The ops schedules are written with: ``keras.ops``, or NumPy in a process without Keras.

Chosen once, when :mod:`hyperstep.schedules` is first imported: NumPy
(:mod:`hyperstep.backends.numpy_ops`) only if the process asked for it with
``numpy_ops.request()`` before importing Keras (the command line's ``plot`` does), else
``keras.ops`` itself, so the training path is exactly ``keras.ops`` code.
"""

from __future__ import annotations

from typing import Any

from hyperstep.backends import numpy_ops

#: whether schedules evaluate with NumPy in this process (no Keras imported for them)
NUMPY: bool = numpy_ops.selected()

ops: Any = numpy_ops
#: the dtype the vocabulary's words compute in before rounding to float32 once (see
#: ``hyperstep.backends.wide_float_dtype``): float64 but on JAX without x64
WIDE = "float64"
if not NUMPY:
    from keras import ops as keras_ops

    from hyperstep.backends import wide_float_dtype

    ops = keras_ops
    WIDE = wide_float_dtype()
