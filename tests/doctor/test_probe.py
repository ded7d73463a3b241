"""The units of hyperstep.diagnosis.probe (TensorFlow's pass): the first batch of each kind
of data, an empty batch, the compiled loss against Keras's own, the gradient kinds on a
hand-written loss, snapshot and restore, and what ``collect`` records per variable."""

import keras
import numpy as np
import pytest
import tensorflow as tf

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
    saved = probe.snapshot([v, raw, v])
    v.assign([9.0, 9.0])
    raw.assign([-1.0])
    probe.restore(saved)
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
                          [*model.trainable_variables, extra], custom_loop=True)  # fmt: skip
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
                          compute, None, None, custom_loop=False)  # fmt: skip
    assert empty.problem == "empty-batch" and empty.empty_shape == (0, 2) and empty.loss is None
