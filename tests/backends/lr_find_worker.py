"""``hs.find_lr`` under one backend, run by ``test_lr_find_backends.py`` in a fresh process.

``KERAS_BACKEND=jax python tests/backends/lr_find_worker.py`` trains a small model one
epoch (plain Adam; ``hs.scheduled`` AdamW with a group and an override), runs a completed,
an early-stopped and an interrupted range test on it, and prints one line ``RESULT <json>``:
whether every variable came back bitwise, the learning rates the steps saw, how often the
train step was traced, and the warnings raised. This file asserts nothing itself.

Importing this module (pytest's doctest collection does) runs nothing.
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

BATCH, SAMPLES, STEPS = 16, 64, 12


def build(kind: str) -> Any:
    import keras
    import numpy as np

    import hyperstep as hs

    class Counting(keras.Sequential):
        traces = 0

        def train_step(self, *args: Any) -> Any:  # (data), or (state, data) on JAX
            Counting.traces += 1  # once per trace under jit; every step on eager torch
            return super().train_step(*args)

    model = Counting(
        [
            keras.Input((3,)),
            keras.layers.Dense(4, activation="tanh", name="body"),
            keras.layers.BatchNormalization(name="norm"),
            keras.layers.Dense(1, name="head"),
        ]
    )
    rng = np.random.default_rng(3)
    model.set_weights([rng.normal(size=w.shape).astype("float32") for w in model.get_weights()])
    if kind == "keras":
        optimizer = keras.optimizers.Adam(1e-3)
    else:
        optimizer = hs.scheduled(
            keras.optimizers.AdamW(),
            learning_rate="1e-3 * 0.5 ** (step / 10)",
            groups=[hs.Group("head", match="*/head/*", learning_rate=4e-3)],
        )
    model.compile(optimizer=optimizer, loss="mse")
    return model


def state(model: Any) -> dict[str, bytes]:
    import numpy as np

    variables = [*model.variables, *model.optimizer.variables]
    for hyperparameter in getattr(model.optimizer, "hyperparameters", {}).values():
        variables.extend(hyperparameter.variables)
    return {f"{v.path}#{id(v)}": np.asarray(v.numpy()).tobytes() for v in variables}


def check(kind: str) -> dict[str, Any]:
    import keras
    import numpy as np

    import hyperstep as hs

    rng = np.random.default_rng(7)
    x = rng.normal(size=(SAMPLES, 3)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype("float32")
    model = build(kind)
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
    found = getattr(model.optimizer, "hyperparameters", {})
    if found:
        found["beta_2"].set(0.995)
    seen: list[float] = []
    head: list[float] = []

    class Seen(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            self.model  # noqa: B018 (JAX: the state synced before reading variables)
            read = model.optimizer.learning_rate
            seen.append(float(keras.ops.convert_to_numpy(read)))
            if found:
                head.append(float(keras.ops.convert_to_numpy(found["head/learning_rate"].value)))

    class Interrupt(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if batch == 2:
                raise KeyboardInterrupt

    restored, traces = {}, {}
    before = state(model)
    start = type(model).traces
    finding = hs.find_lr(model, x, y, batch_size=BATCH, steps=STEPS, callbacks=[Seen()], verbose=0)
    traces["completed"] = type(model).traces - start
    restored["completed"] = state(model) == before
    early = hs.find_lr(model, x, y, batch_size=BATCH, steps=40, max_lr=1e6, verbose=0)
    restored["early-stopped"] = state(model) == before
    try:
        hs.find_lr(model, x, y, batch_size=BATCH, callbacks=[Interrupt()], verbose=0)
    except KeyboardInterrupt:
        restored["interrupted"] = state(model) == before
    start = type(model).traces
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
    return {
        "restored": restored,
        "traces": traces,
        "traces_in_fit": type(model).traces - start,
        "learning_rates": finding.learning_rates.tolist(),
        "seen": seen,
        "head": head,
        "raw_losses": finding.raw_losses.tolist(),
        "early": {"stopped": early.stopped_early, "steps": len(early.learning_rates)},
    }


def main() -> None:
    from worker_io import ours  # beside this script (run as one)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import keras

        result: dict[str, Any] = {"backend": keras.backend.backend()}
        for kind in ("keras", "scheduled"):
            result[kind] = check(kind)
    result["warnings"] = [
        f"{w.category.__name__}: {w.message}"
        for w in caught
        if ours(w)  # hyperstep's package or this script
    ]
    print("RESULT " + json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
