"""hs.Remote under ``keras.distribution.DataParallel`` over two CPU devices (JAX); a script.

``XLA_FLAGS=--xla_force_host_platform_device_count=2`` gives JAX two CPU devices; ``fit``
runs data-parallel over both. A callback writes ``set learning_rate=0`` after update 3 and
``cooldown weight_decay --steps 4`` after update 5 (as ``hyperstep`` would): the weights,
replicated on both devices, stay equal there, stop changing from the journaled step on,
and the train step is traced once. Prints ``RESULT {json}``.
"""

import json
import os
import sys
import tempfile

os.environ["KERAS_BACKEND"] = "jax"
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
).strip()

import jax
import keras
import numpy as np

import hyperstep as hs
from hyperstep.control.directory import submit

PLAN = {
    3: {"verb": "set", "values": {"learning_rate": 0.0}},
    5: {"verb": "cooldown", "names": ["weight_decay"], "steps": 4, "shape": "linear"},
}


class Counting(keras.Sequential):
    traces = 0

    def train_step(self, *args, **kwargs):
        self.traces += 1
        return super().train_step(*args, **kwargs)


def main() -> dict:
    devices = jax.devices("cpu")
    keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
    directory = os.path.join(tempfile.mkdtemp(), "run")
    keras.utils.set_random_seed(1)
    model = Counting([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    opt = hs.scheduled(keras.optimizers.AdamW(), learning_rate=0.05, weight_decay=0.04)
    model.compile(opt, "mse")
    remote = hs.Remote(directory)
    copies, decay = [], []

    class Record(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            _ = self.model  # on JAX: fit's state back in the variables first
            decay.append(float(opt.hyperparameters["weight_decay"].value))

        def on_train_batch_end(self, batch, logs=None):
            _ = self.model
            step = int(keras.ops.convert_to_numpy(opt.iterations))
            if step in PLAN:
                submit(remote.directory, PLAN[step])
            copies.append(
                [
                    np.stack([np.asarray(s.data) for s in v.value.addressable_shards])
                    for v in self.model.trainable_variables
                ]
            )

    x = np.linspace(-1, 1, 96, dtype="float32").reshape(32, 3)
    y = np.sin(x[:, :1]).astype("float32")
    model.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0, callbacks=[remote, Record()])
    journal = [json.loads(line) for line in open(os.path.join(directory, "journal.jsonl"))]
    applied = [e["step"] for e in journal if e.get("status") == "applied"]
    step = applied[0]
    override = opt.hyperparameters["learning_rate"].override
    return {
        "devices": len(devices),
        "shards": [len(c) for c in copies[-1]],
        "applied": applied,
        "replicas_equal": all(np.array_equal(c[0], c[1]) for row in copies for c in row),
        "changed_before": not all(
            np.array_equal(a, b) for a, b in zip(copies[step - 1], copies[step - 2], strict=True)
        ),
        "frozen_after": all(
            np.array_equal(a, b)
            for row in copies[step:]
            for a, b in zip(row, copies[step - 1], strict=True)
        ),
        "override": [float(np.asarray(s.data)) for s in override.value.addressable_shards],
        "override_devices": len(override.value.sharding.device_set),
        "decay": decay,
        "traces": model.traces,
    }


if __name__ == "__main__":
    print("RESULT " + json.dumps(main()))
    sys.stdout.flush()
