"""One test per doctor code: the smallest model with exactly that problem, in fit() style
(compiled loss) and custom-loop style (loss_fn and var_list) where both apply.

The catalogue runs on the Keras backend of the process (``KERAS_BACKEND``; TensorFlow by
default, JAX and torch through ``test_backends.py``): each code's case is written with
that backend's own mistake (a raw ``tf.Variable``, ``torch.nn.Parameter`` or ``jax.Array``)
and its op names (``Round`` on TensorFlow, ``round`` on JAX and torch).
"""

import types

import keras
import numpy as np
import pytest

import hyperstep as hs

#: every pass: the doctor's catalogue on each backend's own mistakes (see tests/conftest.py)
pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

BACKEND = keras.backend.backend()
TF = BACKEND == "tensorflow"
ops = keras.ops


def raw(value):
    """A variable Keras does not track, as a user of this backend makes one."""
    if TF:
        import tensorflow as tf

        return tf.Variable(value)
    if BACKEND == "torch":
        import torch

        return torch.nn.Parameter(torch.tensor(value))
    import jax.numpy as jnp

    return jnp.asarray(value, "float32")


def container():
    """An object Keras does not look inside (TF: ``tf.Module``)."""
    if TF:
        import tensorflow as tf

        return tf.Module()
    return types.SimpleNamespace()


X = np.linspace(-1.0, 1.0, 12, dtype="float32").reshape(4, 3)
Y = np.ones((4, 1), "float32")


def mse(model, batch):
    x, y = batch
    return keras.ops.mean((model(x, training=True) - y) ** 2)


class Scaled(keras.Model):
    """Dense(1) times a scalar `scale`, through `transform` (identity by default)."""

    def __init__(self, transform=None, trainable_scale=True, **kwargs):
        super().__init__(**kwargs)
        self.transform = transform or (lambda s: s)
        self.dense = keras.layers.Dense(1)
        self.scale = self.add_weight(
            shape=(), initializer="ones", name="scale", trainable=trainable_scale
        )

    def call(self, x):
        return self.dense(x) * self.transform(self.scale)


def compiled(model, optimizer="sgd"):
    model.compile(optimizer=optimizer, loss="mse")
    return model


def only(diagnosis, code):
    found = [f for f in diagnosis.findings if f.code == code]
    assert found, f"no {code} finding in:\n{diagnosis}"
    return found


def assert_findings(diagnosis, expected):
    assert sorted((f.code, f.path) for f in diagnosis.findings) == sorted(expected), str(diagnosis)


def test_healthy_scaled_model_has_no_findings_in_both_styles():
    model = compiled(Scaled(name="m"))
    assert hs.doctor(model, (X, Y)).ok
    assert hs.doctor(Scaled(name="c"), (X, Y), loss_fn=mse).ok


# --- untracked -----------------------------------------------------------------------


