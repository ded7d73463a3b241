"""hs.Remote under ``keras.distribution.DataParallel`` over two CPU devices (JAX); a script.

``XLA_FLAGS=--xla_force_host_platform_device_count=2`` gives JAX two CPU devices; ``fit``
runs data-parallel over both. A callback writes ``set learning_rate=0`` after update 3 and
``cooldown weight_decay --steps 4`` after update 5 (as ``hyperstep`` would): the weights,
replicated on both devices, stay equal there, stop changing from the journaled step on,
and the train step is traced once. Prints ``RESULT {json}``.

``armed`` (the first argument): ``fit(steps_per_execution=4)``, where the Remote arms every
hyperparameter with a table before the step is traced; ``schedule learning_rate=...`` after
the execution ending at update 8 and ``scale`` after update 16. The weights (both devices'
copies) end bitwise those of a fresh data-parallel run given the replayed schedules, with
one trace each.
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
    3: {"verb": "set", "values": {"learning_rate": 0.0}, "force": True},
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


ARMED_PLAN = {
    8: {"verb": "schedule", "values": {"learning_rate": "0.05 * 0.9 ** step"}},
    16: {"verb": "scale", "values": {"learning_rate": 0.5}},
}


def _armed_run(given: dict, directory: str | None) -> tuple[list, int, list]:
    """AdamW for 24 updates under fit(steps_per_execution=4) on both devices, steered by
    ARMED_PLAN when ``directory`` is given; the weights' shards, traces, applied steps."""
    keras.utils.set_random_seed(1)
    model = Counting([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    opt = hs.scheduled(keras.optimizers.AdamW(), **given)
    model.compile(opt, "mse", steps_per_execution=4)
    callbacks: list = []
    if directory is not None:
        remote = hs.Remote(directory)

        class Steer(keras.callbacks.Callback):
            executions = 0

            def on_train_batch_end(self, batch, logs=None):
                # one call per execution (reading variables here fails in Keras's JAX fit)
                self.executions += 1
                step = self.executions * 4
                if step in ARMED_PLAN:
                    submit(remote.directory, ARMED_PLAN[step])

        callbacks = [remote, Steer()]
    x = np.linspace(-1, 1, 288, dtype="float32").reshape(96, 3)
    y = np.sin(x[:, :1]).astype("float32")
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=callbacks)
    shards = [
        [np.asarray(s.data).tolist() for s in v.value.addressable_shards]
        for v in model.trainable_variables
    ]
    applied = []
    if directory is not None:
        journal = [json.loads(line) for line in open(os.path.join(directory, "journal.jsonl"))]
        applied = [e["step"] for e in journal if e.get("status") == "applied"]
    return shards, model.traces, applied


def armed() -> dict:
    devices = jax.devices("cpu")
    keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
    directory = os.path.join(tempfile.mkdtemp(), "run")
    given = {"learning_rate": "0.05 * (1 - step / 100)", "weight_decay": 0.004}
    controlled, traces, applied = _armed_run(given, directory)
    schedules = {n: repr(s) for n, s in hs.Remote.replay(directory).items()}
    fresh, fresh_traces, _ = _armed_run({**given, **schedules}, None)
    unsteered, _, _ = _armed_run(given, None)
    return {
        "devices": len(devices),
        "applied": applied,
        "replayed": sorted(schedules),
        "shards": [len(v) for v in controlled],
        "replicas_equal": all(v[0] == v[1] for v in controlled),
        "bitwise": controlled == fresh,
        "steered": controlled != unsteered,
        "traces": [traces, fresh_traces],
    }


if __name__ == "__main__":
    print("RESULT " + json.dumps(armed() if sys.argv[1:] == ["armed"] else main()))
    sys.stdout.flush()
