"""Schedules evaluated with NumPy (``hyperstep plot``'s path, no Keras) equal TensorFlow's.

A subprocess asks for NumPy schedules before anything imports Keras, evaluates every
family, combinator, operator and function of the vocabulary on a grid of steps, and checks
that neither Keras nor a backend was imported; this process evaluates the same expressions
with ``keras.ops`` on TensorFlow. Schedules built from IEEE float32 arithmetic alone are
bitwise equal; those with ``exp``, ``log``, ``sin``, ``cos`` or ``power`` agree to a few
float32 ulps (TensorFlow's float32 kernels and NumPy's correctly rounded float64-then-
float32 results may differ in the last bits; the same tolerance as between Keras backends).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hyperstep as hs

#: IEEE float32 arithmetic only: bitwise equal
EXACT = [
    "constant(0.1)",
    "linear(0.0, 1.0, steps=1000)",
    "linear(0.3, 0.1, steps=700, begin=50)",
    "inverse_time(0.1, 0.5, every=10)",
    "inverse_time(0.1, 0.5, every=10, staircase=True)",
    "polynomial(0.1, 0.001, steps=1000)",
    "polynomial(0.1, 0.0, steps=300, cycle=True)",
    "piecewise([100, 500], [0.1, 0.01, 0.001])",
    "piecewise([100, 500], [0.1, 0.01, 0.001], inclusive=True)",
    "cyclic(0.1, 1.0, steps_up=100, steps_down=50)",
    "one_cycle(1.0, steps=1000, anneal='linear')",
    "warmup(linear(1.0, 0.0, steps=900), steps=100)",
    "join([linear(0.0, 1.0, steps=100), 1.0, linear(1.0, 0.5, steps=300)], [100, 400])",
    "step / 1000 + 0.01",
    "-step * 2 - 1",
    "min(step / 100, 1.0) * max(0.5, 0.25)",
    "clip(step / 100, 0.2, 0.7)",
    "where(step < 500, 0.1, 0.01)",
    "floor(step / 7) + ceil(step / 3) + abs(0.5 - step / 1000)",
    "sqrt(step)",
    "(step > 10) + (step >= 10) + (step == 10) + (step != 10) + (step <= 5)",
    "(step - 500) % 7 + (step - 500) // 7 + step % -3 + (0.001 - 1e-05) / (15 - 1)",
    "wsd(1.0, warmup=100, stable=300, decay=400, decay_type='linear', min_ratio=0.1)",
    "wsd(1.0, warmup=100, stable=300, decay=400, decay_type='1-sqrt')",
    "inverse_sqrt(1.0, warmup=100)",
]
#: with transcendental functions: a few ulps
CLOSE = [
    "exponential(0.1, 0.96, every=100)",
    "exponential(0.1, 0.5, every=100, staircase=True, begin=20, end=0.001)",
    "cosine(1e-3, steps=1000)",
    "cosine(1.0, steps=1000, end=0.1, exponent=2.0)",
    "cosine(1.0, steps=300, past_end='periodic')",
    "cosine_restarts(1.0, steps=100)",
    "cosine_restarts(1.0, steps=100, t_mul=1.0, m_mul=0.5, end=0.01)",
    "polynomial(0.1, 0.0, steps=1000, power=2.0)",
    "cyclic(0.1, 1.0, steps_up=100, mode='triangular2')",
    "cyclic(0.1, 1.0, steps_up=100, mode='exp_range', gamma=0.999)",
    "one_cycle(1.0, steps=1000)",
    "one_cycle(1.0, steps=1000, three_phase=True, compat='optax')",
    "warmup(cosine(1e-3, steps=9000, end=1e-5), steps=1000, start=1e-5)",
    "0.1 * 0.5 ** (step / 100)",
    "exp(-step / 100) + log(1 + step) + cos(step / 10) + sin(step / 10)",
    "0.95 - 0.1 * min(step / 1000, 1)",
    "wsd(1.0, warmup=100, stable=300, decay=400, warmup_type='cosine', decay_type='cosine')",
    "wsd(1.0, warmup=100, stable=300, decay=400, decay_type='exponential', min_ratio=0.1)",
    "pi * e * cos(step / 100)",
]
STEPS = [*range(0, 1200), 1500, 2047, 4096, 10_000, 123_456, 1_000_000, 16_777_216]

WORKER = textwrap.dedent(
    """
    import json, sys
    from hyperstep.backends import numpy_ops
    assert numpy_ops.request()
    from hyperstep import parse
    texts, steps = json.loads(sys.stdin.read())
    values = {t: parse(t)(steps).astype("float32").tolist() for t in texts}
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"keras", "tensorflow", "jax", "torch"})
    print(json.dumps({"values": values, "imported": heavy}))
    """
)


@pytest.fixture(scope="module")
def on_numpy() -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", WORKER],
        input=json.dumps([EXACT + CLOSE, STEPS]),
        capture_output=True,
        text=True,
        env={**os.environ, "KERAS_BACKEND": "tensorflow"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, object] = json.loads(done.stdout)
    return found


def on_tensorflow(text: str) -> np.ndarray:
    return np.asarray(hs.parse(text)(np.array(STEPS, dtype=np.int64)), dtype=np.float32)


def test_numpy_schedules_import_no_keras_and_no_backend(on_numpy: dict[str, object]) -> None:
    assert on_numpy["imported"] == []


@pytest.mark.parametrize("text", EXACT)
def test_float32_arithmetic_schedules_are_bitwise_equal(
    on_numpy: dict[str, object], text: str
) -> None:
    got = np.array(on_numpy["values"][text], dtype=np.float32)  # type: ignore[index]
    np.testing.assert_array_equal(got, on_tensorflow(text), err_msg=text)


@pytest.mark.parametrize("text", CLOSE)
def test_transcendental_schedules_agree_to_a_few_ulps(
    on_numpy: dict[str, object], text: str
) -> None:
    got = np.array(on_numpy["values"][text], dtype=np.float32)  # type: ignore[index]
    expected = on_tensorflow(text)
    scale = float(np.max(np.abs(expected)))
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=4 * 2.0**-23 * scale, err_msg=text)
