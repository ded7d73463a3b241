"""hs.ReduceOnPlateau: the default rule, the three compat rules against the real peers,
NaN handling, graph mode, the Keras callback and state that survives fit() and restore."""

from __future__ import annotations

import csv
import importlib.util
import itertools
import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError

_spec = importlib.util.spec_from_file_location(
    "plateau_peers", Path(__file__).with_name("plateau_peers.py")
)
assert _spec is not None and _spec.loader is not None
peers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peers)

BASE = 0.1
SEQUENCES = peers.sequences()


def make_hp(value: Any = BASE, name: str = "learning_rate", clock: Any = None) -> Any:
    return hs.Hyperparameter(value, clock=clock, name=name)


def ours(values: list[float], *, graph: bool = True, **kwargs: Any) -> list[float]:
    """The effective values after each update; in one traced function unless graph=False."""
    return ours_all({"values": values}, graph=graph, **kwargs)["values"]


def ours_all(
    sequences: dict[str, list[float]], *, graph: bool = True, **kwargs: Any
) -> dict[str, list[float]]:
    """``ours`` on each sequence, with one controller reset in between (one trace in all:
    the traced function also returns the value after its update, read in the same graph)."""
    hp = make_hp(BASE)
    plateau = hs.ReduceOnPlateau(hp, **kwargs)

    def update_and_read(value: Any) -> Any:
        plateau.update(value)
        return hp.value

    update = tf.function(update_and_read) if graph else update_and_read
    out: dict[str, list[float]] = {}
    for name, values in sequences.items():
        plateau.reset()
        hp.scale.assign(1.0)
        out[name] = []
        for value in values:
            read = update(tf.constant(value, tf.float32) if graph else value)
            out[name].append(float(keras.ops.convert_to_numpy(read)))
    return out


def assert_trajectories(got: dict[str, list[float]], expected: dict[str, list[float]]) -> None:
    for name in expected:
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-6, err_msg=name)


# ---- compat rules against the real peers ------------------------------------------------------
KERAS_CONFIGS = [
    {"factor": 0.5, "patience": 2},
    {"factor": 0.5, "patience": 0},
    {"factor": 0.5, "patience": 2, "cooldown": 2},
    {"factor": 0.5, "patience": 1, "cooldown": 1, "min_lr": 0.01},
    {"factor": 0.2, "patience": 3, "cooldown": 1, "min_delta": 0.05},
]


@pytest.mark.parametrize("config", KERAS_CONFIGS, ids=str)
def test_keras_compat_matches_keras_reduce_lr_on_plateau(config: dict[str, Any]) -> None:
    mapped = {("min_value" if k == "min_lr" else k): v for k, v in config.items()}
    expected = {name: peers.keras_trajectory(v, BASE, **config) for name, v in SEQUENCES.items()}
    assert_trajectories(ours_all(SEQUENCES, compat="keras", **mapped), expected)


def test_keras_compat_matches_keras_in_max_mode() -> None:
    flipped = {name: [1.0 - v for v in values] for name, values in SEQUENCES.items()}
    config = {"factor": 0.5, "patience": 1, "cooldown": 1, "mode": "max", "min_delta": 1e-3}
    expected = {
        name: peers.keras_trajectory(v, BASE, monitor="val_accuracy", **config)
        for name, v in flipped.items()
    }
    got = ours_all(flipped, monitor="val_accuracy", compat="keras", **config)
    assert_trajectories(got, expected)


TORCH_CONFIGS = [
    {"factor": 0.5, "patience": 2},
    {"factor": 0.5, "patience": 0},
    {"factor": 0.5, "patience": 1, "cooldown": 2},
    {"factor": 0.5, "patience": 1, "cooldown": 1, "min_lr": 0.01},
    {"factor": 0.3, "patience": 2, "threshold": 0.05, "threshold_mode": "abs"},
    {"factor": 0.5, "patience": 1, "threshold": 1e-3, "mode": "max"},
    {"factor": 0.5, "patience": 1, "threshold": 0.05, "threshold_mode": "abs", "mode": "max"},
]


