"""No false alarms on healthy models, and the doctor changes no state at all.

Runs on the Keras backend of the process (``KERAS_BACKEND``; TensorFlow by default, JAX and
torch through ``test_backends.py``).
"""

import types

import keras
import numpy as np
import pytest

import hyperstep as hs

#: every pass: the doctor's catalogue on each backend's own mistakes (see tests/conftest.py)
pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

BACKEND = keras.backend.backend()
#: eager JAX compiles each primitive once per shape: a first ResNet50 diagnosis takes minutes
#: on a loaded 2-core machine, so on JAX the big models run in `make test-slow`
BIG = pytest.mark.slow if BACKEND == "jax" else (lambda test: test)


def images(n, size, classes=10):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, size, size, 3)).astype("float32")
    return x, (np.arange(n) % classes).astype("int32")


@pytest.fixture(scope="module")
def resnet50():
    model = keras.applications.ResNet50(weights=None, input_shape=(32, 32, 3), classes=10)
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    return model


@BIG
def test_resnet50_has_no_findings(resnet50):
    diagnosis = hs.doctor(resnet50, images(2, 32))
    assert diagnosis.ok, str(diagnosis)
    assert diagnosis.variables == len(resnet50.variables)


@pytest.mark.slow
@BIG
def test_mobilenet_v2_has_no_findings():
    model = keras.applications.MobileNetV2(
        weights=None, input_shape=(32, 32, 3), classes=10, alpha=0.35
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    assert hs.doctor(model, images(2, 32)).ok


def transformer_block(name="block"):
    inputs = keras.Input((6, 8))
    attended = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)(inputs, inputs)
    x = keras.layers.LayerNormalization()(inputs + attended)
    hidden = keras.layers.Dense(16, activation="gelu")(x)
    x = keras.layers.LayerNormalization()(x + keras.layers.Dense(8)(hidden))
    outputs = keras.layers.Dense(1)(keras.layers.GlobalAveragePooling1D()(x))
    return keras.Model(inputs, outputs, name=name)


def test_transformer_block_has_no_findings_in_fit_and_in_a_custom_loop():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(4, 6, 8)).astype("float32")
    y = rng.normal(size=(4, 1)).astype("float32")
    model = transformer_block()
    model.compile(optimizer="adamw", loss="mse")
    assert hs.doctor(model, (x, y)).ok

    def loss_fn(model, batch):
        features, target = batch
        return keras.ops.mean((model(features, training=True) - target) ** 2)

    loop = transformer_block("loop")
    assert hs.doctor(loop, (x, y), loss_fn=loss_fn, var_list=loop.trainable_variables).ok


def test_gan_pair_each_with_its_own_loss_has_no_findings():
    generator = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)],
        name="generator",
    )
    discriminator = keras.Sequential(
        [keras.Input((2,)), keras.layers.Dense(8, activation="leaky_relu"), keras.layers.Dense(1)],
        name="discriminator",
    )
    bce = keras.losses.BinaryCrossentropy(from_logits=True)
    rng = np.random.default_rng(2)
    noise = rng.normal(size=(8, 4)).astype("float32")
    real = rng.normal(size=(8, 2)).astype("float32")
    g_opt, d_opt = keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3)

    def generator_loss(g, z):
        fake_logits = discriminator(g(z, training=True), training=True)
        return bce(keras.ops.ones_like(fake_logits), fake_logits)

    def discriminator_loss(d, batch):
        z, x = batch
        real_logits, fake_logits = d(x, training=True), d(generator(z), training=True)
        return bce(keras.ops.ones_like(real_logits), real_logits) + bce(
            keras.ops.zeros_like(fake_logits), fake_logits
        )

    g = hs.doctor(
        generator,
        noise,
        loss_fn=generator_loss,
        optimizer=g_opt,
        var_list=generator.trainable_variables,
    )
    d = hs.doctor(
        discriminator,
        (noise, real),
        loss_fn=discriminator_loss,
        optimizer=d_opt,
        var_list=discriminator.trainable_variables,
    )
    assert g.ok, str(g)
    assert d.ok, str(d)


def bn_model():
    return keras.Sequential(
        [
            keras.Input((5,)),
            keras.layers.Dense(8),
            keras.layers.BatchNormalization(),
            keras.layers.Activation("relu"),
            keras.layers.Dropout(0.3),
            keras.layers.Dense(1),
        ],
        name="bn",
    )


def test_batch_normalization_statistics_are_not_flagged():
    model = bn_model()
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(3).normal(size=(8, 5)).astype("float32")
    diagnosis = hs.doctor(model, (x, np.ones((8, 1), "float32")))
    assert diagnosis.ok, str(diagnosis)


