"""The backend checks, run by ``test_backends.py`` once per backend in a fresh process.

``KERAS_BACKEND=jax python tests/backends/worker.py OUT_DIR`` runs every check under that
backend and prints one JSON object: schedule values at a grid of steps, per-step
hyperparameter traces and final weights of the same small model trained by ``model.fit``
and by the backend's own custom loop (TensorFlow: ``tf.function`` + ``GradientTape``; JAX: a
``jax.jit`` stateless step with ``optimizer.stateless_apply``; torch: ``loss.backward()`` +
``optimizer.apply``), how many times the compiled step was traced, plateau state before and
after a ``.keras`` round trip, and the errors TensorFlow-only features raise. The pytest
file compares the three objects; this file asserts nothing itself.

Importing this module (pytest's doctest collection does) runs nothing.
"""

from __future__ import annotations

import csv
import json
import os
import sys
import time
import warnings
from typing import Any

EXPRESSIONS = [
    "warmup(cosine(1e-3, steps=1000, end=1e-5), steps=100)",
    "exponential(0.1, 0.5, every=100, staircase=True)",
    "inverse_time(0.1, 0.5, every=100)",
    "polynomial(0.1, 0.001, steps=500, power=2.0, cycle=True)",
    "cosine_restarts(0.1, steps=100, t_mul=2.0, m_mul=0.9)",
    "piecewise([100, 300], [0.1, 0.01, 0.001])",
    "cyclic(0.001, 0.01, steps_up=50, mode='triangular2')",
    "one_cycle(0.01, steps=1000)",
    "join([linear(0.0, 1.0, steps=100), cosine(1.0, steps=400)], [100])",
    "0.95 - 0.1 * min(step / 1000, 1)",
    "step / 1000 + 0.01",
]
GRID = [0, 1, 49, 50, 51, 99, 100, 101, 299, 300, 301, 499, 500, 999, 1000, 1001, 5000, 123456]

BATCH, EPOCHS, SAMPLES = 16, 3, 64
STEPS_PER_EPOCH = SAMPLES // BATCH
# run-time changes made before the update at these steps, identically in every loop
SET_AT, CLEAR_AT = 5, 9
PLATEAU = {"monitor": "loss", "factor": 0.5, "patience": 1, "min_delta": 10.0}
TRACED = ("learning_rate", "beta_1", "weight_decay")


def data() -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(7)
    x = rng.normal(size=(SAMPLES, 3)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype("float32")
    return x, y


def build() -> tuple[Any, Any]:
    """The model (fixed initial weights) and its scheduled AdamW, the same on every backend."""
    import keras
    import numpy as np

    import hyperstep as hs

    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)]
    )
    rng = np.random.default_rng(3)
    model.set_weights([rng.normal(size=w.shape).astype("float32") for w in model.get_weights()])
    optimizer = hs.scheduled(
        keras.optimizers.AdamW(),
        clock=hs.Clock(steps_per_epoch=STEPS_PER_EPOCH),
        learning_rate="warmup(cosine(0.05, steps=12), steps=3)",
        beta_1="0.9 - 0.05 * min(step / 10, 1)",
        weight_decay="0.01 * step / 12",
    )
    return model, optimizer


def record(optimizer: Any, traces: list[dict[str, float]]) -> None:
    """Apply the scripted run-time changes due at this step, then log the values it uses."""
    import keras

    step = int(keras.ops.convert_to_numpy(optimizer.clock.step))
    decay = optimizer.hyperparameters["weight_decay"]
    if step == SET_AT:
        decay.set(0.05)
    if step == CLEAR_AT:
        decay.clear()
    row = {name: optimizer.hyperparameters[name].read()["value"] for name in TRACED}
    traces.append({"step": step, **row})


def weights(model: Any) -> list[list[float]]:
    return [w.ravel().tolist() for w in model.get_weights()]


def plateau_state(plateau: Any) -> dict[str, float]:
    import keras

    return {
        "best": plateau.best,
        "wait": plateau.wait,
        "cooldown": plateau.cooldown_counter,
        "reductions": plateau.reductions,
        "scale": float(keras.ops.convert_to_numpy(plateau.target.scale)),
        "step": int(keras.ops.convert_to_numpy(plateau.target.clock.step)),
    }


