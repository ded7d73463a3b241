"""Overhead of ``hs.scheduled`` against plain Keras: time per training step.

MLP 784-256-256-10, batch 128, Adam, float32, CPU. Six variants, measured interleaved
(each repeat runs every variant once, in a rotating order) in a custom ``tf.function``
loop and in ``fit``:

* ``keras``           plain ``keras.optimizers.Adam(1e-3)`` (the baseline);
* ``keras-decay``     plain Adam with a constant ``weight_decay`` (the same formulas as
                      ``hyperstep``, without schedules);
* ``keras-schedule``  Adam with ``keras.optimizers.schedules.ExponentialDecay``;
* ``python-assign``   plain Adam, ``optimizer.learning_rate.assign(value)`` from Python
                      before every step (the seed-002 recipe);
* ``hyperstep``       ``hs.scheduled(Adam(), learning_rate=..., weight_decay=...,
                      beta_1=...)`` with all three on schedules, plus ``hs.ReduceOnPlateau``
                      on the learning rate updated once per block (epoch).

* ``fused``           the same with ``fused=True``: TensorFlow's fused ``ResourceApplyAdam``
                      kernel and weight decay in one multiply (``hyperstep.backends.tensorflow``),
                      the same formulas in fewer passes over the weights than Keras's
                      separate ops, rounded differently (``hyperstep`` is Keras's own update,
                      bitwise).

Prints min/median/max milliseconds per step, the median ratio to ``keras`` and the median
of ratios paired within each repeat. The target is a median ratio <= 1.02 for
``hyperstep``; the script says whether it was met against ``keras`` (Adam without weight
decay) and against ``keras-decay`` (Adam with the same formulas, weight decay included), and
prints what Keras's own constant weight decay costs. It also prints the number of ops in
the traced custom-loop step before and after TensorFlow's graph optimizer, a figure that
does not depend on the machine's load. On a loaded machine the spread between blocks is
larger than the overhead: read ``paired`` and rerun.

``--cooldowns`` adds an ``hs.Cooldown``, not started, on every hyperparameter of the
hyperstep variants (every hyperparameter carries a dormant one anyway since 0.1.0).

``--cpu-time`` runs TensorFlow on one thread and times process CPU time instead of wall
time: steadier when other processes share the machine.

``--torch-fit``: Keras's torch backend (set before Keras is imported): ``model.fit`` steps of
an MLP 784-2048-2048-768-10 (7,385,354 parameters) at batch 32 with plain Keras ``AdamW``
against ``hs.scheduled(AdamW(), ..., fused=True)`` (target: at least 2x faster), and a plain
PyTorch loop with ``torch.optim.AdamW(fused=True)`` on the same network
(``benchmarks/_torch_updates.py``). Built for a loaded machine: all three in one process,
``--threads`` torch threads (default 2), many short runs (12 steps, the first 2 not timed)
interleaved in a rotating order, each run's median step time kept and the ratios taken
within each repeat (paired: load that changes between repeats cancels); prints their
min/quartiles/median/max. Runs for ``--seconds`` (default 75, at least 5 repeats) or
``--repeats N``. With ``--cpu-time``: one thread (unless ``--threads``), process CPU time:
on a machine shared with other work, what each step costs rather than how long it waited.

Usage: python benchmarks/overhead.py [--repeats N] [--steps N] [--cpu-time]
       python benchmarks/overhead.py --torch-fit [--repeats N] [--seconds S] [--threads N]
                                     [--cpu-time]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if __name__ == "__main__" and "--torch-fit" in sys.argv:
    os.environ["KERAS_BACKEND"] = "torch"  # before Keras is imported; TensorFlow is not
    from _torch_updates import fit_main  # benchmarks/ (the script's folder)

    parsed = argparse.ArgumentParser(description="model.fit on Keras's torch backend vs PyTorch")
    parsed.add_argument("--torch-fit", action="store_true")
    parsed.add_argument("--repeats", type=int, default=None, help="default: for --seconds")
    parsed.add_argument("--seconds", type=float, default=75.0)
    parsed.add_argument("--threads", type=int, default=None, help="default 2 (--cpu-time: 1)")
    parsed.add_argument("--cpu-time", action="store_true")
    arguments = parsed.parse_args()
    threads = arguments.threads or (1 if arguments.cpu_time else 2)
    fit_main(arguments.repeats, arguments.seconds, threads, arguments.cpu_time)
    sys.exit(0)
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras
import numpy as np
import tensorflow as tf
from _models import mlp  # benchmarks/_models.py (the script's folder is on sys.path)

import hyperstep as hs

BATCH = 128
TARGET = 1.02
VARIANTS = ("keras", "keras-decay", "keras-schedule", "python-assign", "hyperstep", "fused")
TIMER = time.perf_counter  # --cpu-time: time.process_time with one TensorFlow thread


#: --cooldowns
COOLDOWNS = False


def _optimizer(variant: str) -> tuple[keras.optimizers.Optimizer, object]:
    """Return the optimizer and a per-block hook (a plateau controller for hyperstep)."""
    if variant == "keras-decay":
        return keras.optimizers.Adam(1e-3, weight_decay=1e-4), None
    if variant == "keras-schedule":
        decay = keras.optimizers.schedules.ExponentialDecay(1e-3, 1000, 0.5)
        return keras.optimizers.Adam(decay), None
    if variant in ("hyperstep", "fused"):
        opt = hs.scheduled(
            keras.optimizers.Adam(),
            fused=variant == "fused",
            learning_rate=hs.schedules.exponential(1e-3, 0.5, every=1000),
            weight_decay=hs.schedules.linear(0.0, 1e-4, steps=10_000),
            beta_1="0.95 - 0.1 * min(step / 1000, 1)",
        )
        plateau = hs.ReduceOnPlateau(
            opt.hyperparameters["learning_rate"], monitor="loss", factor=0.9, patience=0
        )
        if COOLDOWNS:  # --cooldowns: a dormant hs.Cooldown on every hyperparameter
            for hyperparameter in opt.hyperparameters.values():
                hs.Cooldown(hyperparameter, steps=1000)
        return opt, plateau
    return keras.optimizers.Adam(1e-3), None


class _EpochTimer(keras.callbacks.Callback):
    """Times the epoch itself, without fit()'s per-call set-up."""

    elapsed = 0.0

    def on_epoch_begin(self, epoch: int, logs: object = None) -> None:
        self._start = TIMER()

    def on_epoch_end(self, epoch: int, logs: object = None) -> None:
        self.elapsed = TIMER() - self._start


