"""The units of hyperstep.schedules._ops: in a process that imported Keras, schedules compute
with ``keras.ops`` itself, in float64 (float32 only on JAX without x64)."""

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


def test_wide_is_float64_unless_jax_runs_without_x64() -> None:
    expected = "float64"
    if keras.backend.backend() == "jax":
        import jax

        expected = "float64" if jax.config.jax_enable_x64 else "float32"
    assert expected == _ops.WIDE
    wide = keras.ops.convert_to_tensor(0.1, dtype=_ops.WIDE)
    assert keras.backend.standardize_dtype(wide.dtype) == expected
