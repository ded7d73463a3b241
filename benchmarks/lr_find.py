"""Time a 100-step ``hs.find_lr`` against 100 steps of ``model.fit`` on the same model.

The benchmark MLP (784-256-256-10, ``benchmarks/_models.py``), 3,200 random samples, batch
32 (100 batches: one epoch), Adam, both silent (``verbose=0``). ``find_lr`` runs every
step (``stop_factor=None``) and adds per step: writing the learning rate (a plain Keras
optimizer: its variable; ``hs.scheduled``: the override, and a group's), resetting the
loss tracker and reading the loss; once per test: copying and restoring every variable.
Both are warmed up (traced) first; then ``--repeats`` pairs, interleaved (the order
alternating), and the ratio of each pair is summarised.

Target: <= 1.2x. Wall time and process CPU time (all threads) are both reported: on a
machine busy with other work the wall-time ratios scatter, the CPU-time ones much less.

Run: ``python benchmarks/lr_find.py [--repeats 7]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).parent))

import keras
import numpy as np
from _models import mlp

import hyperstep as hs

STEPS, BATCH = 100, 32


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    x = rng.normal(size=(STEPS * BATCH, 784)).astype("float32")
    y = rng.integers(0, 10, size=STEPS * BATCH)
    print(f"backend {keras.backend.backend()}, {STEPS} steps of batch {BATCH}")
    optimizers: dict[str, Callable[[Any], Any]] = {
        "keras.optimizers.Adam": lambda model: keras.optimizers.Adam(1e-3),
        "hs.scheduled(Adam) + group": lambda model: hs.scheduled(
            keras.optimizers.Adam(),
            learning_rate="1e-3 * 0.5 ** (step / 1000)",
            groups=[hs.Group("last", match=list(model.layers[-1].weights), learning_rate=3e-3)],
        ),
    }
    for name, make in optimizers.items():
        model = mlp()
        model.compile(
            optimizer=make(model),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        )
        run = {
            "fit": partial(model.fit, x, y, batch_size=BATCH, epochs=1, verbose=0),
            "find_lr": partial(
                hs.find_lr, model, x, y, batch_size=BATCH, steps=STEPS, min_lr=1e-6,
                max_lr=1e-2, stop_factor=None, verbose=0,
            ),
        }  # fmt: skip
        run["fit"](), run["find_lr"]()  # traced once, shared
        wall: dict[str, list[float]] = {"fit": [], "find_lr": []}
        cpu: dict[str, list[float]] = {"fit": [], "find_lr": []}
        for repeat in range(args.repeats):
            order = ["fit", "find_lr"] if repeat % 2 == 0 else ["find_lr", "fit"]
            for which in order:
                start, start_cpu = time.perf_counter(), time.process_time()
                run[which]()
                wall[which].append(time.perf_counter() - start)
                cpu[which].append(time.process_time() - start_cpu)
        print(name)
        for clock, times in (("wall", wall), ("cpu", cpu)):
            ratios = [a / b for a, b in zip(times["find_lr"], times["fit"], strict=True)]
            fit_median, find_median = (statistics.median(times[k]) for k in ("fit", "find_lr"))
            print(
                f"  {clock:4s} time  find_lr / fit: min {min(ratios):.3f}  median "
                f"{statistics.median(ratios):.3f}  max {max(ratios):.3f}   (fit median "
                f"{fit_median * 1e3:.0f} ms, find_lr median {find_median * 1e3:.0f} ms, "
                f"{(find_median - fit_median) / STEPS * 1e6:+.0f} us/step)"
            )


if __name__ == "__main__":
    main()
