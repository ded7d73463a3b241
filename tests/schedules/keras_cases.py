"""Random arguments for Keras's six built-in schedules, and the steps to compare them at.

Shared by ``test_keras_bitwise.py`` (TensorFlow, in process) and ``keras_bitwise_worker.py``
(JAX and torch, each in its own process), so every backend checks the same grid.
"""

from __future__ import annotations

import random
from typing import Any


def cases(seed: int = 30, repeats: int = 3) -> list[tuple[str, dict[str, Any], list[int]]]:
    """``(Keras class name, its arguments, steps)``: steps 0..3x the horizon and every
    boundary +-1."""
    rng = random.Random(seed)
    found: list[tuple[str, dict[str, Any], list[int]]] = []

    def lr() -> float:
        return 10 ** rng.uniform(-5, 0)

    def steps_of(horizon: int, boundaries: list[int]) -> list[int]:
        grid = set(range(3 * horizon + 1))
        grid |= {b + d for b in boundaries for d in (-1, 0, 1) if b + d >= 0}
        return sorted(grid)

    for _ in range(repeats):
        ds = rng.choice([rng.randint(1, 40), rng.uniform(1.5, 40.0)])
        for staircase in (False, True):
            rate = rng.choice([rng.uniform(0.05, 0.99), rng.uniform(1.01, 1.5)])
            found.append(
                (
                    "ExponentialDecay",
                    {"initial_learning_rate": lr(), "decay_steps": ds, "decay_rate": rate,
                     "staircase": staircase},
                    steps_of(int(ds) * 3 + 1, [int(ds) * k for k in range(1, 4)]),
                )
            )  # fmt: skip
            found.append(
                (
                    "InverseTimeDecay",
                    {"initial_learning_rate": lr(), "decay_steps": ds,
                     "decay_rate": rng.uniform(0.01, 2.0), "staircase": staircase},
                    steps_of(int(ds) * 3 + 1, [int(ds) * k for k in range(1, 4)]),
                )
            )  # fmt: skip
        d = rng.randint(2, 60)
        for cycle in (False, True):
            found.append(
                (
                    "PolynomialDecay",
                    {"initial_learning_rate": lr(), "decay_steps": d,
                     "end_learning_rate": rng.choice([0.0001, lr() * 0.01]),
                     "power": rng.choice([1.0, rng.uniform(0.2, 3.0)]), "cycle": cycle},
                    steps_of(d, [d, 2 * d]),
                )
            )  # fmt: skip
        lr0 = lr()
        found.append(
            (
                "CosineDecay",
                {"initial_learning_rate": lr0, "decay_steps": d, "alpha": rng.uniform(0, 0.5)},
                steps_of(d, [d]),
            )
        )
        w = rng.randint(1, 30)
        found.append(
            (
                "CosineDecay",
                {"initial_learning_rate": rng.choice([0.0, lr0 * 0.1]), "decay_steps": d,
                 "alpha": rng.uniform(0, 0.5), "warmup_target": lr(), "warmup_steps": w},
                steps_of(w + d, [w, w + d]),
            )
        )  # fmt: skip
        f = rng.randint(2, 20)
        t_mul = rng.choice([1.0, 2.0, rng.uniform(1.1, 3.0)])
        starts = [
            round(f * (t_mul**i - 1) / (t_mul - 1)) if t_mul != 1 else f * i for i in (1, 2, 3)
        ]
        found.append(
            (
                "CosineDecayRestarts",
                {"initial_learning_rate": lr(), "first_decay_steps": f, "t_mul": t_mul,
                 "m_mul": rng.uniform(0.3, 1.0), "alpha": rng.uniform(0, 0.3)},
                steps_of(starts[-1], starts),
            )
        )  # fmt: skip
        b = sorted(rng.sample(range(1, 60), 3))
        found.append(
            (
                "PiecewiseConstantDecay",
                {"boundaries": b, "values": [lr() for _ in range(4)]},
                steps_of(b[-1], b),
            )
        )
    return found


def _thin(steps: list[int], keep: int) -> list[int]:
    """About ``keep`` of ``steps``: the ends, the boundary neighbourhoods' and evenly spaced."""
    if len(steps) <= keep:
        return steps
    stride = max(1, len(steps) // keep)
    return sorted(set(steps[::stride]) | {steps[0], steps[-1]})


def compare(
    keras: Any, hyperstep: Any, trace: Any, repeats: int = 3, against_eager: bool = False
) -> dict[str, Any]:
    """Compare Keras's schedule with ``from_keras`` of it, one scalar int step at a time
    (the optimizer's way), eagerly and inside ``trace(fn)``: per case, the steps whose
    float32 bits differ, eager-to-eager and traced-to-traced (and with ``against_eager``,
    ours traced to Keras's eager: ``"traced_vs_eager"``).

    On JAX, Keras's ``ops.cond`` (CosineDecayRestarts, CosineDecay with warmup) traces and
    compiles its branches at every eager call (about 0.4 s): those cases are checked
    eagerly at about 12 steps each, and at every step traced."""
    import numpy as np

    jax = keras.backend.backend() == "jax"
    dtype = "int32" if jax else "int64"
    report: dict[str, Any] = {"cases": 0, "steps": 0, "eager": [], "traced": [], "kinds": []}
    report["traced_vs_eager"] = []
    for name, kwargs, all_steps in cases(repeats=repeats):
        slow = jax and (name == "CosineDecayRestarts" or "warmup_target" in kwargs)
        k = getattr(keras.optimizers.schedules, name)(**kwargs)
        ours = hyperstep.schedules.from_keras(k)
        report["kinds"].append(type(ours).__name__)
        k_traced, ours_traced = trace(k.__call__), trace(ours.__call__)
        modes = {"eager": (k.__call__, ours.__call__), "traced": (k_traced, ours_traced)}
        if against_eager:
            modes["traced_vs_eager"] = (k.__call__ if ours_traced else None, ours_traced)
        for mode, (kf, of) in modes.items():
            if kf is None:
                continue
            bad = []
            steps = _thin(all_steps, 12) if slow and mode == "eager" else all_steps
            for t in steps:
                x = keras.ops.convert_to_tensor(t, dtype)
                a = np.asarray(keras.ops.convert_to_numpy(kf(x)), np.float32)
                b = np.asarray(keras.ops.convert_to_numpy(of(x)), np.float32)
                if a.view(np.int32) != b.view(np.int32):
                    bad.append([t, float(a), float(b)])
            if bad:
                report[mode].append({"case": f"{name}({kwargs})", "first": bad[:3], "n": len(bad)})
        report["cases"] += 1
        report["steps"] += len(all_steps)
    return report
