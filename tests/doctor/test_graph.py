"""The units of hyperstep.diagnosis.graph (TensorFlow only: its checks run in the
TensorFlow pass, which needs no marker): ``GraphFacts`` traces a
hand-written loss once and classifies each variable's paths to it, naming the op that
stops a gradient and the test's own source line."""

import keras
import tensorflow as tf

from hyperstep.diagnosis.graph import NON_DIFFERENTIABLE, GraphFacts


def test_open_unused_and_blocked_paths() -> None:
    a, b, c, d = (tf.Variable(float(i + 1)) for i in range(4))

    def loss(x):
        return a * x + tf.stop_gradient(b) * x + tf.cast(tf.cast(d, "int32"), "float32")

    graph = GraphFacts(loss, tf.constant(2.0))
    assert graph.path(a).kind == "open"
    assert graph.path(c).kind == "unused"  # never read
    blocked = graph.path(b)
    assert blocked.kind == "blocked" and blocked.blockers[0].type == "StopGradient"
    assert "test_graph.py" in blocked.blockers[0].source  # the line that made it
    cast = graph.path(d)  # an integer edge carries no gradient
    assert cast.kind == "blocked" and cast.blockers[0].type == "Cast"


def test_a_keras_variable_is_found_through_its_handle() -> None:
    w = keras.Variable(3.0)
    graph = GraphFacts(lambda x: tf.round(w * x), tf.constant(1.5))
    path = graph.path(w)
    assert path.kind == "blocked" and [op.type for op in path.blockers] == ["Round"]
    assert "Round" in NON_DIFFERENTIABLE


def test_normalized_is_a_path_through_the_centred_input_of_moments() -> None:
    shift, scale = tf.Variable(0.5), tf.Variable(2.0)

    def loss(x):
        h = x + shift  # a shift before a normalization cancels
        mean, variance = tf.nn.moments(h, axes=[0])
        return tf.reduce_sum((h - mean) / tf.sqrt(variance + 1e-3)) * scale

    graph = GraphFacts(loss, tf.constant([1.0, 2.0, 4.0]))
    assert graph.normalized(shift) is True
    assert graph.normalized(scale) is False
    assert graph.normalized(tf.Variable(1.0)) is False  # not in the graph
