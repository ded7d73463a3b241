"""The doctor's words fit the user's code on every backend: a ``blocked`` fix names the
call the user wrote (``keras.ops.stop_gradient``, not TensorFlow's graph op), and the
``untracked`` finding of a variable inside an untracked object reads as one sentence."""

import types

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.diagnosis.checks import as_written
from hyperstep.diagnosis.paths import OpFact

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

BACKEND = keras.backend.backend()
ops = keras.ops
X = np.linspace(-1.0, 1.0, 12, dtype="float32").reshape(4, 3)
Y = np.ones((4, 1), "float32")


class Frozen(keras.layers.Layer):
    def build(self, shape):
        self.w = self.add_weight(shape=(shape[-1], 1), name="w")

    def call(self, x):
        return ops.matmul(x, keras.ops.stop_gradient(self.w))


class Rounded(keras.layers.Layer):
    def build(self, shape):
        self.w = self.add_weight(shape=(shape[-1], 1), name="w")

    def call(self, x):
        return ops.round(ops.matmul(x, self.w))


def raw(value):
    """A variable Keras does not track, as a user of this backend makes one."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.Variable(value)
    if BACKEND == "torch":
        import torch

        return torch.nn.Parameter(torch.tensor(value))
    import jax.numpy as jnp

    return jnp.asarray(value, "float32")


def _diagnose():
    x = keras.Input((3,))
    y = Frozen(name="frozen")(x) + Rounded(name="rounded")(x)
    model = keras.Model(x, y, name="m")
    model.compile(optimizer="sgd", loss="mse")
    return {f.path: f for f in hs.doctor(model, (X, Y)).findings}


def test_each_finding_names_the_call_the_user_wrote_and_reads_as_a_sentence():
    found = _diagnose()
    assert sorted((f.code, path) for path, f in found.items()) == [
        ("blocked", "frozen/w"),
        ("blocked", "rounded/w"),
    ]
    detach = " (torch's detach)" if BACKEND == "torch" else ""
    assert found["frozen/w"].fix == (
        f"remove keras.ops.stop_gradient{detach} around it (or, if it is fixed on purpose, "
        "make it trainable=False)."
    )
    assert found["rounded/w"].fix == (
        "use a straight-through estimator: y = x + ops.stop_gradient(ops.round(x) - x)."
    )
    for finding in found.values():
        assert finding.why.endswith(".") and finding.fix.endswith("."), finding
        assert "tf." not in finding.fix  # the user wrote keras.ops on every backend


def test_a_fix_keeps_tensorflow_s_spelling_for_tensorflow_code_and_names_detach():
    fix = "use a straight-through estimator: y = x + tf.stop_gradient(tf.round(x) - x)"
    assert as_written(fix, OpFact("Round", "m/Round", "m.py:3: `y = tf.round(x)`")) == fix
    assert as_written(fix, OpFact("Round", "m/Round", None)) == fix
    assert as_written(fix, OpFact("Round", "m/Round", "m.py:3: `y = tf.math.round(x)`")) == (
        "use a straight-through estimator: y = x + tf.stop_gradient(tf.math.round(x) - x)"
    )
    torch_fix = "remove keras.ops.stop_gradient (torch's detach) around it"
    assert as_written(torch_fix, OpFact("detach", "d", "m.py:3: `w = self.w.detach()`")) == (
        "remove .detach() around it"
    )
    argmax = "y = soft + tf.stop_gradient(hard - soft)"
    assert as_written(argmax, OpFact("ArgMax", "a", "m.py:3: `k = keras.ops.argmax(x)`")) == (
        "y = soft + keras.ops.stop_gradient(hard - soft)"
    )


def test_a_variable_in_an_untracked_namespace_is_one_sentence_too():
    class Spaced(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.space = types.SimpleNamespace(offset=raw(0.5))

        def call(self, x):
            return x + self.space.offset

    model = keras.Sequential([keras.Input((3,)), Spaced(name="p")], name="s")
    model.compile(optimizer="sgd", loss="mse")
    [finding] = hs.doctor(model, (X, np.ones((4, 3), "float32"))).findings
    kind = {"tensorflow": "tf.Variable", "jax": "jax.Array", "torch": "torch Parameter"}
    assert finding.what == (
        f"{kind[BACKEND]} `space/offset` of Spaced `s/p` is not tracked: attribute `space` "
        "holds a SimpleNamespace, an object Keras does not look inside"
    )
