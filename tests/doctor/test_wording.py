"""The doctor's words fit the user's code on every backend: each finding code, triggered by
the smallest model with that mistake, reads as sentences (no template leftovers), names
the user's variable, layer, optimizer and call as the user wrote them (``keras.ops.
stop_gradient``, not TensorFlow's ``StopGradient`` or torch's ``detach``), and names no
backend function the user's code does not call."""

import inspect
import re
import types

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.backends.traces import TracedOp
from hyperstep.diagnosis import BATCH_CODES, CODES
from hyperstep.diagnosis.checks import as_written

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

BACKEND = keras.backend.backend()
ops = keras.ops
X = np.linspace(-1.0, 1.0, 12, dtype="float32").reshape(4, 3)
Y = np.ones((4, 1), "float32")


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


def compiled(model, optimizer="sgd"):
    model.compile(optimizer=optimizer, loss="mse")
    return model


def mse(model, batch):
    x, y = batch
    return ops.mean((model(x, training=True) - y) ** 2)


def single(layer, name="m", inputs=3):
    return keras.Sequential([keras.Input((inputs,)), layer], name=name)


class Weighted(keras.layers.Layer):
    """A layer with one weight `w` (3 x 1) whose call is `through(x, w)`."""

    def __init__(self, through, trainable_weight=True, dtype_of_w="float32", **kwargs):
        super().__init__(**kwargs)
        self.through = through
        self.w = self.add_weight(
            shape=(3, 1), name="w", trainable=trainable_weight, dtype=dtype_of_w
        )

    def call(self, x):
        return self.through(x, self.w)


# ---- one case per mistake: the code it gives and what its text must name -----------------
CASES = {}


def case(code, *backends):
    def register(function):
        if not backends or BACKEND in backends:
            CASES[function.__name__] = (code, function)
        return function

    return register


@case("empty-batch")
def empty_batch():
    model = compiled(single(keras.layers.Dense(1, name="d")))
    return hs.doctor(model, (X[:0], Y[:0])), {"data": ["shape (0, 3)"]}


@case("nan-loss")
def nan_loss():
    x = X.copy()
    x[1, 2] = np.nan
    model = compiled(single(keras.layers.Dense(1, name="d")))
    return hs.doctor(model, (x, Y)), {"loss": ["is nan"]}