def _torch_to_ours(config: dict[str, Any]) -> dict[str, Any]:
    mapped = {k: v for k, v in config.items() if k not in ("threshold", "threshold_mode", "min_lr")}
    mapped["min_value"] = config.get("min_lr", 0.0)
    threshold = config.get("threshold", 1e-4)
    if config.get("threshold_mode", "rel") == "rel":
        mapped["rtol"] = threshold
    else:
        mapped["min_delta"] = threshold
    mapped.setdefault("mode", "min")
    return mapped


@pytest.mark.parametrize("config", TORCH_CONFIGS, ids=str)
def test_torch_compat_matches_torch_reduce_lr_on_plateau(config: dict[str, Any]) -> None:
    expected = {name: peers.torch_trajectory(v, BASE, **config) for name, v in SEQUENCES.items()}
    assert_trajectories(ours_all(SEQUENCES, compat="torch", **_torch_to_ours(config)), expected)


OPTAX_CONFIGS = [
    {"factor": 0.5, "patience": 2},
    {"factor": 0.5, "patience": 0},
    {"factor": 0.5, "patience": 1, "cooldown": 2},
    {"factor": 0.5, "patience": 1, "min_scale": 0.1},
    {"factor": 0.2, "patience": 2, "rtol": 0.0, "atol": 0.05, "cooldown": 1},
]


@pytest.mark.parametrize("config", OPTAX_CONFIGS, ids=str)
def test_optax_compat_matches_optax_reduce_on_plateau(config: dict[str, Any]) -> None:
    mapped = {("min_delta" if k == "atol" else k): v for k, v in config.items()}
    expected = {name: peers.optax_trajectory(v, BASE, **config) for name, v in SEQUENCES.items()}
    assert_trajectories(ours_all(SEQUENCES, compat="optax", **mapped), expected)


def test_compat_defaults_are_each_peers_defaults() -> None:
    values = SEQUENCES["small_steps"] + SEQUENCES["noisy"]
    np.testing.assert_allclose(
        ours(values, compat="torch", patience=2),
        peers.torch_trajectory(values, BASE, patience=2),
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        ours(values, compat="optax", patience=2),
        peers.optax_trajectory(values, BASE, patience=2),
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        ours(values, compat="keras", patience=2),
        peers.keras_trajectory(values, BASE, patience=2),
        rtol=1e-6,
    )


# ---- the default rule -------------------------------------------------------------------------
DEFAULT_CONFIGS = [
    {"factor": 0.5, "patience": 2},
    {"factor": 0.5, "patience": 0},
    {"factor": 0.5, "patience": 1, "cooldown": 2},
    {"factor": 0.5, "patience": 1, "cooldown": 1, "min_value": 0.01},
    {"factor": 0.3, "patience": 2, "min_delta": 0.0, "rtol": 1e-3},
    {"factor": 0.5, "patience": 1, "cooldown": 1, "mode": "max"},
]


@pytest.mark.parametrize("config", DEFAULT_CONFIGS, ids=str)
def test_default_rule_matches_independent_reference(config: dict[str, Any]) -> None:
    expected = {name: peers.reference_default(v, BASE, **config) for name, v in SEQUENCES.items()}
    assert_trajectories(ours_all(SEQUENCES, **config), expected)


def test_default_rule_runs_eagerly_with_python_floats() -> None:
    config = {"factor": 0.5, "patience": 1, "cooldown": 1, "min_value": 0.01}
    values = SEQUENCES["cooldown_improvements"] + SEQUENCES["floor"][:8]
    expected = peers.reference_default(values, BASE, **config)
    np.testing.assert_allclose(ours(values, graph=False, **config), expected, rtol=1e-6)