# ---- checks ---------------------------------------------------------------------------------
def check_schedules() -> dict[str, list[float]]:
    import keras
    import numpy as np

    import hyperstep as hs

    values = {}
    for text in EXPRESSIONS:
        schedule = hs.parse(text)
        vector = keras.ops.convert_to_numpy(schedule(np.array(GRID, dtype="int32")))
        scalar = [float(keras.ops.convert_to_numpy(schedule(step))) for step in GRID[:6]]
        values[text] = [float(v) for v in vector]
        values[text + " (scalar)"] = scalar
    return values


#: steps and durations up to 2**53 (JAX's default integer is int32)
BIG_STEPS = [0, 10**9, 2**40, 2**52, 2**53]


def check_big_steps() -> dict[str, list[float]]:
    """``cosine(1000.0, 10**10)`` and ``linear(0, 1, 2**53)`` at Python-int and int64 steps."""
    import keras
    import numpy as np

    import hyperstep as hs

    values = {}
    for schedule in (hs.schedules.cosine(1000.0, 10**10), hs.schedules.linear(0, 1, 2**53)):
        vector = keras.ops.convert_to_numpy(schedule(np.array(BIG_STEPS, np.int64)))
        scalar = [float(keras.ops.convert_to_numpy(schedule(step))) for step in BIG_STEPS]
        values[repr(schedule)] = [float(v) for v in vector]
        values[repr(schedule) + " (scalar)"] = scalar
    return values


def check_fit(tmp: str) -> dict[str, Any]:
    """``model.fit`` with the scheduled optimizer, a plateau, and changes from a callback."""
    import keras

    import hyperstep as hs

    model, optimizer = build()
    plateau = hs.ReduceOnPlateau(optimizer, **PLATEAU)
    traces: list[dict[str, float]] = []

    class Trace(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            _ = self.model  # on JAX this syncs the training state into the variables
            record(optimizer, traces)

    model.compile(optimizer, "mse")
    x, y = data()
    log_path = os.path.join(tmp, "hyperparameters.csv")
    log = hs.callbacks.LogHyperparameters(optimizer.hyperparameters, csv_path=log_path)
    callbacks = [Trace(), log, plateau]
    model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=callbacks)
    before = plateau_state(plateau)
    with open(log_path) as f:
        logged = [(int(r["step"]), float(r["learning_rate"])) for r in csv.DictReader(f)]
    imported = "tensorflow" in sys.modules  # Keras's own saving imports it when installed
    path = os.path.join(tmp, "model.keras")
    model.save(path)
    loaded = keras.models.load_model(path)
    after = plateau_state(hs.ReduceOnPlateau(loaded.optimizer, **PLATEAU))
    return {
        "traces": traces,
        "weights": weights(model),
        "saved": before,
        "loaded": after,
        "tensorflow_before_save": imported,
        "logged": logged,
    }


def check_step_optimizer() -> dict[str, Any]:
    """``hs.StepOptimizer`` with the built-in Adam rule and a group, under ``fit``."""
    import keras

    import hyperstep as hs

    model, _ = build()
    optimizer = hs.StepOptimizer(
        "adam",
        groups=[hs.Group("bias", match="*/bias", learning_rate="0.02 * 0.5 ** (step / 4)")],
        learning_rate="warmup(0.05, steps=3)",
        beta_1="0.9 - 0.05 * min(step / 10, 1)",
    )
    model.compile(optimizer, "mse")
    x, y = data()
    model.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    step = int(keras.ops.convert_to_numpy(optimizer.clock.step))
    return {"weights": weights(model), "step": step}