class Holder(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.offset = raw(0.5)
        self.table = {"bias": raw(0.25)}
        self.space = types.SimpleNamespace(shift=raw(0.75))

    def call(self, x):
        return x + self.offset + self.table["bias"] + self.space.shift


@case("untracked")
def untracked():
    model = compiled(single(Holder(name="holder"), name="s"))
    return hs.doctor(model, (X, np.ones((4, 3), "float32"))), {
        "s/holder/offset": ["attribute `offset` of Holder `s/holder`", "self.offset = "],
        "s/holder/table/bias": ["dict attribute `table` (key bias)", 'self.table = {"bias": '],
        "s/holder/space/shift": ["`space/shift` of Holder", "self.shift = self.add_weight("],
    }


class Scaled(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(1)
        self.scale = self.add_weight(shape=(), initializer="ones", name="scale")

    def call(self, x):
        return self.dense(x) * self.scale


@case("stale-in-optimizer")
def stale_in_optimizer():
    model = compiled(Scaled(name="m"))
    model.fit(X, Y, verbose=0)
    model.scale = raw(2.0)  # should be model.scale.assign(2.0)
    found = hs.doctor(model, (X, Y))
    return found, {"scale": ["`m/scale`", "variable.assign(new_value)"]}


@case("non-float-dtype", "tensorflow", "jax")  # torch refuses it: test_codes.py
def non_float_dtype():
    model = single(Weighted(lambda x, w: x[:, :1] + ops.cast(w[0], "float32"), name="n",
                            dtype_of_w="int32"))  # fmt: skip
    return hs.doctor(compiled(model), (X, Y)), {"n/w": ["dtype int32", 'dtype="int32"']}


@case("not-trainable")
def not_trainable():
    model = single(Weighted(ops.matmul, trainable_weight=False, name="frozen"))
    found = hs.doctor(model, (X, Y), loss_fn=mse)
    return found, {"frozen/w": ["created by Weighted", "`frozen/w`"]}


@case("not-in-optimizer")
def not_in_optimizer():
    model = single(keras.layers.Dense(1, name="d"))
    model(X)
    found = hs.doctor(model, (X, Y), loss_fn=mse, var_list=[model.layers[0].bias])
    return found, {"d/kernel": ["var_list", "model.trainable_variables"]}


class Unused(keras.layers.Layer):
    def build(self, shape):
        self.gain = self.add_weight(shape=(), name="gain")
        self.extra = keras.layers.Dense(1, name="extra")
        self.extra.build(shape)

    def call(self, x):
        return ops.sum(x, axis=-1, keepdims=True)


@case("unused")
def unused():
    found = hs.doctor(compiled(single(Unused(name="u"))), (X, Y))
    return found, {
        "u/gain": ["Unused.call() (e.g. return x * self.gain)"],
        "u/extra/kernel": ["extra` in the model's call()"],
        "u/extra/bias": ["extra` in the model's call()"],
    }


def blocked_case(through, called, fix):
    found = hs.doctor(compiled(single(Weighted(through, name="b"))), (X, Y))
    return found, {"b/w": [f"gradient blocked by {called} (created at ", fix]}


@case("blocked")
def blocked_by_stop_gradient():
    return blocked_case(
        lambda x, w: ops.matmul(x, keras.ops.stop_gradient(w)),
        "keras.ops.stop_gradient",
        "remove keras.ops.stop_gradient around it",
    )


@case("blocked")
def blocked_by_round():
    return blocked_case(
        lambda x, w: ops.round(ops.matmul(x, w)),
        "ops.round",
        "y = x + ops.stop_gradient(ops.round(x) - x)",
    )


@case("blocked")
def blocked_by_a_cast_to_integers():
    return blocked_case(
        lambda x, w: ops.cast(ops.cast(ops.matmul(x, w), "int32"), "float32"),
        "ops.cast",
        "y = x + ops.stop_gradient(hard(x) - x)",
    )


@case("blocked")
def blocked_by_a_comparison():
    return blocked_case(
        lambda x, w: ops.where(ops.matmul(x, w) > 0.0, 1.0, 0.0),
        ">",
        "compare softly, e.g. ops.sigmoid((a - b) / t).",
    )


@case("blocked")
def blocked_by_argmax():
    return blocked_case(
        lambda x, w: ops.cast(ops.argmax(ops.matmul(x, w) * x, axis=-1)[:, None], "float32"),
        "ops.argmax",
        "y = soft + ops.stop_gradient(hard - soft)",
    )


@case("zero-gradient")
def zero_gradient():
    dead = keras.layers.Dense(4, activation="relu", name="dead",
                              bias_initializer=keras.initializers.Constant(-100.0))  # fmt: skip
    model = keras.Sequential([keras.Input((3,)), dead, keras.layers.Dense(1, name="out")], name="m")
    found = hs.doctor(compiled(model), (X, Y))
    return found, {path: ["exactly 0"] for path in ("dead/kernel", "dead/bias", "out/kernel")}


def zero_rate_case(optimizer, path, names):
    model = single(keras.layers.Dense(1, name="d"))
    return hs.doctor(model, (X, Y), loss_fn=mse, optimizer=optimizer), {path: names}


@case("zero-learning-rate")
def zero_learning_rate_of_a_keras_optimizer():
    return zero_rate_case(
        keras.optimizers.SGD(learning_rate=0.0, name="sgd_zero"),
        "sgd_zero/learning_rate",
        ["the learning rate of SGD is 0", "keras.optimizers.SGD(learning_rate=1e-3)"],
    )


@case("zero-learning-rate")
def zero_learning_rate_of_a_scheduled_optimizer():
    return zero_rate_case(
        hs.scheduled(keras.optimizers.Adam(name="adam"), learning_rate=hs.schedules.constant(0.0)),
        "adam/learning_rate",
        ["the learning rate of Adam is 0", "hs.scheduled(keras.optimizers.Adam(), learning_"],
    )


@case("zero-learning-rate")
def zero_learning_rate_of_a_group():
    optimizer = hs.StepOptimizer(
        "sgd", learning_rate=0.1, name="grouped",
        groups=[hs.Group("frozen", match="*/bias", learning_rate=0.0)],
    )  # fmt: skip
    return zero_rate_case(
        optimizer,
        "grouped/frozen/learning_rate",
        ["the learning rate of group 'frozen' of StepOptimizer is 0", "hs.Group('frozen', "],
    )


# ---- the checks ---------------------------------------------------------------------------
#: a template's leftovers: a placeholder, a missing value, a doubled word or space
LEFTOVERS = re.compile(r"\{\w*\}|\bNone\b|  |\b(\w+) \1\b")
#: a backend's own name for an op, or the trace's label for it
TRACE_LABELS = re.compile(
    r"\(op '|\beqn \d|torch \w+ #\d|\b(StopGradient|Round|ArgMax|Greater|Cast|detach)\b"
)


def user_code(function) -> str:
    """The code the user wrote for a case: the case, the helpers it calls, ``raw``."""
    helpers = (raw, Holder, Unused, Weighted, Scaled)
    return "\n".join(inspect.getsource(f) for f in (function, *helpers))


def prose(text: str) -> str:
    """The text without the user's quoted source lines (they may say anything)."""
    return re.sub(r"created at \S+?:\d+: `[^`]*`", "created at LINE", text)


def assert_reads_well(finding, names, code):
    what, why, fix = (prose(t) for t in (finding.what, finding.why, finding.fix))
    assert what and not what.endswith("."), what  # a cell of the table after the path
    for sentence in (why, fix):
        assert sentence.endswith(".") and not sentence.endswith(".."), sentence
    for text in (what, why, fix):
        assert not LEFTOVERS.search(text), text
        assert text.count("(") == text.count(")") and text.count("`") % 2 == 0, text
        assert not TRACE_LABELS.search(text), text  # the call as written, not the trace's op
        for name in re.findall(r"\b(?:tf|torch|jnp|jax)\.[\w.]*\w", text):
            # jax.Array: the type of what the user's jnp.asarray made
            assert name in code or name == "jax.Array", f"{name!r} is not in the code: {text}"
    for name in names:
        assert name in finding.what + " " + finding.fix, (name, finding)


def test_the_cases_trigger_every_code():
    codes = {code for code, _ in CASES.values()}
    missing = {"non-float-dtype"} if BACKEND == "torch" else set()
    assert codes == set(BATCH_CODES + CODES) - missing
    if BACKEND == "torch":  # torch itself refuses the mistake: no finding needed
        with pytest.raises(RuntimeError, match="floating point and complex dtype"):
            Weighted(ops.matmul, dtype_of_w="int32")


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_finding_reads_as_sentences_naming_what_the_user_wrote(name):
    code, make = CASES[name]
    diagnosis, names = make()
    found = [(f.path.removeprefix("m/"), f) for f in diagnosis.findings if f.code == code]
    assert sorted(path for path, _ in found) == sorted(names), str(diagnosis)
    for path, finding in found:
        assert_reads_well(finding, names[path], user_code(make))


def test_a_fix_keeps_tensorflow_s_spelling_for_tensorflow_code_and_names_detach():
    fix = "use a straight-through estimator: y = x + tf.stop_gradient(tf.round(x) - x)"
    assert as_written(fix, TracedOp("Round", "m/Round", "m.py:3: `y = tf.round(x)`")) == fix
    assert as_written(fix, TracedOp("Round", "m/Round", None)) == fix
    assert as_written(fix, TracedOp("Round", "m/Round", "m.py:3: `y = tf.math.round(x)`")) == (
        "use a straight-through estimator: y = x + tf.stop_gradient(tf.math.round(x) - x)"
    )
    torch_fix = "remove keras.ops.stop_gradient (or .detach()) around it"
    assert as_written(torch_fix, TracedOp("detach", "d", "m.py:3: `w = self.w.detach()`")) == (
        "remove .detach() around it"
    )
    written = TracedOp("detach", "d", "m.py:3: `w = keras.ops.stop_gradient(self.w)`")
    assert as_written(torch_fix, written) == "remove keras.ops.stop_gradient around it"
    assert as_written(torch_fix, TracedOp("detach", "d", None)) == torch_fix
    argmax = "y = soft + tf.stop_gradient(hard - soft)"
    assert as_written(argmax, TracedOp("ArgMax", "a", "m.py:3: `k = keras.ops.argmax(x)`")) == (
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
