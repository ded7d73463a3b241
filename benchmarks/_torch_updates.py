"""``update_rules.py --torch-fused``: AdamW updates on Keras's torch backend against PyTorch's.

Times one update of 8 x 1024x1024 weights and 8 x 1024 biases (8,396,800 float32
parameters) by:

* ``keras``: ``keras.optimizers.AdamW().apply`` (Keras's torch optimizer, ``torch._foreach_*``);
* ``hs_default``: ``hs.scheduled(AdamW(), learning_rate=<cosine>)``, Keras's own code;
* ``hs_fused``: the same with ``fused=True`` (``torch._fused_adamw_``, see
  :mod:`hyperstep.backends.torch`);
* ``step_fused``: ``hs.StepOptimizer(hs.rules.AdamWRule(), ..., fused=True)``;
* ``torch_fused``, ``torch_foreach``: ``torch.optim.AdamW(fused=True)`` / ``(foreach=True)``.

Each repeat times every variant back to back, the order reversed every other repeat; prints
min/median/max per update and the ratios (median, min, paired median). Targets: ``hs_fused``
within 1.2x of ``torch_fused``; ``keras`` at least 8x ``hs_fused``. CPU only.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
import torch

import hyperstep as hs

LAYERS, WIDTH = 8, 1024


def _tensors(seed: int, scale: float = 1.0) -> list[torch.Tensor]:
    rng = np.random.default_rng(seed)
    shapes = [s for _ in range(LAYERS) for s in ((WIDTH, WIDTH), (WIDTH,))]
    return [torch.from_numpy(scale * rng.standard_normal(s, dtype=np.float32)) for s in shapes]


def _variants() -> dict[str, Callable[[], None]]:
    init, grads = _tensors(0), _tensors(1, 1e-2)
    variants: dict[str, Callable[[], None]] = {}

    def keras_variant(make: Callable[[], Any]) -> Callable[[], None]:
        variables = [keras.Variable(t.clone()) for t in init]
        optimizer = make()
        optimizer.build(variables)
        return lambda: optimizer.apply(grads, variables)

    schedule = "cosine(1e-3, steps=100000)"
    variants["keras"] = keras_variant(lambda: keras.optimizers.AdamW(1e-3, weight_decay=0.01))
    for name, fused in (("hs_default", False), ("hs_fused", True)):
        variants[name] = keras_variant(
            lambda fused=fused: hs.scheduled(
                keras.optimizers.AdamW(weight_decay=0.01), learning_rate=schedule, fused=fused
            )
        )
    variants["step_fused"] = keras_variant(
        lambda: hs.StepOptimizer(
            hs.rules.AdamWRule(), learning_rate=schedule, weight_decay=0.01, fused=True
        )
    )
    for name, kind in (("torch_fused", "fused"), ("torch_foreach", "foreach")):
        params = [torch.nn.Parameter(t.clone()) for t in init]
        for p, g in zip(params, grads, strict=True):
            p.grad = g
        optimizer = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01, **{kind: True})
        variants[name] = optimizer.step
    return variants


def _time(step: Callable[[], None], steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


def _summary(times: list[float]) -> str:
    ms = [1e3 * t for t in times]
    return f"min {min(ms):8.2f}  median {statistics.median(ms):8.2f}  max {max(ms):8.2f} ms"


def _ratio(times: dict[str, list[float]], a: str, b: str) -> tuple[float, float, float]:
    median = statistics.median(times[a]) / statistics.median(times[b])
    fastest = min(times[a]) / min(times[b])
    paired = statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))
    return median, fastest, paired


def main(repeats: int, steps: int) -> None:
    parameters = LAYERS * (WIDTH * WIDTH + WIDTH)
    print(
        f"torch {torch.__version__} ({torch.get_num_threads()} threads), Keras "
        f"{keras.__version__} on {keras.backend.backend()}, hyperstep {hs.__version__}"
    )
    print(
        f"AdamW, {parameters:,} parameters ({LAYERS} x {WIDTH}x{WIDTH} + biases); {steps} "
        f"updates per timing, {repeats} interleaved repeats (CPU)\n"
    )
    variants = _variants()
    for step in variants.values():  # warm up: slots, tables, allocator
        _time(step, 2)
    times: dict[str, list[float]] = {name: [] for name in variants}
    for repeat in range(repeats):
        order = list(variants) if repeat % 2 == 0 else list(variants)[::-1]
        for name in order:
            times[name].append(_time(variants[name], steps))
    for name, found in times.items():
        print(f"{name:13}  {_summary(found)}")
    print()
    targets = {("hs_fused", "torch_fused"): 1.2}
    for a, b in (
        ("hs_fused", "torch_fused"),
        ("hs_fused", "torch_foreach"),
        ("step_fused", "torch_fused"),
        ("hs_default", "keras"),
        ("keras", "hs_fused"),
        ("keras", "torch_fused"),
    ):
        median, fastest, paired = _ratio(times, a, b)
        verdict = ""
        if (a, b) in targets:
            ok = median <= targets[(a, b)]
            verdict = f" (target <= {targets[(a, b)]}: {'ok' if ok else 'MISSED'})"
        if (a, b) == ("keras", "hs_fused"):
            verdict = f" (target >= 8: {'ok' if median >= 8 else 'MISSED'})"
        print(
            f"ratio {a} / {b}: median {median:.3f}{verdict}, min {fastest:.3f}, paired {paired:.3f}"
        )


# ---- overhead.py --torch-fit ------------------------------------------------------------------
FIT_UNITS = (2048, 2048, 768)  # 784-2048-2048-768-10: 7,385,354 parameters
FIT_BATCH = 32
FIT_STEPS, FIT_SKIP = 12, 2  # steps per fit call; the first ones of each call are not timed
_clock = time.perf_counter  # or time.process_time (--cpu-time)


class _StepTimes(keras.callbacks.Callback):
    """The end time of every batch of a ``fit`` call (``model.fit``'s whole step: data,
    forward, backward, update, callbacks)."""

    def __init__(self) -> None:
        super().__init__()
        self.ends: list[float] = []

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        self.ends.append(_clock())


def _fit_variants() -> dict[str, Callable[[], list[float]]]:
    """Each variant: one call runs ``FIT_STEPS`` training steps and returns the durations of
    the steps after the first ``FIT_SKIP`` (the end-to-end time between consecutive steps)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((FIT_BATCH * FIT_STEPS, 784), dtype=np.float32)
    y = rng.integers(0, 10, FIT_BATCH * FIT_STEPS)
    variants: dict[str, Callable[[], list[float]]] = {}

    def keras_model(optimizer: Any) -> Callable[[], list[float]]:
        keras.utils.set_random_seed(0)
        layers: list[Any] = [keras.Input((784,))]
        layers += [keras.layers.Dense(units, activation="relu") for units in FIT_UNITS]
        model = keras.Sequential([*layers, keras.layers.Dense(10)])
        loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        model.compile(optimizer=optimizer, loss=loss)

        def run() -> list[float]:
            timer = _StepTimes()
            model.fit(
                x, y, batch_size=FIT_BATCH, epochs=1, verbose=0, shuffle=False, callbacks=[timer]
            )
            ends = timer.ends[FIT_SKIP - 1 :]
            return [b - a for a, b in itertools.pairwise(ends)]

        return run

    variants["keras"] = keras_model(keras.optimizers.AdamW(1e-3, weight_decay=0.01))
    variants["hs_fused"] = keras_model(
        hs.scheduled(
            keras.optimizers.AdamW(weight_decay=0.01),
            learning_rate="cosine(1e-3, steps=100000)",
            fused=True,
        )
    )
    torch.manual_seed(0)
    sizes = (784, *FIT_UNITS)
    modules: list[torch.nn.Module] = []
    for n_in, n_out in itertools.pairwise(sizes):
        modules += [torch.nn.Linear(n_in, n_out), torch.nn.ReLU()]
    net = torch.nn.Sequential(*modules, torch.nn.Linear(sizes[-1], 10))
    optimizer = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.01, fused=True)
    batches = [
        (torch.from_numpy(x[i : i + FIT_BATCH]), torch.from_numpy(y[i : i + FIT_BATCH]))
        for i in range(0, len(x), FIT_BATCH)
    ]

    def torch_loop() -> list[float]:
        ends = []
        for xb, yb in batches:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(net(xb), yb).backward()
            optimizer.step()
            ends.append(_clock())
        return [b - a for a, b in itertools.pairwise(ends[FIT_SKIP - 1 :])]

    variants["torch_fused"] = torch_loop
    return variants


