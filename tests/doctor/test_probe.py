"""The units of hyperstep.diagnosis.probe (TensorFlow's pass): the first batch of each kind
of data, an empty batch, the compiled loss against Keras's own, the gradient kinds on a
hand-written loss, snapshot and restore, and what ``collect`` records per variable; the
bindings (TensorFlow's pass: raw ``tf.Variable`` and ``tf.Module``; torch's: a
``torch.nn.Parameter``): every variable reachable from a layer's attributes, named
``<layer.path>/<attribute>``, where it was found, and the dtype helpers; the variables an
optimizer and a cached ``train_function`` hold, and each learning rate now and at the next
step, read against the schedules' own values without changing any state."""

import types

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs
from hyperstep.backends.doctor import tracer
from hyperstep.diagnosis import probe

X, Y = np.arange(6, dtype="float32").reshape(3, 2), np.ones((3, 1), "float32")


def test_first_batch_of_each_kind_of_data() -> None:
    dataset = tf.data.Dataset.from_tensor_slices((X, Y)).batch(2)
    x, y = probe.first_batch(dataset)
    np.testing.assert_array_equal(np.asarray(x), X[:2])
    np.testing.assert_array_equal(np.asarray(y), Y[:2])

    class Data(keras.utils.PyDataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return X[i:], Y[i:]

    np.testing.assert_array_equal(np.asarray(probe.first_batch(Data())[0]), X)
    np.testing.assert_array_equal(np.asarray(probe.first_batch(iter([(X[1:], Y[1:])]))[0]), X[1:])
    np.testing.assert_array_equal(np.asarray(probe.first_batch((X, Y))[1]), Y)


def test_empty_batch_is_the_shape_of_the_first_array_without_rows() -> None:
    assert probe.empty_batch((X, Y)) is None
    assert probe.empty_batch({"a": X, "b": np.zeros((0, 4))}) == (0, 4)
    assert probe.empty_batch((np.float32(1.0), np.zeros((0,)))) == (0,)


def test_the_compiled_loss_is_kerass_on_the_training_call() -> None:
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    loss = probe.loss_function(model, None)((X, Y))
    prediction = keras.ops.convert_to_numpy(model(X))
    assert float(loss) == pytest.approx(float(np.mean((prediction - Y) ** 2)), rel=1e-6)
    custom = probe.loss_function(model, lambda m, batch: 2.0 * m(batch[0])[0, 0])
    assert float(custom((X, Y))) == pytest.approx(2.0 * float(prediction[0, 0]))


def test_gradient_kinds_tell_none_zero_and_nonzero() -> None:
    a, b, c = keras.Variable(2.0), keras.Variable(3.0), keras.Variable(4.0)
    integer = keras.Variable(1, dtype="int32")

    def compute(batch):
        return a * batch + 0.0 * b

    loss, kinds = probe.gradient_kinds(compute, 5.0, [a, b, c, integer])
    assert loss == 10.0
    assert kinds == {probe.key(a): "nonzero", probe.key(b): "zero", probe.key(c): "none"}


def test_snapshot_and_restore_put_values_back_bit_for_bit() -> None:
    v = keras.Variable(np.array([0.1, 0.2], "float32"))
    raw = tf.Variable(np.array([1.5], "float32"))
    saved = tracer().snapshot([v, raw, v])
    v.assign([9.0, 9.0])
    raw.assign([-1.0])
    tracer().restore(saved)
    np.testing.assert_array_equal(v.numpy(), np.array([0.1, 0.2], "float32"))
    np.testing.assert_array_equal(raw.numpy(), [1.5])


class Scaled(keras.layers.Layer):
    def build(self, shape):
        self.scale = self.add_weight(shape=(), initializer="ones", name="scale")
        self.raw = tf.Variable(1.0, name="raw")

    def call(self, x):
        return x * self.scale * self.raw


def test_collect_records_origin_trainability_gradients_and_rates() -> None:
    model = keras.Sequential([keras.Input((2,)), Scaled(name="s")], name="m")
    model.compile(keras.optimizers.SGD(0.1), "mse")
    extra = keras.Variable(5.0, name="extra")
    compute = probe.loss_function(model, None)
    facts = probe.collect(model, (X, np.ones((3, 2), "float32")), compute, model.optimizer,
                          [*model.trainable_variables, extra])  # fmt: skip
    by_path = {fact.path: fact for fact in facts.variables}
    assert by_path["m/s/scale"].origin == "model" and by_path["m/s/scale"].trainable
    assert by_path["m/s/raw"].origin == "attribute"
    assert by_path["extra"].origin == "var_list"
    assert by_path["m/s/scale"].gradient == "nonzero" and by_path["extra"].gradient == "none"
    assert facts.optimizer_keys is None  # the optimizer is not built
    assert by_path["m/s/raw"].gradient == "nonzero"  # raw: measured too
    assert len(facts.learning_rates) == 1
    assert facts.learning_rates[0].current == pytest.approx(0.1)
    assert facts.problem is None and np.isfinite(facts.loss)
    empty = probe.collect(model, (np.zeros((0, 2), "float32"), np.zeros((0, 2), "float32")),
                          compute, None, None)  # fmt: skip
    assert empty.problem == "empty-batch" and empty.empty_shape == (0, 2) and empty.loss is None


class Holder(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.scale = self.add_weight(shape=(), initializer="ones", name="scale")
        self.raw = tf.Variable(2.0)
        self.box = tf.Module()
        self.box.inner = tf.Variable(3.0)
        self.spaces = types.SimpleNamespace(offset=keras.Variable(4.0))
        self.named = {"a": keras.Variable(np.zeros(2, "float32"))}
        self.pair = (keras.Variable(1.0), 7)
        self.count = keras.Variable(0, dtype="int32", trainable=False)

    def call(self, x):
        return x * self.scale


def test_every_variable_is_found_with_its_path_and_container() -> None:
    model = keras.Sequential([keras.Input((1,)), Holder(name="holder")], name="m")
    found = {binding.path: binding for binding in probe.bindings(model)}
    expected = {
        "m/holder/scale": "attribute",
        "m/holder/raw": "attribute",
        "m/holder/box/inner": "module",
        "m/holder/spaces/offset": "module",
        "m/holder/named/a": "dict",
        "m/holder/pair/0": "list",
        "m/holder/count": "attribute",
    }
    assert {path: binding.container for path, binding in found.items()} == expected
    layer = model.layers[0]
    assert found["m/holder/raw"].variable is layer.raw and found["m/holder/raw"].owner is layer
    assert found["m/holder/box/inner"].attribute == "box/inner"
    assert probe.describe_owner(found["m/holder/raw"]) == "Holder `m/holder`"


def test_put_holds_a_value_where_the_variable_was_found() -> None:
    layer = Holder(name="holder")
    found = {binding.path: binding for binding in probe.bindings(layer)}
    found["holder/raw"].put("traced")
    found["holder/named/a"].put("in the dict")
    found["holder/box/inner"].put("in the module")
    assert layer.raw == "traced" and layer.named["a"] == "in the dict"
    assert layer.box.inner == "in the module"


def test_dtype_helpers_and_identity() -> None:
    v = keras.Variable(np.ones(2, "float32"))
    assert tracer().dtype_name(v) == "float32" and probe.is_float(v)
    assert tracer().dtype_name(keras.Variable(1, dtype="int32")) == "int32"
    assert not probe.is_float(keras.Variable(1, dtype="int32"))
    assert probe.is_float(tf.Variable(np.float16(1.0)))
    assert probe.key(v) == id(v.value)  # TensorFlow: the tf.Variable behind it
    assert probe.key(v) == probe.key(v) and probe.key(v) != probe.key(keras.Variable(1.0))


def test_layer_paths_and_keras_classes() -> None:
    dense = keras.layers.Dense(1, name="d")
    keras.Sequential([keras.Input((2,)), dense], name="seq")
    assert probe.layer_path(dense) == "seq/d"
    assert probe.is_keras_class(dense) and not probe.is_keras_class(Holder())


@pytest.mark.backend("torch")
def test_a_torch_parameter_on_a_layer_is_found_in_its_parameters() -> None:
    import torch

    class Raw(keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.scale = torch.nn.Parameter(torch.ones(2))

    layer = Raw(name="raw")
    found = {binding.path: binding for binding in probe.bindings(layer)}
    assert found["raw/scale"].variable is layer.scale
    assert found["raw/scale"].container == "attribute" and probe.is_float(layer.scale)
    assert probe.key(layer.scale) == id(layer.scale)  # torch: the Parameter itself


K = keras.optimizers


def test_optimizer_variables_are_none_until_built_and_seen_through_a_wrapper() -> None:
    w = keras.Variable(np.ones(2, "float32"))
    sgd = K.SGD()
    assert probe.optimizer_variables(sgd) is None and probe.optimizer_variables(None) is None
    sgd.build([w])
    assert probe.optimizer_variables(sgd) == [w]
    inner = K.Adam()
    wrapper = K.LossScaleOptimizer(inner)
    wrapper.build([w])
    assert probe.optimizer_variables(wrapper) == [w]


def test_train_function_variables_are_the_ones_its_graphs_captured() -> None:
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(K.SGD(), "mse")
    assert probe.train_function_variables(model) == []  # nothing cached yet
    model.fit(np.ones((4, 2), "float32"), np.zeros((4, 1), "float32"), verbose=0)
    captured = {id(v) for v in probe.train_function_variables(model)}
    kernel = model.layers[0].kernel
    assert id(kernel.value) in captured  # TensorFlow: the tf.Variable behind the kernel


def test_a_plain_optimizers_rate_now_and_its_schedules_next() -> None:
    assert probe.learning_rate(K.SGD(0.25, name="sgd")) == probe.LearningRate(
        "sgd/learning_rate", 0, 0.25, None
    )
    schedule = K.schedules.ExponentialDecay(0.1, 1, 0.5)
    opt = K.SGD(schedule)
    opt.iterations.assign(3)
    rate = probe.learning_rate(opt)
    assert rate.step == 3 and rate.current == pytest.approx(float(schedule(3)))
    assert rate.following == pytest.approx(float(schedule(4)))
    assert int(opt.iterations.numpy()) == 3  # nothing changed
    assert probe.learning_rate(None) is None
    assert probe.learning_rates(K.SGD(0.5))[0].current == 0.5


def test_a_hyperstep_optimizers_rates_each_groups_and_an_override() -> None:
    opt = hs.scheduled(
        K.SGD(name="opt"),
        learning_rate="0.1 * (1 + step)",
        groups=[hs.Group("head", match="*head*", learning_rate="0.5 * step")],
    )
    opt.clock.step.assign(2)
    rates = {rate.path: rate for rate in probe.learning_rates(opt)}
    assert set(rates) == {"opt/learning_rate", "opt/head/learning_rate"}
    main, head = rates["opt/learning_rate"], rates["opt/head/learning_rate"]
    assert main.step == 2 and main.current == pytest.approx(0.3)
    assert main.following == pytest.approx(0.4)
    assert head.current == pytest.approx(1.0) and head.following == pytest.approx(1.5)
    opt.hyperparameters["learning_rate"].set(0.0)  # an override: no schedule to look ahead on
    main = next(r for r in probe.learning_rates(opt) if r.path == "opt/learning_rate")
    assert main.current == 0.0 and main.following is None