def test_default_rule_equals_keras_without_cooldown_or_floor() -> None:
    expected = {
        name: peers.keras_trajectory(v, BASE, factor=0.5, patience=2)
        for name, v in SEQUENCES.items()
    }
    assert_trajectories(ours_all(SEQUENCES, factor=0.5, patience=2), expected)


def test_min_value_floors_the_effective_value_of_a_decaying_schedule() -> None:
    hp = make_hp(hs.schedules.constant(0.1) * 0.5 ** (hs.parse("step") / 10))
    hp.clock.step.assign(10)  # schedule value 0.05 here
    plateau = hs.ReduceOnPlateau(hp, factor=0.1, patience=0, min_value=0.02)
    plateau.update(1.0)
    plateau.update(2.0)
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(hp.value)), 0.02, rtol=1e-6)
    assert plateau.reductions == 1
    plateau.update(3.0)  # at the floor: the scale never rises and stays put
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(hp.scale)), 0.4, rtol=1e-6)
    assert plateau.reductions == 1


# ---- NaN and inf ------------------------------------------------------------------------------
def test_non_finite_values_count_as_no_improvement_and_never_become_best() -> None:
    hp = make_hp()
    plateau = hs.ReduceOnPlateau(hp, factor=0.5, patience=2)
    plateau.update(1.0)
    with pytest.warns(RuntimeWarning, match=r"non-finite value \(nan\)"):
        plateau.update(float("nan"))
    assert plateau.best == 1.0 and plateau.wait == 1
    with pytest.warns(RuntimeWarning, match=r"non-finite value \(-inf\)"):
        plateau.update(-math.inf)
    assert plateau.best == 1.0 and plateau.reductions == 1 and plateau.wait == 0
    plateau.update(0.5)  # still able to improve: the state was not poisoned
    assert plateau.best == 0.5
    values = [1.0, math.nan, -math.inf, 0.5, math.inf, math.nan, 0.4]
    with pytest.warns(RuntimeWarning):
        got = ours(values, graph=False, factor=0.5, patience=2)
    np.testing.assert_allclose(got, peers.reference_default(values, BASE, factor=0.5, patience=2))


def test_nan_in_graph_is_counted_silently() -> None:
    hp = make_hp()
    plateau = hs.ReduceOnPlateau(hp, factor=0.5, patience=1)
    update = tf.function(plateau.update)
    for value in [1.0, math.nan, math.nan]:
        update(tf.constant(value))
    assert plateau.best == 1.0 and plateau.reductions == 2


# ---- graph mode -------------------------------------------------------------------------------
def test_update_inside_tf_function_is_traced_once() -> None:
    hp = make_hp()
    plateau = hs.ReduceOnPlateau(hp, factor=0.5, patience=1, cooldown=1, min_value=1e-4)
    traces = []

    @tf.function
    def step(value: tf.Tensor) -> tf.Tensor:
        traces.append(1)
        return plateau.update(value)

    values = SEQUENCES["noisy"] + SEQUENCES["floor"]
    for value in values:
        step(tf.constant(value, tf.float32))
    assert len(traces) == 1
    assert plateau.reductions >= 5
    expected = peers.reference_default(
        values, BASE, factor=0.5, patience=1, cooldown=1, min_value=1e-4
    )
    np.testing.assert_allclose(float(keras.ops.convert_to_numpy(hp.value)), expected[-1], rtol=1e-6)


