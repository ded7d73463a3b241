"""MirroredStrategy over two logical CPUs against one device: run as a script, prints JSON.

``python tests/distribute/mirrored_checks.py`` splits the CPU into two logical devices
(which must happen before TensorFlow initializes them, hence a separate process), then runs
every check twice -- under the default strategy (one device) and under
``MirroredStrategy`` (two replicas) with the same global batch -- and prints one JSON
object ``{check: {"single": result, "mirrored": result}}`` on its last line.
``test_mirrored.py`` runs it and compares. Importing this module does nothing.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import warnings
from typing import Any

GLOBAL_BATCH = 16
STEPS_PER_EPOCH = 4
LEARNING_RATE = "warmup(cosine(0.05, steps=12, end=0.005), steps=3)"


def _data(seed: int, n: int = GLOBAL_BATCH * STEPS_PER_EPOCH) -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype("float32")
    y = (x @ rng.normal(size=(4, 1)) + 0.3 * rng.normal(size=(n, 1))).astype("float32")
    return x, y


def _model() -> Any:
    import keras

    keras.utils.set_random_seed(1)
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(1)]
    )


def _weights(model: Any) -> list[Any]:
    return [w.numpy().tolist() for w in model.weights]


class _Trace:
    """A Keras callback recording the step and hyperparameter values each update uses."""

    def __new__(cls, hyperparameters: dict[str, Any]) -> Any:
        import keras

        class Trace(keras.callbacks.Callback):
            def __init__(self) -> None:
                super().__init__()
                self.rows: list[list[float]] = []

            def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
                clock = next(iter(hyperparameters.values())).clock
                row = [float(clock.step.numpy())]
                row += [float(hp.value) for hp in hyperparameters.values()]
                self.rows.append(row)

        return Trace()


def scheduled_fit(strategy: Any, directory: str) -> dict[str, Any]:
    """hs.scheduled(Adam) with scheduled learning rate and weight decay and a ReduceOnPlateau
    on the learning rate, in fit(); then a checkpoint restored into a single-device run."""
    import keras
    import tensorflow as tf

    import hyperstep as hs

    x, y = _data(0)

    def build() -> tuple[Any, Any, Any]:
        model = _model()
        opt = hs.scheduled(
            keras.optimizers.Adam(),
            learning_rate=LEARNING_RATE,
            weight_decay="linear(0.0, 0.02, steps=12)",
        )
        plateau = hs.ReduceOnPlateau(opt, monitor="loss", factor=0.5, patience=1, min_delta=1.2)
        return model, opt, plateau

    with strategy.scope():
        model, opt, plateau = build()
        model.compile(opt, "mse")
    hps = {k: opt.hyperparameters[k] for k in ("learning_rate", "weight_decay")}
    trace = _Trace(hps)
    csv_path = os.path.join(directory, "hyperparameters.csv")
    log = hs.callbacks.LogHyperparameters(hps, csv_path=csv_path)
    history = model.fit(
        x,
        y,
        batch_size=GLOBAL_BATCH,
        epochs=4,
        shuffle=False,
        verbose=0,
        callbacks=[plateau, trace, log],
    )
    path = tf.train.Checkpoint(model=model, optimizer=opt).write(os.path.join(directory, "ckpt"))
    fresh, fresh_opt, fresh_plateau = build()  # outside the scope: one device
    fresh_opt.build(fresh.trainable_variables)
    tf.train.Checkpoint(model=fresh, optimizer=fresh_opt).read(path).assert_consumed()
    with open(csv_path) as f:
        rows = f.read().splitlines()
    return {
        "trace": trace.rows,
        "csv": rows,
        "read": hps["learning_rate"].read(),
        "loss": [float(v) for v in history.history["loss"]],
        "step": int(opt.clock.step.numpy()),
        "iterations": int(opt.iterations.numpy()),
        "state": _plateau_state(plateau),
        "weights": _weights(model),
        "restored_step": int(fresh_opt.clock.step.numpy()),
        "restored_state": _plateau_state(fresh_plateau),
        "restored_weights": _weights(fresh),
        "aggregation": sorted(
            {str(v.aggregation) for v in [opt.clock.step, *hps["learning_rate"].variables]}
        ),
        "replicas": len(strategy.experimental_local_results(opt.clock.step.value)),
    }


def step_optimizer_loop(strategy: Any) -> dict[str, Any]:
    """StepOptimizer with a Group, in a custom loop with strategy.run inside tf.function."""
    import tensorflow as tf

    import hyperstep as hs

    x, y = _data(1)
    with strategy.scope():
        model = _model()
        opt = hs.StepOptimizer(
            "adam",
            groups=[hs.Group("bias", match="*/bias", learning_rate="0.02 * 0.8 ** step")],
            learning_rate="linear(0.05, 0.01, steps=8)",
            beta_1="0.8 + 0.1 * min(step / 4, 1)",
        )
        opt.build(model.trainable_variables)
    # a cooldown of mirrored state, started from the host, cools from step 5 in the traced step
    hs.Cooldown(opt.hyperparameters["learning_rate"], steps=3, shape="cosine").start(at=5)
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)

    def replica_step(xb: Any, yb: Any) -> Any:
        with tf.GradientTape() as tape:
            per_example = tf.reduce_mean(tf.square(model(xb) - yb), axis=-1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply(grads, model.trainable_variables)
        return loss

    @tf.function
    def train_step(batch: Any) -> Any:
        losses = strategy.run(replica_step, args=batch)
        return strategy.reduce("SUM", losses, axis=None)

    names = ["learning_rate", "beta_1", "bias/learning_rate"]
    rows = []
    for _ in range(2):
        for batch in strategy.experimental_distribute_dataset(dataset):
            rows.append(
                [float(opt.clock.step.numpy())]
                + [float(opt.hyperparameters[n].value) for n in names]
            )
            train_step(batch)
    return {
        "trace": rows,
        "step": int(opt.clock.step.numpy()),
        "weights": _weights(model),
        "traced": int(train_step.experimental_get_tracing_count()),
        "uncooled": [float(hs.parse("linear(0.05, 0.01, steps=8)")(s)) for s in range(8)],
    }


def plateau_per_replica(strategy: Any) -> dict[str, Any]:
    """Each replica feeds its own metric inside strategy.run; the decision uses their mean."""
    import tensorflow as tf

    import hyperstep as hs

    with strategy.scope():
        lr = hs.Hyperparameter(0.1, name="learning_rate")
    # outside the scope, as callbacks often are: its state still follows the target's
    plateau = hs.ReduceOnPlateau(lr, monitor="loss", factor=0.5, patience=1, mode="min")
    copies = len(strategy.experimental_local_results(plateau.variables[0].value))
    replicas = strategy.num_replicas_in_sync
    # replica r sees base + d * (r - (replicas - 1) / 2): the mean over replicas is `base`
    bases = [1.0, 0.5, 0.7, 0.45, 0.6, 0.3, 0.3]
    spread = 0.4

    def feed(base: Any) -> Any:
        rid = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)
        return plateau.update(base + spread * (rid - (replicas - 1) / 2.0))

    @tf.function
    def step(base: Any) -> Any:
        return strategy.run(feed, args=(base,))

    rows = []
    for base in bases:
        step(tf.constant(base))
        rows.append([float(lr.value), *_plateau_state(plateau)])
    # outside strategy.run, a per-replica value is reduced with strategy.reduce
    per_replica = strategy.run(
        lambda: (
            tf.constant(0.1)
            * tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)
        )
    )
    plateau.update(per_replica if replicas > 1 else tf.constant(0.05))
    rows.append([float(lr.value), *_plateau_state(plateau)])
    return {"rows": rows, "copies": copies}


def doctor_fit(strategy: Any) -> dict[str, Any]:
    """``hs.callbacks.Doctor`` in fit(): a model scaling its output by a ``tf.Variable``
    Keras does not track; the doctor reads the first replica's part of the batch."""
    import keras
    import tensorflow as tf

    import hyperstep as hs

    class RawScale(keras.Model):
        def __init__(self) -> None:
            super().__init__(name="m")
            self.dense = keras.layers.Dense(1)
            self.scale = tf.Variable(2.0)

        def call(self, x: Any) -> Any:
            return self.dense(x) * self.scale

    x, y = _data(2)
    with strategy.scope():
        keras.utils.set_random_seed(1)
        model = RawScale()
        model.compile(hs.scheduled(keras.optimizers.SGD(), learning_rate=LEARNING_RATE), "mse")
    check = hs.callbacks.Doctor()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", hs.diagnosis.DoctorWarning)
        history = model.fit(
            x, y, batch_size=GLOBAL_BATCH, epochs=1, shuffle=False, verbose=0, callbacks=[check]
        )
    assert check.diagnosis is not None
    return {
        "codes": check.diagnosis.codes(),
        "paths": sorted(finding.path for finding in check.diagnosis.findings),
        "loss": [float(v) for v in history.history["loss"]],
    }


def _plateau_state(plateau: Any) -> list[float]:
    scale = float(plateau.target.scale.numpy())
    return [scale, plateau.best, plateau.wait, plateau.cooldown_counter, plateau.reductions]


CHECKS = {
    "scheduled_fit": scheduled_fit,
    "step_optimizer_loop": step_optimizer_loop,
    "plateau_per_replica": plateau_per_replica,
    "doctor_fit": doctor_fit,
}


def main() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategies = {
        "single": tf.distribute.get_strategy(),
        "mirrored": tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]),
    }
    wanted = sys.argv[1:] or list(CHECKS)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as directory:
        for name in wanted:
            results[name] = {}
            for label, strategy in strategies.items():
                check = CHECKS[name]
                start = time.perf_counter()
                if name == "scheduled_fit":
                    sub = os.path.join(directory, label)
                    os.makedirs(sub)
                    results[name][label] = check(strategy, sub)  # type: ignore[call-arg]
                else:
                    results[name][label] = check(strategy)  # type: ignore[call-arg]
                seconds = time.perf_counter() - start
                print(f"{name} {label}: {seconds:.1f} s", file=sys.stderr)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
