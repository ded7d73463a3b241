"""``from_keras`` of Keras's six built-in schedules is Keras's own float32 value, bit for bit,
at every step of a random grid (0..3x the horizon, every boundary +-1): eagerly against Keras
eagerly, traced against Keras traced, on TensorFlow here and on JAX and torch in their pytest
passes (``keras_bitwise_worker.py``)."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import keras
import pytest
import tensorflow as tf

import hyperstep

HERE = pathlib.Path(__file__).parent
_spec = importlib.util.spec_from_file_location("keras_cases", HERE / "keras_cases.py")
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)


def _tf_trace(fn):
    return tf.function(fn, autograph=False, reduce_retracing=True)


def _assert_bitwise(report, repeats):
    grid = cases.cases(repeats=repeats)
    assert report["cases"] == len(grid)
    assert report["steps"] == sum(len(steps) for _, _, steps in grid)
    assert report["eager"] == [], json.dumps(report["eager"][:3])
    assert report["traced"] == [], json.dumps(report["traced"][:3])


# one draw of every case in make test (the first of the two, as on JAX and torch); both draws
# in make test-slow
@pytest.mark.parametrize("repeats", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_from_keras_is_bitwise_keras_on_tensorflow_eagerly_and_in_tf_function(repeats):
    report = cases.compare(keras, hyperstep, _tf_trace, repeats=repeats)
    # the four Keras formulas, and the two vocabulary words that already compute Keras's ops
    assert set(report["kinds"]) == {
        "ExponentialDecay",
        "PolynomialDecay",
        "CosineDecay",
        "CosineDecayRestarts",
        "InverseTime",
        "Piecewise",
    }
    _assert_bitwise(report, repeats)


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_from_keras_is_bitwise_keras_on_other_backends(backend, workers):
    report = workers(HERE / "keras_bitwise_worker.py", [backend])[backend]
    assert report["backend"] == backend
    _assert_bitwise(report, 1)
