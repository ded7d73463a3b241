"""The units of hyperstep.schedules._ops: in a process that imported Keras, schedules compute
with ``keras.ops`` itself, in float64 (within ``float64_scope`` on JAX without x64)."""

import keras
import pytest

from hyperstep.backends import numpy_ops
from hyperstep.schedules import _ops

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")


def test_a_keras_process_computes_with_keras_ops() -> None:
    assert _ops.NUMPY is False
    assert _ops.ops is keras.ops
    # asking for NumPy once Keras is imported changes nothing (the documented contract)
    assert numpy_ops.request() is False and numpy_ops.selected() is False


def test_float64_scope_computes_in_float64_on_jax_without_x64_too() -> None:
    with _ops.float64_scope():
        wide = keras.ops.convert_to_tensor(0.1, dtype="float64")
        assert keras.backend.standardize_dtype(wide.dtype) == "float64"
        assert float(wide) == 0.1  # the Python float, not its float32 rounding