class RawScale(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(1)
        self.scale = raw(2.0)

    def call(self, x):
        return self.dense(x) * self.scale


def test_raw_tf_variable_attribute_is_untracked_in_fit_style():
    diagnosis = hs.doctor(compiled(RawScale(name="m")), (X, Y))
    assert_findings(diagnosis, [("untracked", "m/scale")])
    finding = diagnosis.findings[0]
    assert "self.add_weight(shape=(), initializer=keras.initializers.Constant(2.0)" in finding.fix
    assert "non-zero" in finding.why


def test_raw_tf_variable_attribute_is_untracked_in_a_custom_loop():
    model = RawScale(name="c")
    model(X)
    diagnosis = hs.doctor(model, (X, Y), loss_fn=mse, var_list=model.trainable_variables)
    assert_findings(diagnosis, [("untracked", "c/scale")])


class Hidden(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.scales = [raw(1.0), raw(3.0)]
        self.module = container()
        self.module.offset = raw(0.5)

    def call(self, x):
        return x * self.scales[0] * self.scales[1] + self.module.offset


def test_variables_in_untracked_containers_are_untracked_with_their_container_path():
    model = compiled(keras.Sequential([keras.Input((3,)), Hidden(name="h")], name="s"))
    diagnosis = hs.doctor(model, (X, np.ones((4, 3), "float32")))
    assert_findings(
        diagnosis,
        [
            ("untracked", "s/h/scales/0"),
            ("untracked", "s/h/scales/1"),
            ("untracked", "s/h/module/offset"),
        ],
    )
    what = {f.path: f.what for f in diagnosis.findings}
    assert "list attribute `scales`" in what["s/h/scales/0"]
    assert "an object Keras does not look inside" in what["s/h/module/offset"]


# --- stale-in-optimizer --------------------------------------------------------------


def test_rebinding_after_fit_is_stale_in_the_optimizer_and_the_cached_train_function():
    model = compiled(Scaled(name="m"))
    model.fit(X, Y, verbose=0)
    model.scale = raw(5.0)  # the rebinding mistake: should be model.scale.assign(5.0)
    diagnosis = hs.doctor(model, (X, Y))
    assert_findings(diagnosis, [("stale-in-optimizer", "m/scale"), ("untracked", "m/scale")])
    stale = only(diagnosis, "stale-in-optimizer")[0]
    assert "the optimizer" in stale.what
    # only TensorFlow's train_function captures variables; JAX's and torch's read them per call
    assert ("train_function" in stale.what) is TF
    assert "assign" in only(diagnosis, "untracked")[0].fix


def test_rebinding_after_building_the_optimizer_is_stale_in_a_custom_loop():
    model = Scaled(name="c")
    model(X)
    optimizer = keras.optimizers.SGD(0.1)
    optimizer.build(model.trainable_variables)
    model.scale = raw(5.0)
    diagnosis = hs.doctor(model, (X, Y), loss_fn=mse, optimizer=optimizer)
    stale = only(diagnosis, "stale-in-optimizer")
    assert [f.path for f in stale] == ["c/scale"]
    assert "the optimizer" in stale[0].what and "train_function" not in stale[0].what


# --- non-float-dtype -----------------------------------------------------------------


class Counter(Scaled):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.count = self.add_weight(shape=(), initializer="zeros", dtype="int32", name="count")


@pytest.mark.parametrize("style", ["fit", "loop"])
def test_trainable_integer_variable_is_non_float_dtype(style):
    if BACKEND == "torch":
        # torch itself refuses the mistake: an integer Parameter cannot require a gradient
        with pytest.raises(RuntimeError, match="floating point and complex dtype"):
            Counter(name="m")
        return
    model = Counter(name="m")
    kwargs = {"loss_fn": mse} if style == "loop" else {}
    diagnosis = hs.doctor(compiled(model) if style == "fit" else model, (X, Y), **kwargs)
    assert_findings(diagnosis, [("non-float-dtype", "m/count")])
    assert "trainable=False" in diagnosis.findings[0].fix


# --- not-trainable -------------------------------------------------------------------


@pytest.mark.parametrize("style", ["fit", "loop"])
def test_user_variable_on_the_loss_path_marked_non_trainable_is_not_trainable(style):
    model = Scaled(trainable_scale=False, name="m")
    kwargs = {"loss_fn": mse} if style == "loop" else {}
    diagnosis = hs.doctor(compiled(model) if style == "fit" else model, (X, Y), **kwargs)
    assert_findings(diagnosis, [("not-trainable", "m/scale")])


def test_frozen_layers_and_keras_own_state_are_not_findings():
    model = keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(4, name="frozen"),
            keras.layers.BatchNormalization(),
            keras.layers.Dropout(0.5),
            keras.layers.Dense(1),
        ]
    )
    model.get_layer("frozen").trainable = False
    assert hs.doctor(compiled(model), (X, Y)).ok


# --- not-in-optimizer ----------------------------------------------------------------


