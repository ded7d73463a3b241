"""Evaluate 1,000,000 steps of a schedule in one call: hyperstep vs Keras eager vs optax.

Three figures, each measured in this process with the repeats interleaved
(ours, peer, ours, peer, ...), reported as min / median / max:

1. ``warmup(cosine)`` and ``one_cycle`` over 1,000,000 steps in one vectorized call
   (target: <= 50 ms each), eagerly and inside ``tf.function(jit_compile=True)``;
2. per value, against Keras ``CosineDecay(..., warmup_steps=...)`` called eagerly once per
   step, the only way Keras can evaluate it (target: >= 1,000x faster per value);
3. against optax ``jax.jit(jax.vmap(schedule))`` on the same million steps, compiled once
   before timing (target: within 2x, compiled vs compiled; the eager ratio is printed too).

Every contender gets the steps as an int32 array built once in its own framework (a
``tf.Tensor`` for hyperstep, a ``jax.Array`` for optax) and returns a NumPy-readable array;
converting a NumPy int64 array to a tensor adds about 5-10 ms per million steps.

Run: ``python benchmarks/schedule_eval.py [--steps N] [--repeats R] [--keras-calls C]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import jax
import jax.numpy as jnp
import keras
import numpy as np
import optax
import tensorflow as tf

import hyperstep as hs

PEAK = 1e-3
TARGET_MS = 50.0
TARGET_KERAS = 1000.0
TARGET_OPTAX = 2.0


def seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def spread(times: list[float], scale: float = 1e3, unit: str = "ms") -> str:
    values = [t * scale for t in times]
    return (
        f"min {min(values):9.3f} {unit}  median {statistics.median(values):9.3f} {unit}  "
        f"max {max(values):9.3f} {unit}"
    )


def compiled(schedule: hs.schedules.Schedule) -> Callable[[tf.Tensor], tf.Tensor]:
    """Return ``schedule`` as an XLA-compiled ``tf.function`` (the peer of ``jax.jit``)."""

    def evaluate(steps: tf.Tensor) -> tf.Tensor:
        return schedule(steps)

    return tf.function(evaluate, jit_compile=True)


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--keras-calls", type=int, default=2000, help="eager calls, in all")
    args = parser.parse_args()
    n, repeats = args.steps, args.repeats
    warm = n // 20
    print(
        f"{n:,} steps, {repeats} interleaved repeats; keras {keras.__version__}, "
        f"jax {jax.__version__} on {jax.devices()[0].platform}, optax {optax.__version__}"
    )

    steps_np = np.arange(n, dtype=np.int64)
    steps_jax = jnp.arange(n, dtype=jnp.int32)
    steps_tf = tf.constant(steps_np, dtype=tf.int32)  # like optax's input: int32, built once

    cases = {
        "warmup(cosine)": (
            hs.schedules.warmup(hs.schedules.cosine(PEAK, steps=n - warm), steps=warm),
            optax.warmup_cosine_decay_schedule(0.0, PEAK, warmup_steps=warm, decay_steps=n),
        ),
        "one_cycle": (
            hs.schedules.one_cycle(PEAK, steps=n),
            optax.cosine_onecycle_schedule(n, PEAK, pct_start=0.3),
        ),
    }
    keras_schedule = keras.optimizers.schedules.CosineDecay(
        0.0, decay_steps=n - warm, alpha=0.0, warmup_target=PEAK, warmup_steps=warm
    )
    keras_steps = np.linspace(0, n - 1, args.keras_calls).astype(np.int64)
    chunks = np.array_split(keras_steps, repeats)
    met = []
    for name, (ours, peer) in cases.items():
        peer_fn = jax.jit(jax.vmap(peer))
        ours_xla = compiled(ours)
        fns = {
            "hyperstep, one eager call": lambda s=ours: np.asarray(s(steps_tf)),
            "hyperstep, tf.function(jit_compile)": lambda f=ours_xla: f(steps_tf).numpy(),
            "optax jit(vmap)": lambda f=peer_fn: np.asarray(f(steps_jax).block_until_ready()),
        }
        outputs = {label: fn() for label, fn in fns.items()}  # warm up, compile once
        values = list(outputs.values())
        gap = max(float(np.max(np.abs(v - values[-1]))) for v in values[:-1]) / PEAK
        with_keras = name == "warmup(cosine)"
        if with_keras:
            float(keras_schedule(0))
        times: dict[str, list[float]] = {label: [] for label in fns}
        t_keras = []
        for r in range(repeats):
            for label, fn in fns.items():
                times[label].append(seconds(fn))
            if with_keras:
                chunk = chunks[r]
                elapsed = seconds(lambda c=chunk: [float(keras_schedule(int(s))) for s in c])
                t_keras.append(elapsed / len(chunk))
        print(f"\n== {name}: max |hyperstep - optax| = {gap:.2e} x peak")
        for label, t in times.items():
            print(f"  {label:36s}: {spread(t)}")
        eager, xla, jitted = (statistics.median(t) for t in times.values())
        for label, median in (("eager", eager), ("compiled", xla)):
            ok = median * 1e3 <= TARGET_MS
            met.append(ok)
            print(
                f"  hyperstep {label} <= {TARGET_MS:.0f} ms (median {median * 1e3:.1f} ms): "
                f"{verdict(ok)}"
            )
        ok = xla / jitted <= TARGET_OPTAX
        met.append(ok)
        print(
            f"  compiled hyperstep / optax jit(vmap) = {xla / jitted:.2f} (medians); within "
            f"{TARGET_OPTAX:.0f}x: {verdict(ok)}   [eager hyperstep / optax = "
            f"{eager / jitted:.2f}]"
        )
        if with_keras:
            per_value = eager / n
            keras_median = statistics.median(t_keras)
            print(f"  {'keras CosineDecay, eager, per call':36s}: {spread(t_keras, 1e6, 'us')}")
            speedup = keras_median / per_value
            ok = speedup >= TARGET_KERAS
            met.append(ok)
            print(
                f"  per value: eager hyperstep {per_value * 1e9:.1f} ns vs keras "
                f"{keras_median * 1e6:.0f} us = {speedup:,.0f}x faster; "
                f">= {TARGET_KERAS:,.0f}x: {verdict(ok)}"
            )
    print(f"\nall targets met: {all(met)}")


if __name__ == "__main__":
    main()
