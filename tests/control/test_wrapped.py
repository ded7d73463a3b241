"""Every hyperstep tool sees through Keras's LossScaleOptimizer, MultiOptimizer and
hs.SkipNonFinite (hyperstep.control.wrapped.hyperstep_optimizers)."""

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.control.reading import read_all
from hyperstep.control.wrapped import hyperstep_optimizers

X = np.linspace(-1, 1, 48, dtype="float32").reshape(16, 3)
Y = np.ones((16, 1), "float32")


@pytest.fixture
def mixed_float16():
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy("float32")


def test_mixed_float16_fit_with_a_plateau_a_cooldown_and_logging_runs_end_to_end(
    mixed_float16: None,
) -> None:
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.05)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(opt, "mse")
    wrapped = model.optimizer
    assert isinstance(wrapped, keras.optimizers.LossScaleOptimizer)
    hp = opt.hyperparameters["learning_rate"]
    plateau = hs.ReduceOnPlateau(wrapped, monitor="loss", factor=0.5, patience=0)
    cooldown = hs.Cooldown(wrapped, steps=4, shape="linear")
    log = hs.callbacks.LogHyperparameters(wrapped)
    assert plateau.target is hp and cooldown.target is hp
    assert set(log.hyperparameters) <= set(opt.hyperparameters)
    seen = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            step = int(np.asarray(opt.clock.step))
            seen.append((step, float(hp.value), float(np.asarray(hp.scale))))

    start = hs.callbacks.StartCooldown(cooldown, at_step=4)
    history = model.fit(
        X,
        Y,
        batch_size=4,
        epochs=3,
        shuffle=False,
        verbose=0,
        callbacks=[plateau, start, log, Record()],
    )
    # the loss scale may skip an update (its clock does not move): closed form per step
    assert cooldown.start_step == 4 and int(np.asarray(opt.clock.step)) >= 8
    for step, value, scale in seen:
        expected = 0.05 * scale * (1 - min(max(step - 4, 0), 4) / 4)
        assert value == pytest.approx(expected, rel=1e-6), (step, value, scale)
    assert "learning_rate" in history.history
    assert read_all(wrapped)["learning_rate"] == 0.0
    assert all(np.isfinite(np.asarray(w)).all() for w in model.get_weights())


def test_each_tool_accepts_the_optimizer_inside_loss_scale_and_skip_non_finite() -> None:
    for make in (keras.optimizers.LossScaleOptimizer, hs.SkipNonFinite):
        opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
        wrapped = make(opt)
        assert hyperstep_optimizers(wrapped) == [opt]
        hp = opt.hyperparameters["learning_rate"]
        assert hs.ReduceOnPlateau(wrapped, name="p").target is hp
        assert hs.Cooldown(wrapped, steps=2).target is hp
        assert "learning_rate" in hs.callbacks.LogHyperparameters(wrapped).hyperparameters
        assert read_all(wrapped)["learning_rate"] == pytest.approx(0.1)
        assert hs.SWA(wrapped).clock is opt.clock


@pytest.mark.skipif(
    not hasattr(keras.optimizers, "MultiOptimizer"), reason="this Keras has no MultiOptimizer"
)
def test_multi_optimizer_shows_each_hyperstep_optimizer_inside() -> None:
    a = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
    b = hs.scheduled(keras.optimizers.Adam(), learning_rate=0.01)
    multi = keras.optimizers.MultiOptimizer(lambda v: a if "kernel" in v.path else b)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    multi.build(model.trainable_variables)
    assert hyperstep_optimizers(multi) == [a, b]
    assert hyperstep_optimizers(keras.optimizers.LossScaleOptimizer(multi)) == [a, b]
    with pytest.raises(hs.errors.InvalidTypeError, match="MultiOptimizer"):
        hs.ReduceOnPlateau(multi)  # two learning rates: pass one (a's or b's)
    assert hs.ReduceOnPlateau(multi.optimizers[1]).target is b.hyperparameters["learning_rate"]