# ---- arguments --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"factor": 1.0}, r"0 < factor < 1.*Received: factor=1.0"),
        ({"factor": 0.0}, r"Received: factor=0.0"),
        ({"patience": -1}, r"patience.*integer >= 0.*Received: patience=-1"),
        ({"cooldown": 1.5}, r"Received: cooldown=1.5"),
        ({"min_delta": -0.1}, r"Received: min_delta=-0.1"),
        ({"min_value": math.nan}, r"Received: min_value=nan"),
        ({"rtol": 2.0}, r"at most 1.*Received: rtol=2.0"),
        ({"mode": "up"}, r"one of 'auto', 'min', 'max'\. Received: mode='up'"),
        ({"compat": "pytorch"}, r"Received: compat='pytorch'"),
        ({"compat": "keras", "rtol": 0.1}, r"absolute threshold.*Received: rtol=0.1"),
        ({"compat": "torch", "rtol": 0.1, "min_delta": 0.1}, r"not both.*Received: rtol=0.1"),
        ({"compat": "optax", "mode": "max"}, r"minimises only.*Received: mode='max'"),
        (
            {"compat": "optax", "monitor": "val_accuracy"},
            r"'val_accuracy' is maximised.*mode='auto'",
        ),
        ({"compat": "optax", "min_value": 0.01}, r"min_scale.*Received: min_value=0.01"),
        ({"compat": "optax", "rtol": 0.0}, r"rtol > 0 or min_delta.*Received: rtol=0.0"),
        ({"monitor": ""}, r"Received: monitor=''"),
    ],
)
def test_invalid_arguments_are_rejected_at_construction(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        hs.ReduceOnPlateau(make_hp(), **kwargs)


def test_target_must_be_a_hyperparameter() -> None:
    with pytest.raises(
        InvalidTypeError, match=r"hs.Hyperparameter.*Received: target of type float"
    ):
        hs.ReduceOnPlateau(0.1)  # type: ignore[arg-type]


def test_auto_mode_without_a_direction_asks_for_mode() -> None:
    plateau = hs.ReduceOnPlateau(make_hp(), monitor="val_perplexity_of_x")
    with pytest.raises(
        InvalidArgumentError, match=r"mode='min' or mode='max'. Received: mode='auto'"
    ):
        plateau.update(1.0)


def test_auto_mode_infers_direction_from_name() -> None:
    assert hs.ReduceOnPlateau(make_hp(), monitor="val_loss")._direction() == 1.0
    assert hs.ReduceOnPlateau(make_hp(), monitor="val_accuracy", name="b")._direction() == -1.0


# ---- the Keras callback -----------------------------------------------------------------------
def test_callback_missing_monitor_lists_available_keys() -> None:
    plateau = hs.ReduceOnPlateau(make_hp(), monitor="val_loss")
    with pytest.raises(
        InvalidArgumentError, match=r"no 'val_loss'.*epoch 3.*\['accuracy', 'loss'\]"
    ):
        plateau.on_epoch_end(3, {"loss": 0.5, "accuracy": 0.9})


def test_callback_writes_the_value_in_force_into_logs_like_keras() -> None:
    values = [1.0, 0.9, 0.95, 0.96, 0.97, 0.98]
    plateau = hs.ReduceOnPlateau(make_hp(), factor=0.5, patience=1)
    keras_callback = keras.callbacks.ReduceLROnPlateau(factor=0.5, patience=1)
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(BASE), loss="mse")
    keras_callback.set_model(model)
    for epoch, value in enumerate(values):
        ours_logs = {"val_loss": value}
        keras_logs = {"val_loss": value}
        plateau.on_epoch_end(epoch, ours_logs)
        keras_callback.on_epoch_end(epoch, keras_logs)
        np.testing.assert_allclose(
            ours_logs["learning_rate"], keras_logs["learning_rate"], rtol=1e-6
        )


def test_on_train_begin_does_not_reset_state() -> None:
    plateau = hs.ReduceOnPlateau(make_hp(), factor=0.5, patience=3)
    for value in [1.0, 2.0, 2.0]:
        plateau.update(value)
    plateau.on_train_begin()
    assert plateau.wait == 2 and plateau.best == 1.0
    plateau.reset()
    assert plateau.wait == 0 and plateau.best == math.inf


