"""``schedule`` and ``cooldown`` commands in ``fit``, against a fresh run (any backend).

:func:`compare` trains an MLP with ``hs.scheduled(AdamW)`` and ``hs.Remote`` for ``STEPS``
steps, its own callback submitting (as ``hyperstep`` would) at step 10 ``schedule
learning_rate=NEW``, at 20 ``cooldown weight_decay --steps 16 --shape 1-sqrt`` (weight_decay
has no ``hs.Cooldown``) and at 30 ``scale learning_rate=0.5``. Then a fresh run, with no
Remote, is built with the learning rate ``where(step < s1, OLD, where(step < s3, NEW, NEW *
0.5))`` and an ``hs.Cooldown(weight_decay, 16, "1-sqrt")`` started before ``fit`` at the
journaled steps. Returns both runs' weights and values after every step, the traces of the
train step and the train functions seen. Run as a script (``KERAS_BACKEND`` set), it prints
``RESULT {json}``; the TensorFlow test imports it.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any

STEPS = 48
OLD = "0.01 * (1 - step / 400)"
NEW = "cosine(0.02, steps=100, end=0.001)"
WEIGHT_DECAY = "linear(0.02, 0.06, steps=200)"
PLAN = {
    10: {"verb": "schedule", "values": {"learning_rate": NEW}},
    20: {"verb": "cooldown", "names": ["weight_decay"], "steps": 16, "shape": "1-sqrt"},
    30: {"verb": "scale", "values": {"learning_rate": 0.5}},
}


def run(learning_rate: str, directory: str | None, cooldown_at: int | None) -> dict[str, Any]:
    import keras
    import numpy as np

    import hyperstep as hs
    from hyperstep.control.directory import submit

    keras.utils.set_random_seed(5)

    class Counting(keras.Sequential):
        traces = 0

        def train_step(self, *args: Any, **kwargs: Any) -> Any:
            self.traces += 1
            return super().train_step(*args, **kwargs)

    model = Counting(
        [keras.Input((3,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)]
    )
    opt = hs.scheduled(
        keras.optimizers.AdamW(), learning_rate=learning_rate, weight_decay=WEIGHT_DECAY
    )
    model.compile(opt, "mse")
    hps = opt.hyperparameters
    if cooldown_at is not None:
        hs.Cooldown(hps["weight_decay"], steps=16, shape="1-sqrt").start(at=cooldown_at)
    rows: list[list[float]] = []
    weights: list[list[float]] = []
    functions: set[int] = set()
    callbacks: list[Any] = []
    remote = None
    if directory is not None:
        remote = hs.Remote(directory)
        callbacks.append(remote)

    class Record(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            rows.append([float(keras.ops.convert_to_numpy(hps[n].value)) for n in sorted(hps)])

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            functions.add(id(self.model.train_function))
            flat = np.concatenate([np.ravel(w) for w in self.model.get_weights()])
            weights.append(flat.tolist())
            step = int(keras.ops.convert_to_numpy(opt.iterations))
            if remote is not None and step in PLAN:
                submit(remote.directory, PLAN[step])

    callbacks.append(Record())
    x = np.linspace(-1, 1, STEPS * 4 * 3, dtype="float32").reshape(STEPS * 4, 3)
    y = (np.sin(3 * x[:, :1]) + x[:, 1:2] * x[:, 2:3]).astype("float32")
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=callbacks)
    return {
        "rows": rows,
        "weights": weights,
        "traces": model.traces,
        "functions": len(functions),
        "names": sorted(hps),
    }


def compare() -> dict[str, Any]:
    directory = os.path.join(tempfile.mkdtemp(), "run")
    controlled = run(OLD, directory, None)
    with open(os.path.join(directory, "journal.jsonl")) as f:
        journal = [json.loads(line) for line in f]
    applied = [e for e in journal if e.get("status") == "applied"]
    steps = [e["step"] for e in applied]
    s1, s2, s3 = steps
    fresh_lr = f"where(step < {s1}, {OLD}, where(step < {s3}, {NEW}, ({NEW}) * 0.5))"
    fresh = run(fresh_lr, None, s2)
    return {
        "steps": steps,
        "schedule_entries": ["schedules" in e for e in applied],
        "controlled": controlled,
        "fresh": fresh,
    }


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    print("RESULT " + json.dumps(compare()))
    sys.stdout.flush()
