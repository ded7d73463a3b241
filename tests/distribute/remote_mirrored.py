"""hs.Remote under MirroredStrategy over two logical CPUs: run as a script, prints RESULT JSON.

A command written at step 3 (as ``hyperstep set DIR learning_rate=0`` would) must take
effect at one step on both replicas: the weights' two copies stay equal, and they stop
changing from the journaled step on.
"""

import json
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["KERAS_BACKEND"] = "tensorflow"

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402

import hyperstep as hs  # noqa: E402
from hyperstep.control.directory import submit  # noqa: E402


def main() -> dict:
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    directory = os.path.join(tempfile.mkdtemp(), "run")
    with strategy.scope():
        keras.utils.set_random_seed(1)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
        opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.05)
        model.compile(opt, "mse")
    remote = hs.Remote(directory)
    copies: list[list[np.ndarray]] = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            step = int(keras.ops.convert_to_numpy(opt.iterations))
            if step == 3:
                submit(
                    remote.directory,
                    {"verb": "set", "values": {"learning_rate": 0.0}, "force": True},
                )
            copies.append(
                [
                    np.stack([np.asarray(c) for c in strategy.experimental_local_results(v.value)])
                    for v in model.trainable_variables
                ]
            )

    x = np.linspace(-1, 1, 96, dtype="float32").reshape(32, 3)
    y = np.sin(x[:, :1]).astype("float32")
    model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[remote, Record()])
    journal = [json.loads(line) for line in open(os.path.join(directory, "journal.jsonl"))]
    [applied] = [e for e in journal if e.get("status") == "applied"]
    step = applied["step"]
    replicas_equal = all(np.array_equal(c[0], c[1]) for row in copies for c in row)
    changed_before = not all(
        np.array_equal(a, b) for a, b in zip(copies[step - 1], copies[step - 2], strict=True)
    )
    frozen_after = all(
        np.array_equal(a, b)
        for row in copies[step:]
        for a, b in zip(row, copies[step - 1], strict=True)
    )
    override = hs_override(opt, strategy)
    return {
        "replicas": strategy.num_replicas_in_sync,
        "step": step,
        "replicas_equal": replicas_equal,
        "changed_before": changed_before,
        "frozen_after": frozen_after,
        "override": override,
    }


def hs_override(opt, strategy) -> list[float]:
    variable = opt.hyperparameters["learning_rate"].override
    return [float(np.asarray(v)) for v in strategy.experimental_local_results(variable.value)]


if __name__ == "__main__":
    print("RESULT " + json.dumps(main()))
    sys.stdout.flush()
