"""``update_rules.py --jax``: on JAX, Keras's AdamW (jitted) against ``optax.adamw`` (jitted).

XLA compiles Keras's update into fused loops, so ``hs.scheduled`` needs no fused path there:
this prints per-update time of ``keras.optimizers.AdamW.stateless_apply``, the same wrapped by
``hs.scheduled`` with the learning rate on a schedule, and ``optax.adamw``, each inside
``jax.jit``, on 8 x 1024x1024 + biases (8,396,800 float32 parameters),
interleaved; and the ratios to optax.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import keras
import numpy as np
import optax

import hyperstep as hs

SHAPES = [s for _ in range(8) for s in ((1024, 1024), (1024,))]


def _keras(optimizer: Any, params: list[Any], grads: list[Any]) -> Callable[[], Any]:
    variables = [keras.Variable(p) for p in params]
    optimizer.build(variables)
    state = {"w": [v.value for v in variables], "o": [v.value for v in optimizer.variables]}

    @jax.jit
    def step(w: Any, o: Any) -> Any:
        return optimizer.stateless_apply(o, grads, w)  # (new w, new o)

    def run() -> Any:
        state["w"], state["o"] = step(state["w"], state["o"])
        return state["w"][-1]

    return run


def _optax(params: list[Any], grads: list[Any]) -> Callable[[], Any]:
    tx = optax.adamw(1e-3, weight_decay=0.01)
    state = {"w": list(params), "o": tx.init(list(params))}

    @jax.jit
    def step(w: Any, o: Any) -> Any:
        updates, o = tx.update(grads, o, w)
        return optax.apply_updates(w, updates), o

    def run() -> Any:
        state["w"], state["o"] = step(state["w"], state["o"])
        return state["w"][-1]

    return run


def main(repeats: int, steps: int) -> None:
    rng = np.random.default_rng(0)
    params = [jnp.asarray(rng.standard_normal(s, dtype=np.float32)) for s in SHAPES]
    grads = [jnp.asarray(1e-2 * rng.standard_normal(s, dtype=np.float32)) for s in SHAPES]
    variants = {
        "keras": _keras(keras.optimizers.AdamW(1e-3, weight_decay=0.01), params, grads),
        "hs_scheduled": _keras(
            hs.scheduled(
                keras.optimizers.AdamW(weight_decay=0.01), learning_rate="cosine(1e-3, steps=1e5)"
            ),
            params,
            grads,
        ),
        "optax": _optax(params, grads),
    }
    print(f"jax {jax.__version__}, Keras {keras.__version__} on {keras.backend.backend()}")
    print(f"AdamW, 8,396,800 parameters; {steps} updates per timing, {repeats} repeats (CPU)\n")
    for run in variants.values():
        run().block_until_ready()
    times: dict[str, list[float]] = {n: [] for n in variants}
    for repeat in range(repeats):
        for n in list(variants) if repeat % 2 == 0 else list(variants)[::-1]:
            start = time.perf_counter()
            for _ in range(steps):
                out = variants[n]()
            out.block_until_ready()
            times[n].append((time.perf_counter() - start) / steps)
    for n, ts in times.items():
        ms = [1e3 * t for t in ts]
        print(f"{n:12}  min {min(ms):7.2f}  median {statistics.median(ms):7.2f} ms")
    for n in ("keras", "hs_scheduled"):
        ratio = statistics.median(times[n]) / statistics.median(times["optax"])
        print(f"ratio {n} / optax: median {ratio:.3f}")