def _spread(values: list[float], unit: float = 1.0, digits: int = 2) -> str:
    found = sorted(v * unit for v in values)
    quartiles = (
        statistics.quantiles(found, n=4, method="inclusive") if len(found) > 1 else found * 3
    )
    return (
        f"min {found[0]:.{digits}f}  q1 {quartiles[0]:.{digits}f}  median "
        f"{statistics.median(found):.{digits}f}  q3 {quartiles[2]:.{digits}f}  max "
        f"{found[-1]:.{digits}f}"
    )


def fit_main(repeats: int | None, seconds: float, threads: int, cpu_time: bool = False) -> None:
    """``model.fit`` steps on the torch backend: Keras AdamW, ``fused=True``, plain PyTorch.

    Each repeat runs every variant once (a ``FIT_STEPS``-step fit, its first ``FIT_SKIP``
    steps not timed), in an order rotated every repeat, and keeps each variant's median step
    time; ratios are taken within each repeat (paired), so load that changes between
    repeats cancels out. Repeats run until ``seconds`` have passed (at least 5), or exactly
    ``repeats`` when given. ``cpu_time``: time the process's CPU time instead of wall time
    (with one thread: what a step costs, whatever else runs on the machine).
    """
    global _clock
    _clock = time.process_time if cpu_time else time.perf_counter
    torch.set_num_threads(threads)
    parameters = sum(a * b + b for a, b in zip((784, *FIT_UNITS), (*FIT_UNITS, 10), strict=True))
    print(
        f"torch {torch.__version__} ({torch.get_num_threads()} threads), Keras "
        f"{keras.__version__} on {keras.backend.backend()}, hyperstep {hs.__version__}"
    )
    budget = f"{repeats} repeats" if repeats else f"repeats for {seconds:.0f} s"
    print(
        f"MLP 784-{'-'.join(map(str, FIT_UNITS))}-10 ({parameters:,} parameters), batch "
        f"{FIT_BATCH}, AdamW (PyTorch: a plain loop with torch.optim.AdamW(fused=True)); "
        f"{FIT_STEPS}-step runs, the first {FIT_SKIP} steps of each not timed, {budget}, "
        f"variants interleaved (CPU; {'process CPU' if cpu_time else 'wall'} time)\n"
    )
    variants = _fit_variants()
    for _ in range(2):  # warm up: build, slots, tables, the allocator
        for run in variants.values():
            run()
    names = list(variants)
    medians: dict[str, list[float]] = {name: [] for name in names}
    steps: dict[str, list[float]] = {name: [] for name in names}
    start = time.perf_counter()
    repeat = 0
    while (repeats and repeat < repeats) or (
        not repeats and (repeat < 5 or time.perf_counter() - start < seconds)
    ):
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            found = variants[name]()
            steps[name] += found
            medians[name].append(statistics.median(found))
        repeat += 1
    print(f"{repeat} repeats in {time.perf_counter() - start:.0f} s; ms per step:")
    for name in names:
        print(f"  {name:11}  per-repeat medians: {_spread(medians[name], 1e3)}")
        print(f"  {'':11}  all {len(steps[name])} steps: {_spread(steps[name], 1e3)}")
    print()
    for a, b, target in (("keras", "hs_fused", 2.0), ("hs_fused", "torch_fused", None)):
        paired = [x / y for x, y in zip(medians[a], medians[b], strict=True)]
        overall = statistics.median(steps[a]) / statistics.median(steps[b])
        verdict = ""
        if target is not None:
            met = statistics.median(paired) >= target
            verdict = f" (target >= {target}: {'ok' if met else 'MISSED'})"
        print(f"ratio {a} / {b}: paired {_spread(paired, digits=3)}{verdict}")
        print(f"  {'':>{len(a) + len(b) + 3}}  of all steps' medians {overall:.3f}")
