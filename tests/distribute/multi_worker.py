"""One worker of a two-worker MultiWorkerMirroredStrategy run, on loopback; a script.

``python multi_worker.py DIRECTORY INDEX PORT0 PORT1 PHASE`` sets ``TF_CONFIG`` for worker
``INDEX`` of the cluster ``127.0.0.1:PORT0``, ``127.0.0.1:PORT1`` and trains a small model
with ``hs.scheduled(Adam)`` in a custom loop (``strategy.run``), a ``ReduceOnPlateau`` on
the learning rate fed a metric that differs per worker (``METRICS[index]``), and a second
plateau on a probe hyperparameter fed the same metric with ``reduce=None`` (each worker
decides alone: it shows what the reduction prevents).

* ``PHASE=train``: epochs ``0 .. EPOCHS - 1``; after epoch ``SAVE_AFTER`` every worker writes
  the checkpoint (the chief to ``DIRECTORY/ckpt``, the other to a scratch folder).
* ``PHASE=resume``: restores ``DIRECTORY/ckpt`` and trains epochs ``SAVE_AFTER + 1 ..``.

Each writes ``DIRECTORY/{PHASE}_{INDEX}.json`` (per-step rows, per-epoch plateau state,
final weights), then waits to be killed. :func:`run` is also used by the test with the
default strategy, as the single-device reference. Importing this module does nothing.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

GLOBAL_BATCH = 16
STEPS_PER_EPOCH = 2
EPOCHS = 6
SAVE_AFTER = 2  # the checkpoint is written after this epoch
# Each worker's metric per epoch (multiples of 1/8: their float32 mean is exact). Alone,
# worker 0 would reduce after epochs 2, 3, 4 and 5, worker 1 after epochs 1, 3 and 5.
METRICS = (
    (1.0, 0.75, 0.75, 0.75, 0.75, 0.75),
    (1.0, 1.0, 0.5, 0.5, 0.25, 0.25),
)
PLATEAU = {"factor": 0.5, "patience": 1, "min_delta": 0.0, "rtol": 0.0, "mode": "min"}


def data() -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(7)
    n = GLOBAL_BATCH * STEPS_PER_EPOCH
    x = rng.normal(size=(n, 4)).astype("float32")
    y = (x @ rng.normal(size=(4, 1)) + 0.3 * rng.normal(size=(n, 1))).astype("float32")
    return x, y


def build(strategy: Any) -> dict[str, Any]:
    """Model, scheduled optimizer, plateau controllers and checkpoint, under ``strategy``."""
    import keras
    import tensorflow as tf

    import hyperstep as hs

    with strategy.scope():
        keras.utils.set_random_seed(1)
        model = keras.Sequential(
            [keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(1)]
        )
        opt = hs.scheduled(
            keras.optimizers.Adam(),
            learning_rate="warmup(cosine(0.05, steps=12, end=0.005), steps=2)",
            weight_decay="linear(0.0, 0.02, steps=12)",
        )
        plateau = hs.ReduceOnPlateau(opt, monitor="metric", **PLATEAU)  # type: ignore[arg-type]
        probe = hs.Hyperparameter(1.0, clock=opt.clock, name="probe")
        local = hs.ReduceOnPlateau(probe, monitor="metric", **PLATEAU)  # type: ignore[arg-type]
        opt.build(model.trainable_variables)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=opt, probe=probe)
    return {
        "model": model,
        "opt": opt,
        "plateau": plateau,
        "probe": probe,
        "local": local,
        "checkpoint": checkpoint,
    }


def state(plateau: Any) -> list[float]:
    scale = float(plateau.target.scale.numpy())
    return [scale, plateau.best, plateau.wait, plateau.cooldown_counter, plateau.reductions]


def run(
    strategy: Any, parts: dict[str, Any], epochs: range, index: int | None, workers: int
) -> dict[str, Any]:
    """Train ``epochs``; ``index=None`` is one device fed the whole batch and mean metric."""
    import numpy as np
    import tensorflow as tf

    model, opt = parts["model"], parts["opt"]
    x, y = data()
    local = GLOBAL_BATCH // workers

    def replica_step(xb: Any, yb: Any) -> Any:
        with tf.GradientTape() as tape:
            per_example = tf.reduce_mean(tf.square(model(xb) - yb), axis=-1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
        opt.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        return loss

    @tf.function
    def train_step(xb: Any, yb: Any) -> Any:
        return strategy.run(replica_step, args=(xb, yb))

    names = ("learning_rate", "weight_decay")
    steps, epochs_out = [], []
    for epoch in epochs:
        for batch in range(STEPS_PER_EPOCH):
            start = batch * GLOBAL_BATCH + (index or 0) * local
            hps = [float(opt.hyperparameters[n].value) for n in names]
            steps.append([float(opt.clock.step.numpy()), *hps])
            train_step(tf.constant(x[start : start + local]), tf.constant(y[start : start + local]))
        if index is None:  # one device: the mean over workers, as the reduction computes it
            values = np.asarray([m[epoch] for m in METRICS], dtype="float32")
            metric = float(values.sum(dtype="float32") / np.float32(len(values)))
        else:
            metric = METRICS[index][epoch]
        parts["plateau"].update(metric)  # reduce="mean": across workers first
        parts["local"].update(metric, reduce=None)  # each worker alone
        epochs_out.append(
            {"epoch": epoch, "plateau": state(parts["plateau"]), "local": state(parts["local"])}
        )
    return {
        "steps": steps,
        "epochs": epochs_out,
        "weights": [w.numpy().tolist() for w in model.weights],
        "traced": int(train_step.experimental_get_tracing_count()),
    }


def main(directory: str, index: int, ports: list[int], phase: str) -> None:
    os.environ["TF_CONFIG"] = json.dumps(
        {
            "cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
            "task": {"type": "worker", "index": index},
        }
    )
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    started = time.perf_counter()
    import tensorflow as tf

    print(f"imported: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    print(f"strategy: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    parts = build(strategy)
    ckpt = os.path.join(directory, "ckpt", "ckpt")
    if phase == "train":
        result = run(strategy, parts, range(SAVE_AFTER + 1), index, len(ports))
        scratch = ckpt if index == 0 else os.path.join(directory, f"scratch{index}", "ckpt")
        parts["checkpoint"].write(scratch)  # every worker writes; only the chief's is kept
        result["saved"] = {"plateau": state(parts["plateau"]), "local": state(parts["local"])}
        rest = run(strategy, parts, range(SAVE_AFTER + 1, EPOCHS), index, len(ports))
        for key in ("steps", "epochs"):
            result[key] += rest[key]
        result["weights"] = rest["weights"]
    else:
        parts["checkpoint"].read(ckpt).assert_consumed()
        result = {"restored": {"plateau": state(parts["plateau"]), "local": state(parts["local"])}}
        result.update(run(strategy, parts, range(SAVE_AFTER + 1, EPOCHS), index, len(ports)))
    result["replicas"] = int(strategy.num_replicas_in_sync)
    print(f"done: {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    path = os.path.join(directory, f"{phase}_{index}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)
    while True:  # a MultiWorkerMirroredStrategy worker may hang on exit: the test kills it
        time.sleep(1)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), [int(sys.argv[3]), int(sys.argv[4])], sys.argv[5])