class _Runner:
    """One variant: its model, optimizer and compiled step or fit loop."""

    def __init__(self, variant: str, data: tuple[np.ndarray, np.ndarray], use_fit: bool):
        self.variant = variant
        self.model = mlp()
        self.opt, self.plateau = _optimizer(variant)
        self.opt.build(self.model.trainable_variables)
        self.x, self.y = (tf.constant(a) for a in data)
        self.use_fit = use_fit
        self.loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        if use_fit:
            self.model.compile(self.opt, self.loss_fn)
        else:
            self.step = tf.function(self._step)
        self.t = 0

    def _step(self, x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = self.loss_fn(y, self.model(x, training=True))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.opt.apply(grads, self.model.trainable_variables)
        return loss

    def block(self, steps: int) -> float:
        """Run ``steps`` steps; return seconds per step."""
        if self.use_fit:
            n = steps * BATCH
            timer = _EpochTimer()
            history = self.model.fit(
                self.x[:n],
                self.y[:n],
                batch_size=BATCH,
                epochs=1,
                verbose=0,
                shuffle=False,
                callbacks=[timer],
            )
            elapsed = timer.elapsed
            loss = history.history["loss"][-1]
        else:
            start = TIMER()
            for _ in range(steps):
                if self.variant == "python-assign":
                    self.opt.learning_rate.assign(1e-3 * 0.5 ** (self.t / 1000))
                loss = self.step(self.x[:BATCH], self.y[:BATCH])
                self.t += 1
            loss = float(loss)
            elapsed = TIMER() - start
        if self.plateau is not None:
            self.plateau.update(loss)  # one controller update per block ("epoch")
        return elapsed / steps


def _optimized_size(graph: tf.Graph) -> int | str:
    """Number of ops TensorFlow runs per step: the traced graph after Grappler.

    Grappler folds constants and merges identical scalar computations (Keras's Adam computes
    ``beta_1 ** (t + 1)`` once per variable; with ``hs.scheduled`` they share one input and
    are merged). Uses TensorFlow's internal Grappler binding; "n/a" if it is unavailable.
    """
    try:
        from tensorflow.core.protobuf import config_pb2
        from tensorflow.python.framework import meta_graph
        from tensorflow.python.grappler import tf_optimizer
    except ImportError:  # pragma: no cover - internal modules moved
        return "n/a"
    meta = meta_graph.create_meta_graph_def(graph=graph)
    fetch = meta.collection_def["train_op"].node_list.value
    fetch.extend(op.name for op in graph.get_operations() if op.type.startswith("Assign"))
    fetch.extend(t.op.name for t in graph.outputs)
    return len(tf_optimizer.OptimizeGraph(config_pb2.ConfigProto(), meta).node)


def _measure(use_fit: bool, repeats: int, steps: int) -> dict[str, list[float]]:
    rng = np.random.default_rng(0)
    data = (
        rng.normal(size=(steps * BATCH, 784)).astype("float32"),
        rng.integers(0, 10, size=(steps * BATCH,)).astype("int32"),
    )
    runners = [_Runner(v, data, use_fit) for v in VARIANTS]
    for runner in runners:  # warm up: trace, build, first epoch
        runner.block(max(steps // 4, 5))
    if not use_fit:  # a load-independent view: how many ops each traced step has
        graphs = {
            r.variant: r.step.get_concrete_function(r.x[:BATCH], r.y[:BATCH]).graph for r in runners
        }
        traced = ", ".join(f"{k} {len(g.get_operations())}" for k, g in graphs.items())
        print(f"ops in the traced step: {traced}")
        optimized = ", ".join(f"{k} {_optimized_size(g)}" for k, g in graphs.items())
        print(f"ops after TensorFlow's graph optimizer (Grappler): {optimized}")
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for r in range(repeats):
        order = runners[r % len(runners) :] + runners[: r % len(runners)]
        for runner in order:
            times[runner.variant].append(runner.block(steps))
    return times


def _report(title: str, times: dict[str, list[float]]) -> bool:
    """Print the table; return whether hyperstep met the target.

    ``ratio`` is median(variant) / median(keras); ``paired`` is the median over repeats of
    variant / keras within the same repeat (the two blocks ran back to back), which cancels
    slow changes in the machine's load.
    """
    base = statistics.median(times["keras"])
    print(f"\n{title}")
    print(f"{'variant':<16}{'min ms':>9}{'median ms':>11}{'max ms':>9}{'ratio':>8}{'paired':>8}")
    paired = {}
    for variant, values in times.items():
        median = statistics.median(values)
        paired[variant] = statistics.median(
            v / k for v, k in zip(values, times["keras"], strict=True)
        )
        print(
            f"{variant:<16}{min(values) * 1e3:>9.3f}{median * 1e3:>11.3f}"
            f"{max(values) * 1e3:>9.3f}{median / base:>8.3f}{paired[variant]:>8.3f}"
        )
    ratio = statistics.median(times["hyperstep"]) / base
    met = ratio <= TARGET
    print(
        f"hyperstep / keras (Adam without weight decay): median ratio {ratio:.3f}, paired "
        f"{paired['hyperstep']:.3f} (target <= {TARGET}: {'met' if met else 'NOT met'})"
    )
    decay = statistics.median(times["keras-decay"])
    same = statistics.median(times["hyperstep"]) / decay
    same_paired = statistics.median(
        h / d for h, d in zip(times["hyperstep"], times["keras-decay"], strict=True)
    )
    print(
        f"hyperstep / keras-decay (Adam with a constant weight decay: the same formulas): "
        f"median ratio {same:.3f}, paired {same_paired:.3f} "
        f"(target <= {TARGET}: {'met' if same <= TARGET else 'NOT met'})"
    )
    fused = statistics.median(
        f / d for f, d in zip(times["fused"], times["keras-decay"], strict=True)
    )
    print(f"fused / keras-decay (fused=True, the same formulas): paired {fused:.3f}")
    for variant in ("hyperstep", "fused"):
        ratios = sorted(v / d for v, d in zip(times[variant], times["keras-decay"], strict=True))
        print(
            f"{variant} / keras-decay within each repeat: min {ratios[0]:.3f}, median "
            f"{statistics.median(ratios):.3f}, max {ratios[-1]:.3f}"
        )
    print(
        f"keras-decay / keras (what Keras's own constant weight decay costs): "
        f"{decay / base:.3f}, paired {paired['keras-decay']:.3f}"
    )
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument(
        "--cpu-time",
        action="store_true",
        help="one TensorFlow thread, timed by process CPU time (steadier on a shared machine)",
    )
    parser.add_argument(
        "--cooldowns",
        action="store_true",
        help="an hs.Cooldown (not started) on every hyperparameter of the hyperstep variants",
    )
    args = parser.parse_args()
    if args.cooldowns:
        global COOLDOWNS
        COOLDOWNS = True
    if args.cpu_time:
        global TIMER
        TIMER = time.process_time
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    start = time.perf_counter()
    timing = "process CPU time, 1 thread" if args.cpu_time else "wall time"
    print(f"TF {tf.__version__}, Keras {keras.__version__}, batch {BATCH}, MLP 784-256-256-10")
    print(f"timing: {timing}")
    _report("custom tf.function loop", _measure(False, args.repeats, args.steps))
    _report("model.fit", _measure(True, args.repeats, args.steps))
    print(f"\ntotal {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
