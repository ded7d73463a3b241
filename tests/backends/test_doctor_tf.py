"""Units of hyperstep.backends.doctor_tf, the doctor's TensorFlow half: what its raw variables are,
and the loss's ``tf.Graph`` as a trace that names the op stopping a gradient and the test's own
source line (the contract every backend's half keeps: tests/backends/test_doctor.py; the whole
diagnosis: tests/doctor)."""

from __future__ import annotations

import types

import keras
import tensorflow as tf

from hyperstep.backends import doctor_tf as backend
from hyperstep.diagnosis import probe
from hyperstep.diagnosis.paths import TraceFacts


def test_raw_variables_are_tf_variables() -> None:
    frozen = tf.Variable(1.0, trainable=False)
    assert backend.is_raw_variable(frozen) and not backend.raw_trainable(frozen)
    assert backend.raw_kind(frozen) == "tf.Variable"
    assert not backend.is_raw_variable(keras.Variable(1.0))
    assert isinstance(backend.underlying(keras.Variable(1.0)), tf.Variable)


def _graph(compute, batch, variables) -> TraceFacts:
    raw = [types.SimpleNamespace(variable=v) for v in variables if isinstance(v, tf.Variable)]
    tracked = [v for v in variables if isinstance(v, keras.Variable)]
    return TraceFacts(backend.trace(compute, batch, tracked, raw), probe.key)


def test_open_unused_and_blocked_paths() -> None:
    a, b, c, d = (tf.Variable(float(i + 1)) for i in range(4))

    def loss(x):
        return a * x + tf.stop_gradient(b) * x + tf.cast(tf.cast(d, "int32"), "float32")

    graph = _graph(loss, tf.constant(2.0), [a, b, c, d])
    assert graph.path(a).kind == "open"
    assert graph.path(c).kind == "unused"  # never read
    blocked = graph.path(b)
    assert blocked.kind == "blocked" and blocked.blockers[0].type == "StopGradient"
    assert "test_doctor_tf.py" in blocked.blockers[0].source  # the line that made it
    cast = graph.path(d)  # an integer edge carries no gradient
    assert cast.kind == "blocked" and cast.blockers[0].type == "Cast"


def test_a_keras_variable_is_found_through_its_handle() -> None:
    w = keras.Variable(3.0)
    graph = _graph(lambda x: tf.round(w * x), tf.constant(1.5), [w])
    path = graph.path(w)
    assert path.kind == "blocked" and [op.type for op in path.blockers] == ["Round"]
    assert "Round" in backend.NON_DIFFERENTIABLE


def test_a_nested_function_passes_gradients_unless_read_as_opaque() -> None:
    w = tf.Variable(2.0)
    inner = tf.function(lambda x: tf.stop_gradient(w) * x)  # its body: another graph
    graph = _graph(lambda x: inner(x) * 1.0, tf.constant(1.0), [w])
    assert graph.path(w).kind == "open"
    opaque = graph.path(w, opaque=True)
    assert opaque.kind == "blocked" and opaque.blockers[0].type in backend.NESTED


def test_normalized_is_a_path_through_the_centred_input_of_moments() -> None:
    shift, scale = tf.Variable(0.5), tf.Variable(2.0)

    def loss(x):
        h = x + shift  # a shift before a normalization cancels
        mean, variance = tf.nn.moments(h, axes=[0])
        return tf.reduce_sum((h - mean) / tf.sqrt(variance + 1e-3)) * scale

    graph = _graph(loss, tf.constant([1.0, 2.0, 4.0]), [shift, scale])
    assert graph.normalized(shift) is True
    assert graph.normalized(scale) is False
    assert graph.normalized(tf.Variable(1.0)) is False  # not in the graph