def test_variable_left_out_of_the_loops_var_list_is_not_in_optimizer():
    model = Scaled(name="c")
    model(X)
    var_list = model.dense.trainable_variables  # forgot model.scale
    diagnosis = hs.doctor(model, (X, Y), loss_fn=mse, var_list=var_list)
    assert_findings(diagnosis, [("not-in-optimizer", "c/scale")])
    assert "var_list" in diagnosis.findings[0].what


def test_layer_unfrozen_after_the_optimizer_was_built_is_not_in_optimizer():
    model = compiled(
        keras.Sequential(
            [keras.Input((3,)), keras.layers.Dense(2, name="a"), keras.layers.Dense(1, name="b")],
            name="s",
        )
    )
    model.get_layer("a").trainable = False
    model.fit(X, Y, verbose=0)
    model.get_layer("a").trainable = True
    diagnosis = hs.doctor(model, (X, Y))
    assert_findings(
        diagnosis, [("not-in-optimizer", "s/a/kernel"), ("not-in-optimizer", "s/a/bias")]
    )
    assert "built without it" in diagnosis.findings[0].what


# --- unused --------------------------------------------------------------------------


@pytest.mark.parametrize("style", ["fit", "loop"])
def test_variable_the_loss_never_reads_is_unused(style):
    model = Scaled(transform=lambda s: 1.0, name="m")
    kwargs = {"loss_fn": mse} if style == "loop" else {}
    diagnosis = hs.doctor(compiled(model) if style == "fit" else model, (X, Y), **kwargs)
    assert_findings(diagnosis, [("unused", "m/scale")])
    assert "no path" in diagnosis.findings[0].why


# --- blocked -------------------------------------------------------------------------


def _blockers():
    """Each backend's op name (as the finding names it) and a transform blocked by it."""
    if TF:
        import tensorflow as tf

        return {
            "StopGradient": tf.stop_gradient,
            "ArgMax": lambda s: tf.cast(tf.argmax(tf.stack([s * 1.0, 1.0 - s])), tf.float32),
            "Round": tf.round,
            "Floor": tf.floor,
            "Ceil": tf.math.ceil,
            "Sign": tf.sign,
            "Cast": lambda s: tf.cast(tf.cast(s * 3.0, tf.int32), tf.float32),
            "Greater": lambda s: tf.where(s > 0.5, 2.0, 1.0),
            "EagerPyFunc": lambda s: tf.ensure_shape(
                tf.py_function(lambda v: np.float32(v.numpy() * 2.0), [s], tf.float32), ()
            ),
        }
    cases = {
        "stop": ops.stop_gradient,
        "argmax": lambda s: ops.cast(ops.argmax(ops.stack([s * 1.0, 1.0 - s])), "float32"),
        "round": ops.round,
        "floor": ops.floor,
        "ceil": ops.ceil,
        "sign": ops.sign,
        "cast": lambda s: ops.cast(ops.cast(s * 3.0, "int32"), "float32"),
        "greater": lambda s: ops.where(s > 0.5, 2.0, 1.0),
    }
    names = {
        "jax": {"stop": "stop_gradient", "cast": "convert_element_type", "greater": "gt"},
        "torch": {"stop": "detach", "cast": "to"},
    }[BACKEND]
    return {names.get(case, case): transform for case, transform in cases.items()}


BLOCKERS = _blockers()


@pytest.mark.parametrize("op", sorted(BLOCKERS))
def test_path_through_a_non_differentiable_op_is_blocked_and_names_the_op(op):
    model = compiled(Scaled(transform=BLOCKERS[op], name="m"))
    diagnosis = hs.doctor(model, (X, Y))
    blocked = only(diagnosis, "blocked")
    assert [f.path for f in blocked] == ["m/scale"]
    # the call as the user's line writes it, else (the line calls `self.transform`) the op
    written = {"ArgMax": "tf.argmax", "Cast": "tf.cast", "Greater": ">", "gt": ">",
               "greater": ">", "EagerPyFunc": "tf.py_function", "argmax": "ops.argmax",
               "convert_element_type": "ops.cast", "to": "ops.cast"}  # fmt: skip
    assert blocked[0].what.startswith(f"gradient blocked by {written.get(op, op)} (created at ")
    assert "test_codes.py:" in blocked[0].what  # the user's source line