def untracked_variable(value):
    """A variable Keras does not track: TF ``tf.Variable``, torch ``Parameter``; on JAX (whose
    raw arrays are constants) a ``keras.Variable`` inside an object Keras does not look in."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        return tf.Variable(value)
    if BACKEND == "torch":
        import torch

        return torch.nn.Parameter(torch.tensor(value))
    return types.SimpleNamespace(value=keras.Variable(value))


def state(model, optimizer):
    variables = [*model.variables, *model.metrics_variables, *optimizer.variables]
    return {id(v): (v.path, keras.ops.convert_to_numpy(v).tobytes()) for v in variables}


@pytest.mark.parametrize("broken", [False, True])
def test_doctor_changes_no_variable_and_no_optimizer_state(broken):
    model = bn_model()
    optimizer = keras.optimizers.Adam(1e-2)
    model.compile(optimizer=optimizer, loss="mse", run_eagerly=True)  # no tracing: fast
    x = np.random.default_rng(4).normal(size=(8, 5)).astype("float32")
    y = np.ones((8, 1), "float32")
    model.fit(x, y, verbose=0)  # builds the optimizer: moments, iterations are non-zero
    if broken:  # rebinding adds an untracked variable and a trace of the loss graph
        model.get_layer(index=0).extra = untracked_variable(1.0)
        model.get_layer(index=0).trainable = False
    before = state(model, optimizer)
    diagnosis = hs.doctor(model, (x, y))
    assert diagnosis.ok is not broken
    assert state(model, optimizer) == before


def test_unbuilt_model_is_built_without_changing_its_initial_values():
    model = bn_model()
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(5).normal(size=(8, 5)).astype("float32")
    diagnosis = hs.doctor(model, (x, np.ones((8, 1), "float32")))
    assert diagnosis.ok
    moving = model.layers[1].moving_mean
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(moving), np.zeros(8))


def test_zero_gradient_from_batch_normalization_invariance_is_not_a_finding():
    # bn1's beta shifts a channel that Dense and bn2 (training mode) then centre away:
    # its gradient is exactly 0 by design, not a dead unit
    model = keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(2),
            keras.layers.BatchNormalization(name="bn1"),
            keras.layers.Dense(2),
            keras.layers.BatchNormalization(name="bn2"),
            keras.layers.Activation("relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer="sgd", loss="mse")
    x = np.random.default_rng(0).normal(size=(2, 3)).astype("float32")
    y = np.ones((2, 1), "float32")
    beta = model.get_layer("bn1").beta
    # the premise, by the backend's autodiff: exactly 0, or a rounding residue (JAX's
    # batch_normalization is x * inv + (beta - mean * inv)); which one depends on the backend
    # and on the CPU's vector kernels, so the doctor must be quiet for both
    residue = np.max(np.abs(gradient(model, x, y, beta)))
    assert residue < 1e-5
    assert hs.doctor(model, (x, y)).ok


def gradient(model, x, y, variable):
    """The compiled loss's gradient for one variable, as each backend's own loop computes it."""
    if BACKEND == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = model.compute_loss(x=x, y=y, y_pred=model(x, training=True))
        return keras.ops.convert_to_numpy(tape.gradient(loss, variable))
    if BACKEND == "torch":
        import torch

        x, y = torch.as_tensor(x), torch.as_tensor(y)
        loss = model.compute_loss(x=x, y=y, y_pred=model(x, training=True))
        return torch.autograd.grad(loss, variable.value)[0].numpy()
    import jax

    trainable = [v.value for v in model.trainable_variables]
    fixed = [v.value for v in model.non_trainable_variables]

    def loss(values):
        y_pred, _ = model.stateless_call(values, fixed, x, training=True)
        return keras.ops.mean(keras.losses.mean_squared_error(y, y_pred))

    grads = jax.grad(loss)(trainable)
    index = [id(v) for v in model.trainable_variables].index(id(variable))
    return np.asarray(grads[index])


def test_embeddings_have_no_findings():
    model = keras.Sequential(
        [
            keras.Input((5,), dtype="int32"),
            keras.layers.Embedding(20, 4),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(1),
        ]
    )
    model.compile(optimizer="adam", loss="mse")
    tokens = (np.arange(15).reshape(3, 5) % 20).astype("int32")
    diagnosis = hs.doctor(model, (tokens, np.ones((3, 1), "float32")))
    assert diagnosis.ok, str(diagnosis)


def test_mixed_precision_has_no_findings():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = keras.Sequential(
            [
                keras.Input((4,)),
                keras.layers.Dense(8, activation="relu"),
                keras.layers.BatchNormalization(),
                keras.layers.Dense(1, dtype="float32"),
            ]
        )
        model.compile(optimizer="adam", loss="mse")  # a LossScaleOptimizer around Adam
        x = np.random.default_rng(6).normal(size=(4, 4)).astype("float32")
        diagnosis = hs.doctor(model, (x, np.ones((4, 1), "float32")))
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert diagnosis.ok, str(diagnosis)