def check_relative_group(tmp: str) -> dict[str, Any]:
    """A group at ``"10 * learning_rate"`` under ``fit`` while a plateau halves the main rate.

    With ``loss = mean(model(x))`` the gradient of the bias is exactly 1, so each SGD
    update moves it by minus the rate the compiled step used: recorded per batch with the
    main rate read before it. Then a ``.keras`` round trip.
    """
    import keras
    import numpy as np

    import hyperstep as hs

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="head")])
    model.set_weights([np.ones((3, 1), "float32"), np.zeros((1,), "float32")])
    optimizer = hs.scheduled(
        keras.optimizers.SGD(),
        learning_rate="warmup(cosine(0.1, steps=100), steps=10)",
        groups=[hs.Group("head", match="*bias", learning_rate="10 * learning_rate")],
    )
    main = optimizer.hyperparameters["learning_rate"]
    plateau = hs.ReduceOnPlateau(main, monitor="loss", factor=0.5, patience=0, min_delta=10.0)
    rows: list[list[float]] = []

    def bias(callback: Any) -> float:
        return float(keras.ops.convert_to_numpy(callback.model.layers[0].bias)[0])

    class Used(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            rows.append([bias(self), float(keras.ops.convert_to_numpy(main.value))])

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            rows[-1].append(bias(self))

    def mean(y_true: Any, y_pred: Any) -> Any:
        return keras.ops.mean(y_pred)

    model.compile(optimizer, mean)
    x, _ = data()
    model.fit(
        x,
        x[:, :1],
        batch_size=BATCH,
        epochs=EPOCHS,
        shuffle=False,
        verbose=0,
        callbacks=[Used(), plateau],
    )
    path = os.path.join(tmp, "relative.keras")
    model.save(path)
    loaded = keras.models.load_model(path, custom_objects={"mean": mean})
    hps = loaded.optimizer.hyperparameters
    hps["learning_rate"].set(0.02)
    return {
        "main": [row[1] for row in rows],
        "used": [row[0] - row[2] for row in rows],
        "reductions": plateau.reductions,
        "schedule": [
            float(v) for v in keras.ops.convert_to_numpy(main.schedule(np.arange(len(rows))))
        ],
        "loaded_group": repr(hps["head/learning_rate"].schedule),
        "loaded_value": float(keras.ops.convert_to_numpy(hps["head/learning_rate"].value)),
    }


def loop_tensorflow(model: Any, optimizer: Any, plateau: Any) -> tuple[list[Any], int]:
    import tensorflow as tf

    traces: list[dict[str, float]] = []
    x, y = data()
    calls = []

    @tf.function
    def train_step(xb: Any, yb: Any) -> Any:
        calls.append(1)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb) - yb) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        return loss

    for _ in range(EPOCHS):
        losses = []
        for i in range(0, SAMPLES, BATCH):
            record(optimizer, traces)
            losses.append(float(train_step(x[i : i + BATCH], y[i : i + BATCH])))
        plateau.update(sum(losses) / len(losses))
    return traces, len(calls)


def loop_jax(model: Any, optimizer: Any, plateau: Any) -> tuple[list[Any], int]:
    import jax
    import keras

    traces: list[dict[str, float]] = []
    x, y = data()
    calls = []

    def loss_fn(trainable: Any, non_trainable: Any, xb: Any, yb: Any) -> Any:
        y_pred, non_trainable = model.stateless_call(trainable, non_trainable, xb)
        return keras.ops.mean((y_pred - yb) ** 2), non_trainable

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    @jax.jit
    def train_step(state: Any, xb: Any, yb: Any) -> Any:
        calls.append(1)  # a Python side effect: runs once per trace
        trainable, non_trainable, optimizer_variables = state
        (loss, non_trainable), grads = grad_fn(trainable, non_trainable, xb, yb)
        trainable, optimizer_variables = optimizer.stateless_apply(
            optimizer_variables, grads, trainable
        )
        return loss, (trainable, non_trainable, optimizer_variables)

    def sync(state: Any) -> None:  # arrays -> Keras variables
        variables = (model.trainable_variables, model.non_trainable_variables, optimizer.variables)
        for group, values in zip(variables, state, strict=True):
            for variable, value in zip(group, values, strict=True):
                variable.assign(value)

    def fetch() -> Any:  # Keras variables -> arrays
        return (
            [v.value for v in model.trainable_variables],
            [v.value for v in model.non_trainable_variables],
            [v.value for v in optimizer.variables],
        )

    state = fetch()
    for _ in range(EPOCHS):
        losses = []
        for i in range(0, SAMPLES, BATCH):
            sync(state)  # run-time changes go through the variables, then back into the state
            record(optimizer, traces)
            state = fetch()
            loss, state = train_step(state, x[i : i + BATCH], y[i : i + BATCH])
            losses.append(float(loss))
        sync(state)
        plateau.update(sum(losses) / len(losses))
        state = fetch()
    sync(state)
    assert train_step._cache_size() == len(calls)  # type: ignore[attr-defined]
    return traces, len(calls)