def test_blocked_in_a_custom_loop_names_the_op_in_the_loss_function():
    model = Scaled(name="c")
    model(X)
    if TF:
        import tensorflow as tf

        rounded = tf.round
    else:
        rounded = keras.ops.round

    def loss_fn(model, batch):
        x, y = batch
        return keras.ops.mean((model.dense(x) * rounded(model.scale) - y) ** 2)

    diagnosis = hs.doctor(model, (X, Y), loss_fn=loss_fn)
    assert_findings(diagnosis, [("blocked", "c/scale")])
    what = diagnosis.findings[0].what
    assert what.startswith(f"gradient blocked by {'Round' if TF else 'round'} (created at ")
    assert "test_codes.py:" in what and "* rounded(model.scale) - y) ** 2)`" in what
    # the line calls `rounded`: the fix spells Keras 3's ops, which run on every backend
    assert "keras.ops.stop_gradient(keras.ops.round(x) - x)" in diagnosis.findings[0].fix


# --- zero-gradient -------------------------------------------------------------------


def dead_relu_model(name):
    return keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(
                4,
                activation="relu",
                bias_initializer=keras.initializers.Constant(-100.0),
                name="dead",
            ),
            keras.layers.Dense(1, name="out"),
        ],
        name=name,
    )


@pytest.mark.parametrize("style", ["fit", "loop"])
def test_dead_relu_gives_zero_gradient(style):
    model = dead_relu_model("m")
    kwargs = {"loss_fn": mse} if style == "loop" else {}
    diagnosis = hs.doctor(compiled(model) if style == "fit" else model, (X, Y), **kwargs)
    assert_findings(
        diagnosis,
        [
            ("zero-gradient", "m/dead/kernel"),
            ("zero-gradient", "m/dead/bias"),
            ("zero-gradient", "m/out/kernel"),
        ],
    )


def test_multiplying_by_zero_gives_zero_gradient_for_the_scale():
    model = compiled(Scaled(transform=lambda s: s * 0.0, name="m"))
    codes = {(f.code, f.path) for f in hs.doctor(model, (X, Y)).findings}
    assert ("zero-gradient", "m/scale") in codes


# --- zero-learning-rate --------------------------------------------------------------


def test_zero_learning_rate_names_the_optimizers_rate():
    model = compiled(Scaled(name="m"), keras.optimizers.SGD(learning_rate=0.0, name="sgd_zero"))
    diagnosis = hs.doctor(model, (X, Y))
    assert_findings(diagnosis, [("zero-learning-rate", "sgd_zero/learning_rate")])
    assert "at step 0" in diagnosis.findings[0].what


def test_schedule_that_is_zero_now_and_next_step_is_zero_learning_rate_in_a_custom_loop():
    schedule = keras.optimizers.schedules.PiecewiseConstantDecay([10], [0.0, 0.1])
    optimizer = keras.optimizers.Adam(schedule)
    diagnosis = hs.doctor(Scaled(name="c"), (X, Y), loss_fn=mse, optimizer=optimizer)
    assert diagnosis.codes() == ["zero-learning-rate"]


def test_warmup_from_zero_is_not_a_finding():
    schedule = keras.optimizers.schedules.CosineDecay(0.0, 100, warmup_target=0.1, warmup_steps=10)
    model = compiled(Scaled(name="m"), keras.optimizers.SGD(schedule))
    assert hs.doctor(model, (X, Y)).ok


