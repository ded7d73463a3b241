"""One of two torch.distributed (gloo) processes training one model steered by hs.Remote.

``python remote_torch_workers.py OUT RANK PORT CONTROL`` joins the process group of 2 at
``tcp://127.0.0.1:PORT`` and trains a small model with ``hs.scheduled(SGD)`` in a custom
loop (gradients averaged by ``all_reduce``), calling ``remote.poll()`` before every update.
At iteration ``SUBMIT`` rank 0 sleeps ``DELAY`` seconds, then writes ``set
learning_rate=0`` into ``CONTROL`` (as ``hyperstep set`` would) and polls: rank 1 has polled
that iteration already, without the file, so only the agreement (a MIN all-reduce of the
commands each can read) makes both apply it at one step. Writes ``OUT/result_{RANK}.json``
(the steps its Remote applied commands at, the weights after every update).
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


def main(out: str, rank: int, port: int, control: str) -> None:
    os.environ["KERAS_BACKEND"] = "torch"
    import keras
    import numpy as np
    import torch
    import torch.distributed as dist

    import hyperstep as hs
    from hyperstep.control.directory import submit

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.05)
    opt.build(model.trainable_variables)
    remote = hs.Remote(control, opt.hyperparameters)
    x = np.linspace(-1, 1, GLOBAL_BATCH * 3, dtype="float32").reshape(GLOBAL_BATCH, 3)
    y = np.sin(x[:, :1]).astype("float32")
    local = GLOBAL_BATCH // 2
    xb = torch.tensor(x[rank * local : (rank + 1) * local])
    yb = torch.tensor(y[rank * local : (rank + 1) * local])
    variables = model.trainable_variables

    remote.poll()  # the first poll: begins the journal
    applied, weights = [], []
    for iteration in range(STEPS):
        if rank == 0 and iteration == SUBMIT:
            time.sleep(DELAY)
            submit(
                remote.directory, {"verb": "set", "values": {"learning_rate": 0.0}, "force": True}
            )
        for entry in remote.poll():
            applied.append([entry["seq"], entry["status"], entry["step"]])
        for v in variables:
            v.value.grad = None
        loss = torch.mean(torch.square(model(xb) - yb))
        loss.backward()
        grads = [v.value.grad for v in variables]
        for grad in grads:
            dist.all_reduce(grad)
            grad /= 2
        with torch.no_grad():
            opt.apply(grads, variables)
        weights.append([keras.ops.convert_to_numpy(v).tolist() for v in variables])
    result = {
        "applied": applied,
        "weights": weights,
        "workers": int(remote._place.count),
        "chief": bool(remote._place.chief),
        "override": float(
            keras.ops.convert_to_numpy(opt.hyperparameters["learning_rate"].override)
        ),
    }
    path = os.path.join(out, f"result_{rank}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
