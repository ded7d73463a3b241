"""The units of hyperstep.schedules.exact: the float32 rounding helpers and the exact float64
operations, against NumPy."""

import numpy as np
from keras import ops

from hyperstep.schedules import exact as c


def _np(x):
    return np.asarray(ops.convert_to_numpy(x))


def test_exact_floor_and_ceil_match_numpy_in_float64_next_to_integers() -> None:
    x = np.array([2.9999999999, 3.0, 3.0000000001, -0.5, -2.0000000001, 0.0, 1e15 + 0.5])
    tensor = ops.convert_to_tensor(x, dtype="float64")
    floor, ceil = _np(c.exact_floor(tensor)), _np(c.exact_ceil(tensor))
    assert floor.dtype == np.float64 and np.array_equal(floor, np.floor(x))
    assert np.array_equal(ceil, np.ceil(x))


def test_exact_minimum_and_maximum_keep_float64() -> None:
    a = ops.convert_to_tensor([1.0 + 2**-40, 3.0], dtype="float64")
    low, high = _np(c.exact_minimum(a, 2.0)), _np(c.exact_maximum(a, 2.0))
    assert low.dtype == np.float64 and low.tolist() == [1.0 + 2**-40, 2.0]
    assert high.tolist() == [2.0, 3.0]


def test_power_of_is_the_float64_power_of_the_exact_base() -> None:
    p = np.array([0.0, 1.0, 10.0, 1000.0, 12345.5])
    got = _np(c.power_of(0.9, ops.convert_to_tensor(p, dtype=c.WIDE)))
    np.testing.assert_allclose(got, 0.9**p, rtol=1e-14)


def test_cosine_weight_is_half_one_plus_cos_of_pi_times_one_minus_left() -> None:
    left = np.linspace(0.0, 1.0, 11)
    got = _np(c.cosine_weight(ops.convert_to_tensor(left, dtype="float64")))
    np.testing.assert_allclose(got, (1 + np.cos(np.pi * (1 - left))) / 2, atol=1e-15)


def test_rounded_once_computes_wide_and_rounds_to_float32_once() -> None:
    class Third:
        @c.rounded_once
        def value(self, step):
            return step / 3.0

    got = _np(Third().value(ops.convert_to_tensor([1, 2, 10], dtype="int32")))
    assert got.dtype == np.float32
    assert got.tolist() == [float(np.float32(k / 3.0)) for k in (1, 2, 10)]


def test_as_float32_and_widened_dtypes() -> None:
    assert _np(c.as_float32(0.1)).dtype == np.float32
    assert _np(c.widened(0.1)).item() == 0.1  # float64: the exact Python float