def test_repr_shows_the_arguments() -> None:
    plateau = hs.ReduceOnPlateau(make_hp(), factor=0.5, patience=3, compat="torch")
    assert repr(plateau).startswith(
        "ReduceOnPlateau('learning_rate', monitor='val_loss', factor=0.5"
    )
    assert "compat='torch', rtol=0.0001" in repr(plateau)


# ---- in fit(): seed 002, repeated fit() calls, save and restore ------------------------------
SPE, BATCH = 4, 16


def regression_data(seed: int = 0) -> tuple[np.ndarray, ...]:
    """Train targets a linear map; validation targets are noise, so val_loss plateaus/rises."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(SPE * BATCH, 4)).astype("float32")
    y = (x @ rng.normal(size=(4, 1))).astype("float32")
    x_val = rng.normal(size=(32, 4)).astype("float32")
    y_val = rng.normal(size=(32, 1)).astype("float32")
    return x, y, x_val, y_val


class CountingSequential(keras.Sequential):
    """Counts how often the train step is traced (a Python side effect runs only then)."""

    traces = 0

    def train_step(self, data: Any) -> Any:
        self.traces += 1
        return super().train_step(data)


def fit_model(
    optimizer: Any, callbacks: list[Any], epochs: int, model: Any = None, counting: bool = True
) -> Any:
    x, y, x_val, y_val = regression_data()
    if model is None:
        keras.utils.set_random_seed(0)
        cls = CountingSequential if counting else keras.Sequential
        model = cls([keras.Input((4,)), keras.layers.Dense(1)])
        model.compile(optimizer=optimizer, loss="mse")
    history = model.fit(
        x, y, validation_data=(x_val, y_val), epochs=epochs, batch_size=BATCH,
        callbacks=callbacks, verbose=0, shuffle=False,
    )  # fmt: skip
    return model, history


def reference_seed002(
    val_losses: list[float], *, factor: float, patience: int, cooldown: int, min_delta: float
) -> tuple[list[float], list[float]]:
    """Per-step LR ``0.1 * 0.9 ** floor(step / (5 * SPE)) * scale`` and the scale in force
    during each epoch, the scale changing at epoch ends by the documented default rule."""
    scale, best, wait, cool = 1.0, math.inf, 0, 0
    lrs, scales = [], []
    for epoch, loss in enumerate(val_losses):
        scales.append(scale)
        lrs += [0.1 * 0.9 ** ((epoch * SPE + b) // (5 * SPE)) * scale for b in range(SPE)]
        if loss < best - min_delta:
            best, wait = loss, 0
            cool = max(cool - 1, 0)
        elif cool > 0:
            cool, wait = cool - 1, 0
        else:
            wait += 1
            if wait >= patience:
                scale, wait, cool = scale * factor, 0, cooldown
    return lrs, scales


def test_seed002_staircase_exponential_with_plateau_runs_in_fit(tmp_path: Path) -> None:
    config = {"factor": 0.5, "patience": 2, "cooldown": 1, "min_delta": 1e-3}
    schedule = hs.schedules.exponential(0.1, 0.9, every=5 * SPE, staircase=True)
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=schedule)
    plateau = hs.ReduceOnPlateau(optimizer, monitor="val_loss", **config)
    log = hs.callbacks.LogHyperparameters(optimizer, csv_path=tmp_path / "hp.csv")
    epochs = 16
    model, history = fit_model(optimizer, [log, plateau], epochs)
    val_losses = history.history["val_loss"]
    expected, scales = reference_seed002(val_losses, **config)
    with open(tmp_path / "hp.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["step"]) for r in rows] == list(range(epochs * SPE))
    np.testing.assert_allclose([float(r["learning_rate"]) for r in rows], expected, rtol=1e-6)
    assert plateau.reductions == sum(b < a for a, b in itertools.pairwise(scales)) >= 3
    # History: the value in force at each epoch end (next step's schedule, this epoch's scale)
    at_end = [0.1 * 0.9 ** ((e + 1) // 5) * s for e, s in enumerate(scales)]
    np.testing.assert_allclose(history.history["learning_rate"], at_end, rtol=1e-6)
    assert model.traces == 1


def test_keras_reduce_lr_on_plateau_raises_in_the_same_setup() -> None:
    schedule = keras.optimizers.schedules.ExponentialDecay(0.1, 5 * SPE, 0.9, staircase=True)
    callback = keras.callbacks.ReduceLROnPlateau(factor=0.5, patience=2, cooldown=1, min_delta=1e-3)
    with pytest.raises(TypeError, match="not settable"):
        fit_model(keras.optimizers.SGD(learning_rate=schedule), [callback], epochs=6)


def test_state_survives_two_fit_calls_and_the_plateau_fires_across_them() -> None:
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
    plateau = hs.ReduceOnPlateau(optimizer, factor=0.5, patience=4, min_delta=1e3)
    model, _ = fit_model(optimizer, [plateau], epochs=3)  # improves once, then 2 bad epochs
    assert (plateau.wait, plateau.reductions) == (2, 0)
    _, history = fit_model(optimizer, [plateau], epochs=3, model=model)
    assert plateau.reductions == 1  # bad epochs 3 and 4 of the run: a reset would give none
    np.testing.assert_allclose(history.history["learning_rate"], [0.1, 0.1, 0.05], rtol=1e-6)


def _drive(plateau: Any, values: list[float]) -> list[float]:
    out = []
    for value in values:
        plateau.update(value)
        out.append(float(keras.ops.convert_to_numpy(plateau.target.value)))
    return out


def _state(plateau: Any) -> tuple[Any, ...]:
    scale = float(keras.ops.convert_to_numpy(plateau.target.scale))
    return plateau.best, plateau.wait, plateau.cooldown_counter, plateau.reductions, scale


def test_state_is_restored_by_tf_train_checkpoint(tmp_path: Path) -> None:
    config = {"factor": 0.5, "patience": 1, "cooldown": 1}
    values = SEQUENCES["cooldown_improvements"]
    holder = tf.Module()
    holder.learning_rate = make_hp()
    plateau = hs.ReduceOnPlateau(holder.learning_rate, **config)
    _drive(plateau, values[:9])
    path = tf.train.Checkpoint(holder=holder).write(str(tmp_path / "ckpt"))
    saved = _state(plateau)
    uninterrupted = _drive(plateau, values[9:])

    restored = tf.Module()
    restored.learning_rate = make_hp()
    plateau_before = hs.ReduceOnPlateau(restored.learning_rate, **config)
    tf.train.Checkpoint(holder=restored).read(path).assert_consumed()
    assert _state(plateau_before) == saved != _state(make_plateau_fresh(config))
    assert _drive(plateau_before, values[9:]) == uninterrupted

    late = tf.Module()
    late.learning_rate = make_hp()
    status = tf.train.Checkpoint(holder=late).read(path)
    plateau_after = hs.ReduceOnPlateau(late.learning_rate, **config)  # created after restore
    status.assert_consumed()
    assert _state(plateau_after) == saved
    assert _drive(plateau_after, values[9:]) == uninterrupted


def make_plateau_fresh(config: dict[str, Any]) -> Any:
    return hs.ReduceOnPlateau(make_hp(), **config)


def test_state_is_saved_with_the_model_and_its_scheduled_optimizer(tmp_path: Path) -> None:
    config = {"factor": 0.5, "patience": 1, "cooldown": 1, "min_delta": 1e-3}
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
    plateau = hs.ReduceOnPlateau(optimizer, **config)
    model, _ = fit_model(optimizer, [plateau], epochs=4, counting=False)
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    plateau_loaded = hs.ReduceOnPlateau(loaded.optimizer, **config)
    assert _state(plateau_loaded) == _state(plateau) and plateau.reductions >= 1
    _, history = fit_model(optimizer, [plateau], epochs=4, model=model)
    _, history_loaded = fit_model(loaded.optimizer, [plateau_loaded], epochs=4, model=loaded)
    np.testing.assert_allclose(
        history_loaded.history["learning_rate"], history.history["learning_rate"], rtol=1e-6
    )
    assert _state(plateau_loaded) == _state(plateau)


def test_custom_loop_with_schedules_overrides_and_reductions_is_traced_once() -> None:
    clock = hs.Clock()
    optimizer = hs.scheduled(
        keras.optimizers.AdamW(),
        clock=clock,
        learning_rate=hs.schedules.cosine(0.01, steps=1000),
        weight_decay="0.01 * step / 300",
        beta_1="0.9 - 0.05 * min(step / 100, 1)",
    )
    lr, beta_1 = optimizer.hyperparameters["learning_rate"], optimizer.hyperparameters["beta_1"]
    # only the first loss improves by min_delta: a reduction every 15 updates
    plateau = hs.ReduceOnPlateau(lr, monitor="loss", factor=0.7, patience=14, min_delta=10.0)
    weights = keras.Variable(np.zeros(3, "float32"))
    optimizer.build([weights])
    traces = []

    @tf.function
    def train_step() -> tf.Tensor:
        traces.append(1)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum((weights - 1.0) ** 2)
        optimizer.apply([tape.gradient(loss, weights)], [weights])
        plateau.update(loss)
        return loss

    for step in range(150):
        if step % 5 == 0:  # 30 overrides
            beta_1.set(0.8)
        elif step % 5 == 1:
            beta_1.clear()
        train_step()
    assert len(traces) == 1
    assert int(clock.step) == 150 and plateau.reductions == 10
    expected = 0.01 * 0.5 * (1 + math.cos(math.pi * 150 / 1000)) * 0.7**10
    np.testing.assert_allclose(float(lr.value), expected, rtol=1e-5)


def test_verbose_callback_prints_each_reduction(capsys: pytest.CaptureFixture[str]) -> None:
    plateau = hs.ReduceOnPlateau(make_hp(), factor=0.5, patience=1, verbose=1)
    for epoch, value in enumerate([1.0, 1.0, 0.5]):
        plateau.on_epoch_end(epoch, {"val_loss": value})
    assert capsys.readouterr().out.strip() == (
        "Epoch 2: ReduceOnPlateau reducing learning_rate to 0.05."
    )


def test_reductions_under_an_override_show_once_it_is_cleared() -> None:
    hp = make_hp()
    plateau = hs.ReduceOnPlateau(hp, factor=0.5, patience=0)
    hp.set(0.3)
    for value in [1.0, 2.0]:
        plateau.update(value)
    np.testing.assert_allclose(float(hp.value), 0.3)
    hp.clear()
    np.testing.assert_allclose(float(hp.value), BASE * 0.5, rtol=1e-6)


def test_auto_mode_reads_the_direction_of_a_keras_metric() -> None:
    plateau = hs.ReduceOnPlateau(make_hp(), monitor="val_auroc", factor=0.5, patience=0)
    plateau.set_model(SimpleNamespace(metrics=[keras.metrics.AUC(name="auroc")]))
    for epoch, value in enumerate([0.6, 0.7, 0.65]):  # rising is good: one reduction at 0.65
        plateau.on_epoch_end(epoch, {"val_auroc": value})
    assert plateau.best == pytest.approx(0.7) and plateau.reductions == 1


def test_fit_without_the_monitored_key_fails_with_the_log_keys() -> None:
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
    plateau = hs.ReduceOnPlateau(optimizer, monitor="val_auc", mode="max")
    # (the learning rate it logs is in the logs before any callback runs)
    keys = r"\['learning_rate', 'loss', 'val_loss'\]"
    with pytest.raises(InvalidArgumentError, match=rf"no 'val_auc'.*{keys}"):
        fit_model(optimizer, [plateau], epochs=1, counting=False)
