"""One worker of a two-worker MultiWorkerMirroredStrategy run steered by hs.Remote; a script.

``python remote_multi_worker.py OUT INDEX PORT0 PORT1 CONTROL [--alone]`` sets ``TF_CONFIG``
for worker ``INDEX`` of ``127.0.0.1:PORT0``, ``127.0.0.1:PORT1`` and trains a small model with
``hs.scheduled(SGD)`` in a custom loop (``strategy.run``), calling ``remote.poll()`` before
every update. At iteration ``SUBMIT`` worker 0 sleeps ``DELAY`` seconds, then writes
``set learning_rate=0`` into ``CONTROL`` (as ``hyperstep set`` would) and polls: worker 1
has polled that iteration already, without the file. The workers must still apply it at
one step. ``--alone`` skips the agreement (each worker reads the directory alone): it shows
what the agreement prevents. Writes ``OUT/result_{INDEX}.json`` (the steps its Remote
applied commands at, the weights after every update), then waits to be killed.
"""

from __future__ import annotations

import json
import os
import sys
import time

STEPS = 8
SUBMIT = 3
DELAY = 1.0
GLOBAL_BATCH = 8


def main(out: str, index: int, ports: list[int], control: str, alone: bool) -> None:
    os.environ["TF_CONFIG"] = json.dumps(
        {
            "cluster": {"worker": [f"127.0.0.1:{port}" for port in ports]},
            "task": {"type": "worker", "index": index},
        }
    )
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras
    import numpy as np
    import tensorflow as tf

    import hyperstep as hs
    from hyperstep.control.directory import submit

    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    with strategy.scope():
        keras.utils.set_random_seed(1)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
        opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.05)
        opt.build(model.trainable_variables)
    remote = hs.Remote(control, opt.hyperparameters)
    x = np.linspace(-1, 1, GLOBAL_BATCH * 3, dtype="float32").reshape(GLOBAL_BATCH, 3)
    y = np.sin(x[:, :1]).astype("float32")
    local = GLOBAL_BATCH // len(ports)
    xb, yb = x[index * local : (index + 1) * local], y[index * local : (index + 1) * local]

    def replica_step(xb, yb):
        with tf.GradientTape() as tape:
            per_example = tf.reduce_mean(tf.square(model(xb) - yb), axis=-1)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
        opt.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        return loss

    @tf.function
    def train_step(xb, yb):
        return strategy.run(replica_step, args=(xb, yb))

    remote.poll()  # the first poll: begins the journal
    if alone:
        remote._agree = None
    applied, weights = [], []
    for iteration in range(STEPS):
        if index == 0 and iteration == SUBMIT:
            time.sleep(DELAY)
            submit(
                remote.directory, {"verb": "set", "values": {"learning_rate": 0.0}, "force": True}
            )
        for entry in remote.poll():
            applied.append([entry["seq"], entry["status"], entry["step"]])
        train_step(tf.constant(xb), tf.constant(yb))
        weights.append([v.numpy().tolist() for v in model.trainable_variables])
    result = {
        "applied": applied,
        "weights": weights,
        "workers": int(remote._place.count),
        "chief": bool(remote._place.chief),
        "override": float(opt.hyperparameters["learning_rate"].override.numpy()),
    }
    path = os.path.join(out, f"result_{index}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)
    while True:  # a MultiWorkerMirroredStrategy worker may hang on exit: the test kills it
        time.sleep(1)


if __name__ == "__main__":
    main(
        sys.argv[1],
        int(sys.argv[2]),
        [int(sys.argv[3]), int(sys.argv[4])],
        sys.argv[5],
        "--alone" in sys.argv[6:],
    )
