"""Cost of ``hs.Remote``'s polling: ``fit`` steps with it against the same ``fit`` without it.

The benchmark MLP 784-256-256-10 (``benchmarks/_models.py``), batch 128, ``hs.scheduled``
Adam with a cosine learning rate, float32, CPU, on the backend ``KERAS_BACKEND`` names
(TensorFlow, JAX or torch). Two variants, run interleaved in a rotating order, each run a
short ``fit`` of ``--steps`` steps (its first epoch not timed):

* ``none``    no callback;
* ``remote``  ``hs.Remote(DIR)`` with no command arriving: each step one ``os.stat``, and
              the status file written every ``status_every`` seconds (default 5 s; an
              atomic write, whose rename alone takes milliseconds on some filesystems).

Prints min/median/max milliseconds per step, the median of the ratios paired within each
repeat, the time of one poll alone (between commands, as ``fit`` calls it) as a share
of a step, and the time of each poll of a custom loop with 0 and with 1,000 commands
queued at once (a poll applies at most ``MAX_AGREED``, so the burst spreads over steps and
no step waits for all of it; with none queued a poll is one ``os.stat``): on a loaded
machine the spread between runs is larger than the cost, and that
share is the steadier figure. The target: polling costs at most 1% of a step.
``--quick`` runs a few short repeats (a smoke run, not a measurement).

Usage: KERAS_BACKEND=tensorflow python benchmarks/remote.py [--repeats N] [--steps N] [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import keras
import numpy as np
from _models import mlp

import hyperstep as hs
from hyperstep.backends.steering import MAX_AGREED
from hyperstep.control.directory import submit

BATCH = 128


class Timer(keras.callbacks.Callback):
    """Wall time of the last epoch's steps."""

    def on_epoch_begin(self, epoch, logs=None):
        self.began = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.seconds = time.perf_counter() - self.began


def build() -> keras.Model:
    model = mlp()
    opt = hs.scheduled(
        keras.optimizers.Adam(), learning_rate=hs.schedules.cosine(1e-3, steps=100_000)
    )
    model.compile(opt, "sparse_categorical_crossentropy")
    return model


def drain(directory: str, queued: int, polls: int = 200) -> tuple[list[float], int]:
    """A custom loop's Remote with ``queued`` commands waiting: the milliseconds of each of
    ``polls`` polls (a clock advance between them) and how many polls applied them all."""
    lr = hs.Hyperparameter(0.1, name="learning_rate")
    remote = hs.Remote(os.path.join(directory, f"queued{queued}"), lr, status_every=float("inf"))
    remote.poll()  # the run begins: commands sent from now on are its own
    for index in range(queued):
        submit(remote.directory, {"verb": "set", "values": {"learning_rate": 1e-4 * (index + 1)}})
    times, steps = [], 0
    for _ in range(polls):
        began = time.perf_counter()
        applied = remote.poll()
        times.append(1000 * (time.perf_counter() - began))
        steps += bool(applied)
        lr.clock.advance()
    remote.close()
    return times, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--quick", action="store_true", help="3 repeats of 20 steps")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.steps = 3, 20
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH * args.steps, 784)).astype("float32")
    y = rng.integers(0, 10, size=(BATCH * args.steps,))
    directory = tempfile.mkdtemp(prefix="hyperstep-remote-")
    models = {"none": build(), "remote": build()}
    callbacks = {"none": [], "remote": [hs.Remote(os.path.join(directory, "run"))]}
    times: dict[str, list[float]] = {name: [] for name in models}
    ratios = []
    names = list(models)
    for name in names:  # warm up: trace and compile once
        models[name].fit(x, y, batch_size=BATCH, epochs=1, verbose=0, callbacks=callbacks[name])
    for repeat in range(args.repeats):
        order = names if repeat % 2 == 0 else names[::-1]
        found = {}
        for name in order:
            timer = Timer()
            models[name].fit(
                x, y, batch_size=BATCH, epochs=2, verbose=0, callbacks=[*callbacks[name], timer]
            )
            found[name] = 1000 * timer.seconds / args.steps
            times[name].append(found[name])
        ratios.append(found["remote"] / found["none"])
    print(f"backend {keras.backend.backend()}, {args.repeats} repeats of {args.steps} steps")
    for name, values in times.items():
        print(
            f"  {name:7s} ms/step  min {min(values):.3f}  median {statistics.median(values):.3f}"
            f"  max {max(values):.3f}"
        )
    remote = callbacks["remote"][0]
    between = hs.Remote(os.path.join(directory, "quiet"), status_every=float("inf"))
    between.set_model(models["remote"])
    between.poll()  # the first poll reads the journal state
    polls, writes = [], []
    for _ in range(5):  # the poll alone, between commands and status writes
        began = time.perf_counter()
        for _ in range(2000):
            between.on_train_batch_begin(0)
        polls.append((time.perf_counter() - began) / 2000 * 1e6)
        began = time.perf_counter()
        remote.write_status()
        writes.append((time.perf_counter() - began) * 1e3)
    step_us = 1000 * statistics.median(times["none"])
    share = min(polls) / step_us + min(writes) / (1000 * remote.status_every)
    print(
        f"  one poll {min(polls):.2f} us (min of 5x2000), one status write {min(writes):.2f} ms "
        f"every {remote.status_every:g} s: {100 * share:.3f}% of the time of steps without it"
    )
    for queued in (0, 1000):
        polls_ms, steps = drain(directory, queued)
        busy = polls_ms[:steps] or [0.0]
        idle = polls_ms[steps:]
        print(
            f"  {queued:4d} commands queued: {steps} polls apply them (at most {MAX_AGREED} "
            f"a poll), each median {statistics.median(busy):.2f} max {max(busy):.2f} ms; "
            f"then a poll median {1000 * statistics.median(idle):.2f} us"
        )
    paired = statistics.median(ratios)
    print(
        f"  remote / none, paired median {paired:.4f} (min {min(ratios):.4f}, max "
        f"{max(ratios):.4f}; the machine's load moves it more than the cost)"
    )
    print(f"  target, polling <= 1% of a step: {'met' if share <= 0.01 else 'NOT met'}")


if __name__ == "__main__":
    main()