def torch_step(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    """torch's natural training step: mean squared error, ``loss.backward()``,
    ``optimizer.apply``; return the loss."""
    import torch

    loss = torch.mean(torch.square(model(x) - y))
    model.zero_grad()
    loss.backward()
    grads = [v.value.grad for v in model.trainable_variables]
    with torch.no_grad():
        optimizer.apply(grads, model.trainable_variables)
    return loss


def loop_torch(model: Any, optimizer: Any, plateau: Any) -> tuple[list[Any], int]:
    import torch

    traces: list[dict[str, float]] = []
    x, y = data()
    for _ in range(EPOCHS):
        losses = []
        for i in range(0, SAMPLES, BATCH):
            record(optimizer, traces)
            yb = torch.from_numpy(y[i : i + BATCH])
            losses.append(float(torch_step(model, optimizer, x[i : i + BATCH], yb)))
        plateau.update(sum(losses) / len(losses))
    return traces, 0


def check_loop(backend: str) -> dict[str, Any]:
    import hyperstep as hs

    model, optimizer = build()
    optimizer.build(model.trainable_variables)
    plateau = hs.ReduceOnPlateau(optimizer, **PLATEAU)
    loop = {"tensorflow": loop_tensorflow, "jax": loop_jax, "torch": loop_torch}[backend]
    traces, traced = loop(model, optimizer, plateau)
    state = plateau_state(plateau)
    return {"traces": traces, "weights": weights(model), "traced": traced, "plateau": state}


def check_tensorflow_only() -> dict[str, str]:
    """The message each TensorFlow-only feature raises (empty on TensorFlow)."""
    import importlib

    import numpy as np

    import hyperstep as hs

    attempts = {
        "LogHyperparameters(log_dir=...)": lambda: hs.callbacks.LogHyperparameters(
            [hs.Hyperparameter(0.1, name="lr")], log_dir="/tmp/unused"
        ),
    }
    for module in [
        "hyperstep.control.distribute",
        "hyperstep.backends.tensorflow",
    ]:
        attempts[module] = lambda module=module: importlib.import_module(module)
    examples = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
    for name in sorted(os.listdir(examples)):
        if name.startswith("seed") and name.endswith(".py"):
            attempts[f"examples/{name}"] = lambda name=name: _run_file(os.path.join(examples, name))
    found = {}
    for name, attempt in attempts.items():
        try:
            attempt()
            found[name] = "no error"
        except Exception as error:  # reported, judged by the test
            found[name] = f"{type(error).__module__}.{type(error).__name__}: {error}"
    del np
    return found


def check_jit_reads() -> dict[str, str]:
    """JAX: what reading a Hyperparameter inside ``jax.jit`` gives, mapped or not."""
    import jax
    import keras

    import hyperstep as hs

    clock = hs.Clock()
    hp = hs.Hyperparameter("step / 10", clock=clock, name="kl_beta")
    for _ in range(3):
        clock.advance()

    @jax.jit
    def unmapped(x: Any) -> Any:
        return x * hp.value

    @jax.jit
    def step_only(x: Any, step: Any) -> Any:
        with keras.StatelessScope(state_mapping=[(clock.step, step)]):
            return x * hp.value

    @jax.jit
    def mapped(x: Any, values: Any) -> Any:
        with keras.StatelessScope(state_mapping=list(zip(hp.variables, values, strict=True))):
            return x * hp.value

    attempts = {
        "unmapped": lambda: unmapped(1.0),
        "step_only": lambda: step_only(1.0, clock.step.value),
        "mapped": lambda: mapped(1.0, [v.value for v in hp.variables]),
        "mapped_at_step_7": lambda: mapped(1.0, [7, *[v.value for v in hp.variables[1:]]]),
        "grad_eagerly": lambda: jax.grad(lambda x: x * hp.value)(1.0),
    }
    found = {}
    for name, attempt in attempts.items():
        try:
            found[name] = repr(float(attempt()))
        except Exception as error:  # reported, judged by the test
            found[name] = f"{type(error).__module__}.{type(error).__name__}: {error}"
    return found


def _run_file(path: str) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("example", path)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def main() -> None:
    import tempfile

    from worker_io import ours  # beside this script (run as one)

    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import keras

        import hyperstep  # noqa: F401

        backend = keras.backend.backend()
        result: dict[str, Any] = {
            "backend": backend,
            "tensorflow_after_import": "tensorflow" in sys.modules,
        }
        with tempfile.TemporaryDirectory() as tmp:
            result["schedules"] = check_schedules()
            result["big_steps"] = check_big_steps()
            result["step_optimizer"] = check_step_optimizer()
            result["loop"] = check_loop(backend)
            if backend != "tensorflow":
                result["tensorflow_only"] = check_tensorflow_only()
            if backend == "jax":
                result["jit_reads"] = check_jit_reads()
            result["fit"] = check_fit(tmp)  # it saves with Keras (imports TensorFlow)
            result["relative_group"] = check_relative_group(tmp)
    result["warnings"] = [
        f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
        for w in caught
        if ours(w, tests=False) or "Explicitly requested dtype" in str(w.message)
    ]
    result["seconds"] = time.perf_counter() - started
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