def test_a_groups_zero_learning_rate_is_named_and_the_rest_is_healthy():
    optimizer = hs.StepOptimizer(
        "sgd",
        learning_rate=0.1,
        groups=[hs.Group("frozen", match="*/scale", learning_rate=0.0)],
        name="grouped",
    )
    diagnosis = hs.doctor(Scaled(name="g"), (X, Y), loss_fn=mse, optimizer=optimizer)
    assert_findings(diagnosis, [("zero-learning-rate", "grouped/frozen/learning_rate")])
    assert "group 'frozen'" in diagnosis.findings[0].what
    assert "hs.Group('frozen'" in diagnosis.findings[0].fix


def test_a_scheduled_warmup_from_zero_is_not_a_finding():
    optimizer = hs.scheduled(
        keras.optimizers.SGD(), learning_rate=hs.schedules.warmup(0.1, steps=10)
    )
    model = compiled(Scaled(name="m"), optimizer)
    assert hs.doctor(model, (X, Y)).ok


def test_optimizer_built_for_a_previous_model_with_the_same_paths_is_stale():
    def make():
        return keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="d")], name="s")

    optimizer = keras.optimizers.SGD(0.1)
    optimizer.build(make().trainable_variables)
    rebuilt = make()  # e.g. re-created after loading, still handed the old optimizer
    diagnosis = hs.doctor(rebuilt, (X, Y), loss_fn=mse, optimizer=optimizer)
    assert_findings(
        diagnosis, [("stale-in-optimizer", "s/d/kernel"), ("stale-in-optimizer", "s/d/bias")]
    )


def test_raw_tf_variable_behind_stop_gradient_is_untracked_and_blocked():
    class RawBlocked(RawScale):
        def call(self, x):
            return self.dense(x) * ops.stop_gradient(self.scale)

    diagnosis = hs.doctor(compiled(RawBlocked(name="m")), (X, Y))
    if BACKEND == "jax":
        # a jax.Array is a constant to Keras: one the loss cannot move is not a variable
        assert diagnosis.ok, str(diagnosis)
        return
    assert_findings(diagnosis, [("untracked", "m/scale"), ("blocked", "m/scale")])
    assert "blocked by ops.stop_gradient (created at" in only(diagnosis, "blocked")[0].what


def test_a_constant_jax_array_or_buffer_the_loss_does_not_move_is_not_a_finding():
    class Constant(Scaled):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.table = keras.ops.convert_to_tensor(np.ones((3,), "float32"))

        def call(self, x):
            return super().call(x * ops.stop_gradient(self.table))

    assert hs.doctor(compiled(Constant(name="m")), (X, Y)).ok


# --- the batch: empty-batch, nan-loss -------------------------------------------------


@pytest.mark.parametrize("style", ["fit", "loop"])
def test_an_empty_batch_is_reported_as_such_and_nothing_else(style):
    model = Scaled(name="m")
    kwargs = {"loss_fn": mse} if style == "loop" else {}
    diagnosis = hs.doctor(compiled(model) if style == "fit" else model, (X[:0], Y[:0]), **kwargs)
    assert_findings(diagnosis, [("empty-batch", "data")])
    assert "shape (0, 3)" in diagnosis.findings[0].what
    assert diagnosis.loss is None


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_nan_or_infinite_loss_is_reported_instead_of_gradient_findings(bad):
    x = X.copy()
    x[1, 2] = bad
    diagnosis = hs.doctor(compiled(dead_relu_model("m")), (x, Y))  # would be zero-gradient
    assert_findings(diagnosis, [("nan-loss", "loss")])
    assert not np.isfinite(diagnosis.loss)
    assert diagnosis.to_dict()["loss"] is None  # JSON has no NaN


def test_a_nan_loss_keeps_the_findings_that_do_not_need_a_gradient():
    x = X.copy()
    x[0, 0] = np.nan
    model = compiled(Scaled(name="m"), keras.optimizers.SGD(learning_rate=0.0, name="sgd"))
    diagnosis = hs.doctor(model, (x, Y))
    assert_findings(diagnosis, [("nan-loss", "loss"), ("zero-learning-rate", "sgd/learning_rate")])
