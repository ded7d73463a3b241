"""StepOptimizer with the Adam rule against keras.optimizers.Adam: time per update.

CPU (default): 10M parameters in several variables, with and without ``jit_compile``,
interleaved repeats; prints min/median/max step times, the ratio ours / Keras (target
<= 1.05) and the achieved bytes/s against the machine's memory bandwidth measured with a
numpy copy of a large array.

GPU (``--gpu``): 100M parameters on the first GPU; prints the GPU's name and the achieved
fraction of its peak memory bandwidth (target >= 70%), the peak taken from a table of known
GPUs or, for an unknown one, measured by a large device-to-device copy.

An Adam update reads the gradient, the variable and two slots and writes the variable and
two slots: at least 7 * 4 bytes per float32 parameter. Bytes/s below counts that minimum.

Each repeat times both optimizers back to back, in alternating order. Besides min/median/max,
each line shows the page faults per update (on CPU, freshly faulted temporaries are a large
part of an update's cost, and vary from process to process with the allocator's state), and
the ratio line adds the median of the per-repeat ratios (paired: both halves of a pair saw
about the same load). ``--processes N`` runs the whole comparison in N fresh processes (each
starts with its own allocator state, which moves both optimizers' times by up to +-15% on a
busy machine) and ends with the median of each ratio over them.

``--schedule-free``: hyperstep's schedule-free AdamW rule (``hs.rules.ScheduleFreeAdamWRule``)
against ``keras.optimizers.AdamW`` (target <= 1.1), with Keras's own
``keras.optimizers.ScheduleFreeAdamW`` timed in the same repeats for comparison. AdamW reads
g, w, m, v and writes w, m, v, plus a read and a write of w for the decay (9 passes);
schedule-free AdamW reads g, y, z, v, x and writes y, z, v, x (9 passes); with
``memory_efficient=True`` (no ``x`` slot) and Keras's ScheduleFreeAdamW, g, y, z, v and y, z,
v (7). ``schedule_free`` is the default ``StepOptimizer(rule, ...)``: without XLA, the second
moment and ``z`` in one ``ResourceApplyAdam`` pass, which also reads and writes its scratch
first moment (11 passes, in fewer operations); under XLA the rule's operations.
``schedule_free_ops`` (``fused=False``) is the rule's operations everywhere. Bytes/s counts
those passes; under XLA the passes of its loops (printed with the XLA rows).

``--torch-fused``: Keras's torch backend (set before Keras is imported): AdamW on 8,396,800
parameters (8 x 1024x1024 + biases) by plain Keras, ``hs.scheduled`` by default and with
``fused=True`` (PyTorch's fused kernel), and ``torch.optim.AdamW(fused=True)`` /
``(foreach=True)``, interleaved (``benchmarks/_torch_updates.py``). Targets: ``fused=True``
within 1.2x of ``torch.optim.AdamW(fused=True)``, at least 8x faster than Keras's AdamW. On
JAX nothing is needed: XLA already fuses Keras's update into one pass (the ``jit_compile``
rows here show the same on TensorFlow).

``--tf-fused``: TensorFlow, the same 8,396,800 parameters, in a ``tf.function`` (no XLA):
plain Keras against ``hs.scheduled(..., fused=True)`` with the learning rate on a schedule,
for Adam, AdamW, SGD(momentum=0.9) and RMSprop(momentum=0.9) (``ResourceApplyAdam``,
``ResourceApplyKerasMomentum``, ``ResourceApplyRMSProp``). Target: at most 0.8x Keras's
time for each.

``--jax``: Keras's JAX backend: jitted Keras AdamW, the same under ``hs.scheduled`` and
``optax.adamw`` (``benchmarks/_jax_updates.py``): XLA already fuses the update, so JAX needs
no ``fused`` path.

Usage: python benchmarks/update_rules.py [--gpu] [--repeats N] [--steps N] [--params N]
       [--processes N] [--schedule-free] [--torch-fused] [--tf-fused] [--jax]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
if __name__ == "__main__" and "--torch-fused" in sys.argv:
    os.environ["KERAS_BACKEND"] = "torch"  # before Keras is imported; TensorFlow is not
    from _torch_updates import main as torch_main  # benchmarks/ (the script's folder)

    parsed = argparse.ArgumentParser(description="AdamW on Keras's torch backend vs PyTorch")
    parsed.add_argument("--torch-fused", action="store_true")
    parsed.add_argument("--repeats", type=int, default=7)
    parsed.add_argument("--steps", type=int, default=5)
    torch_args = parsed.parse_args()
    torch_main(torch_args.repeats, torch_args.steps)
    sys.exit(0)
if __name__ == "__main__" and "--jax" in sys.argv:
    os.environ["KERAS_BACKEND"] = "jax"  # before Keras is imported
    from _jax_updates import main as jax_main  # benchmarks/ (the script's folder)

    parsed = argparse.ArgumentParser(description="AdamW on Keras's JAX backend vs optax")
    parsed.add_argument("--jax", action="store_true")
    parsed.add_argument("--repeats", type=int, default=7)
    parsed.add_argument("--steps", type=int, default=5)
    jax_args = parsed.parse_args()
    jax_main(jax_args.repeats, jax_args.steps)
    sys.exit(0)
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import keras
import numpy as np
import tensorflow as tf

import hyperstep as hs

BYTES_PER_PARAMETER = 7 * 4  # Adam: read g, w, m, v; write w, m, v (float32)

#: peak memory bandwidth (bytes/s) of known GPUs, matched by substring of the device name
PEAK_BANDWIDTH = [
    ("H200", 4.8e12),
    ("H100 NVL", 3.9e12),
    ("H100 PCIe", 2.0e12),
    ("H100", 3.35e12),  # SXM
    ("GH200", 4.0e12),
    ("B200", 8.0e12),
    ("A100-SXM4-80GB", 2.039e12),
    ("A100 80GB PCIe", 1.935e12),
    ("A100", 1.555e12),  # 40GB
    ("L40S", 0.864e12),
    ("L40", 0.864e12),
    ("L4", 0.3e12),
    ("A10G", 0.6e12),
    ("A10", 0.6e12),
    ("V100", 0.9e12),
    ("T4", 0.32e12),
    ("RTX 4090", 1.008e12),
    ("RTX 3090", 0.936e12),
]


def shapes_for(parameters: int) -> list[tuple[int, ...]]:
    """Five variables of unequal sizes (40%, 30%, 20%, 9.99%, the rest): ``parameters`` in all."""
    sizes = [int(parameters * f) for f in (0.4, 0.3, 0.2, 0.0999)]
    sizes.append(parameters - sum(sizes))
    return [(size // 1000, 1000) if size % 1000 == 0 else (size,) for size in sizes]


def make_variant(name: str, shapes: list[tuple[int, ...]], jit_compile: bool) -> tuple:  # type: ignore[type-arg]
    # created by ops under the caller's tf.device, so they live on that device (a tf.constant
    # made from numpy would stay in host memory and be copied to the GPU at every step)
    variables = [
        keras.Variable(tf.random.stateless_normal(s, seed=[0, i])) for i, s in enumerate(shapes)
    ]
    grads = [tf.random.stateless_normal(s, seed=[1, i]) * 1e-2 for i, s in enumerate(shapes)]
    if name == "keras":
        optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    elif name == "hyperstep":
        optimizer = hs.StepOptimizer(hs.rules.AdamRule(), learning_rate=1e-3)
    elif name == "keras_adamw":
        optimizer = keras.optimizers.AdamW(learning_rate=2.5e-3, weight_decay=0.08)
    elif name.startswith("schedule_free"):
        rule = hs.rules.ScheduleFreeAdamWRule(memory_efficient=name.endswith("efficient"))
        optimizer = hs.StepOptimizer(
            rule,
            learning_rate=2.5e-3,
            weight_decay=0.08,
            warmup_steps=20,
            fused=False if name.endswith("ops") else None,  # None: the default
        )
    else:  # keras_schedule_free
        optimizer = keras.optimizers.ScheduleFreeAdamW(
            learning_rate=2.5e-3, weight_decay=0.08, warmup_steps=20
        )
    optimizer.build(variables)

    @tf.function(jit_compile=jit_compile)
    def step() -> None:
        optimizer.apply(grads, variables)

    step()  # trace and compile
    sync(variables)
    return step, variables


def sync(variables: list) -> float:  # type: ignore[type-arg]
    """Wait for queued updates by reading one element back to the host."""
    return float(tf.reshape(variables[-1].value, [-1])[0].numpy())


def page_faults() -> int:
    """Page faults of this process so far (minor: a first touch of fresh memory)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def time_steps(step, variables, steps: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """Seconds and page faults per update, over ``steps`` updates."""
    sync(variables)
    faults = page_faults()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync(variables)
    return (time.perf_counter() - start) / steps, (page_faults() - faults) / steps


def host_bandwidth(size_bytes: int = 512 * 2**20, repeats: int = 5) -> float:
    """Bytes/s of a numpy copy (read + write) of a ``size_bytes`` array, best of ``repeats``."""
    src = np.ones(size_bytes // 4, dtype="float32")
    dst = np.empty_like(src)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - start)
    return 2 * size_bytes / best


def device_bandwidth(size_bytes: int = 2 * 2**30, repeats: int = 10) -> float:
    """Bytes/s of a device-to-device copy (read + write) of ``size_bytes``, best of ``repeats``."""
    source = tf.Variable(tf.ones([size_bytes // 4], "float32"))
    target = tf.Variable(tf.zeros([size_bytes // 4], "float32"))

    @tf.function(jit_compile=True)
    def copy() -> None:
        target.assign(source)

    copy()
    best = float("inf")
    for _ in range(repeats):
        _ = float(target[0].numpy())
        start = time.perf_counter()
        for _ in range(5):
            copy()
        _ = float(target[0].numpy())
        best = min(best, (time.perf_counter() - start) / 5)
    return 2 * size_bytes / best


def gpu_name() -> str:
    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        sys.exit("--gpu: TensorFlow sees no GPU (tf.config.list_physical_devices('GPU') is empty).")
    details = tf.config.experimental.get_device_details(gpus[0])
    return str(details.get("device_name", gpus[0].name))


def peak_for(name: str) -> tuple[float | None, str]:
    for key, peak in PEAK_BANDWIDTH:
        if key in name:
            return peak, f"table entry {key!r}"
    return None, "not in the table"


def summarize(times: list[float]) -> str:
    ms = [1e3 * t for t in times]
    return f"min {min(ms):8.2f}  median {statistics.median(ms):8.2f}  max {max(ms):8.2f} ms"


RATIO_LINE = re.compile(
    r"jit_compile=(\w+)\s+ratio hyperstep / keras: median ([\d.]+).*min ([\d.]+), paired ([\d.]+)"
)


def run_processes(args: argparse.Namespace) -> None:
    """Run the comparison in ``args.processes`` fresh processes; print the median ratios."""
    child = [sys.executable, __file__, "--repeats", str(args.repeats)]
    for flag, value in (("--params", args.params), ("--steps", args.steps)):
        if value is not None:
            child += [flag, str(value)]
    if args.gpu:
        child.append("--gpu")
    ratios: dict[str, list[tuple[float, float, float]]] = {}
    for index in range(args.processes):
        output = subprocess.run(child, capture_output=True, text=True, check=True).stdout
        for line in output.splitlines():
            if index == 0 and line and not line.startswith("jit_compile"):
                print(line)
            if line.startswith("GPU: hyperstep reaches"):
                print(f"process {index + 1}: {line}")
            match = RATIO_LINE.match(line)
            if match:
                jit, *values = match.groups()
                ratios.setdefault(jit, []).append(tuple(float(v) for v in values))  # type: ignore[arg-type]
                print(f"process {index + 1}: {line}")
    print()
    for jit, rows in ratios.items():
        median, fastest, paired = (statistics.median(column) for column in zip(*rows, strict=True))
        print(
            f"jit_compile={jit:5}  over {len(rows)} processes, median of the ratios: median "
            f"{median:.3f} (target <= 1.05: {'ok' if median <= 1.05 else 'MISSED'}), "
            f"min {fastest:.3f}, paired {paired:.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", action="store_true", help="100M parameters on the first GPU")
    parser.add_argument("--params", type=int, default=None, help="parameters (10M; 100M --gpu)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=None, help="updates per timing (5; 100 --gpu)")
    parser.add_argument("--processes", type=int, default=1, help="fresh processes to run it in")
    parser.add_argument(
        "--schedule-free", action="store_true", help="schedule-free AdamW vs Keras AdamW"
    )
    parser.add_argument(
        "--tf-fused", action="store_true", help="TensorFlow fused=True kernels vs Keras"
    )
    args = parser.parse_args()
    if args.tf_fused:
        tf_fused(args)
        return
    if args.schedule_free:
        schedule_free(args)
        return
    if args.processes > 1:
        run_processes(args)
        return
    parameters = args.params or (100_000_000 if args.gpu else 10_000_000)
    steps = args.steps or (100 if args.gpu else 5)
    shapes = shapes_for(parameters)
    device = "/GPU:0" if args.gpu else "/CPU:0"
    print(f"TensorFlow {tf.__version__}, Keras {keras.__version__}, hyperstep {hs.__version__}")
    if args.gpu:
        name = gpu_name()
        peak, source = peak_for(name)
        measured = device_bandwidth()
        shown = "unknown" if peak is None else f"{peak / 1e9:.0f} GB/s"
        print(
            f"GPU: {name}; peak bandwidth {shown} ({source}); "
            f"device copy measured {measured / 1e9:.0f} GB/s (read + write)"
        )
        reference, reference_label = (peak, "of peak") if peak else (measured, "of measured copy")
    else:
        reference = host_bandwidth()
        reference_label = "of numpy copy"
        print(f"CPU: numpy copy bandwidth {reference / 1e9:.1f} GB/s (read + write)")
    print(
        f"{parameters:,} parameters in {len(shapes)} variables {shapes}; "
        f"{steps} updates per timing, {args.repeats} interleaved repeats\n"
    )
    fractions: dict[bool, float] = {}
    with tf.device(device):
        for jit_compile in (False, True):
            variants = {n: make_variant(n, shapes, jit_compile) for n in ("keras", "hyperstep")}
            times: dict[str, list[float]] = {n: [] for n in variants}
            faults: dict[str, list[float]] = {n: [] for n in variants}
            for repeat in range(args.repeats):
                order = list(variants) if repeat % 2 == 0 else list(variants)[::-1]
                for n in order:
                    step, variables = variants[n]
                    seconds, faulted = time_steps(step, variables, steps)
                    times[n].append(seconds)
                    faults[n].append(faulted)
            for n, ts in times.items():
                rate = parameters * BYTES_PER_PARAMETER / statistics.median(ts)
                if n == "hyperstep":
                    fractions[jit_compile] = rate / reference
                print(
                    f"jit_compile={jit_compile!s:5}  {n:9}  {summarize(ts)}  "
                    f"{rate / 1e9:7.1f} GB/s = {100 * rate / reference:5.1f}% {reference_label}"
                    f"  {statistics.median(faults[n]):6.0f} page faults/update"
                )
            ratio = statistics.median(times["hyperstep"]) / statistics.median(times["keras"])
            fastest = min(times["hyperstep"]) / min(times["keras"])
            paired = statistics.median(
                ours / theirs
                for ours, theirs in zip(times["hyperstep"], times["keras"], strict=True)
            )
            print(
                f"jit_compile={jit_compile!s:5}  ratio hyperstep / keras: median {ratio:.3f}"
                f" (target <= 1.05: {'ok' if ratio <= 1.05 else 'MISSED'}), min {fastest:.3f},"
                f" paired {paired:.3f} (min and paired: less sensitive to other load)\n"
            )
            del variants
    if args.gpu:
        jit_compile = max(fractions, key=lambda k: fractions[k])
        best = fractions[jit_compile]
        print(
            f"GPU: hyperstep reaches {100 * best:.1f}% {reference_label} "
            f"(jit_compile={jit_compile}); target >= 70%: {'ok' if best >= 0.7 else 'MISSED'}"
        )


TF_FUSED = {
    "Adam": lambda: keras.optimizers.Adam(1e-3),
    "AdamW": lambda: keras.optimizers.AdamW(1e-3, weight_decay=0.01),
    "SGD": lambda: keras.optimizers.SGD(1e-3, momentum=0.9),
    "RMSprop": lambda: keras.optimizers.RMSprop(1e-3, momentum=0.9),
}


def tf_fused(args: argparse.Namespace) -> None:
    """Plain Keras vs ``hs.scheduled(..., fused=True)`` per optimizer on TensorFlow (CPU)."""
    shapes = [s for _ in range(8) for s in ((1024, 1024), (1024,))]
    parameters = sum(int(np.prod(s)) for s in shapes)
    steps = args.steps or 5
    print(f"TensorFlow {tf.__version__}, Keras {keras.__version__}, hyperstep {hs.__version__}")
    print(
        f"{parameters:,} parameters (8 x 1024x1024 + biases); tf.function without XLA; "
        f"{steps} updates per timing, {args.repeats} interleaved repeats (CPU)\n"
    )

    def variant(optimizer: keras.optimizers.Optimizer) -> tuple:  # type: ignore[type-arg]
        variables = [
            keras.Variable(tf.random.stateless_normal(s, seed=[0, i])) for i, s in enumerate(shapes)
        ]
        grads = [tf.random.stateless_normal(s, seed=[1, i]) * 1e-2 for i, s in enumerate(shapes)]
        optimizer.build(variables)

        @tf.function
        def step() -> None:
            optimizer.apply(grads, variables)

        step()
        return step, variables

    with tf.device("/CPU:0"):
        for name, make in TF_FUSED.items():
            variants = {
                "keras": variant(make()),
                "fused": variant(
                    hs.scheduled(make(), learning_rate="cosine(1e-3, steps=100000)", fused=True)
                ),
            }
            times: dict[str, list[float]] = {n: [] for n in variants}
            for repeat in range(args.repeats):
                order = list(variants) if repeat % 2 == 0 else list(variants)[::-1]
                for n in order:
                    times[n].append(time_steps(*variants[n], steps)[0])
            for n, ts in times.items():
                print(f"{name:8} {n:6} {summarize(ts)}")
            ratio = statistics.median(times["fused"]) / statistics.median(times["keras"])
            paired = statistics.median(
                a / b for a, b in zip(times["fused"], times["keras"], strict=True)
            )
            print(
                f"{name:8} ratio fused / keras: median {ratio:.3f} (target <= 0.8: "
                f"{'ok' if ratio <= 0.8 else 'MISSED'}), paired {paired:.3f}\n"
            )
            del variants


#: Full-size passes per update (see the module docstring); under XLA, the passes of its fused
#: loops, one loop per array written (``experimental_get_compiler_ir``'s optimized HLO).
PASSES = {
    False: {"keras_adamw": 9, "schedule_free": 11, "schedule_free_ops": 9},
    True: {"keras_adamw": 10, "schedule_free": 14, "schedule_free_ops": 14},
}
XLA_FLOOR = (
    "XLA on CPU writes each updated array in its own loop, which reads every array that "
    "value needs: AdamW\n10 passes (m: g, m; v: g, v; w: w, m, v), schedule-free AdamW 14 "
    "(v: g, v; z: z, g, v, y; x: x, z;\ny: z, x), 13 without x: a floor of 1.3-1.4 x "
    "AdamW's time for the reference's rule."
)


def schedule_free(args: argparse.Namespace) -> None:
    """hs.rules.ScheduleFreeAdamWRule and keras.optimizers.ScheduleFreeAdamW vs keras AdamW."""
    parameters = args.params or 10_000_000
    steps = args.steps or 5
    shapes = shapes_for(parameters)
    print(f"TensorFlow {tf.__version__}, Keras {keras.__version__}, hyperstep {hs.__version__}")
    print(
        f"{parameters:,} parameters in {len(shapes)} variables; {steps} updates per timing, "
        f"{args.repeats} interleaved repeats (CPU)\n"
    )
    names = (
        "keras_adamw",
        "schedule_free",
        "schedule_free_ops",
        "schedule_free_efficient",
        "keras_schedule_free",
    )
    with tf.device("/CPU:0"):
        for jit_compile in (False, True):
            variants = {n: make_variant(n, shapes, jit_compile) for n in names}
            times: dict[str, list[float]] = {n: [] for n in variants}
            for repeat in range(args.repeats):
                order = list(variants) if repeat % 2 == 0 else list(variants)[::-1]
                for n in order:
                    times[n].append(time_steps(*variants[n], steps)[0])
            for n, ts in times.items():
                passes = PASSES[jit_compile].get(n, 7)
                rate = parameters * passes * 4 / statistics.median(ts)
                print(
                    f"jit_compile={jit_compile!s:5}  {n:19}  {summarize(ts)}  "
                    f"{rate / 1e9:6.1f} GB/s"
                )
            for n in names[1:]:
                ratio = statistics.median(times[n]) / statistics.median(times["keras_adamw"])
                paired = statistics.median(
                    a / b for a, b in zip(times[n], times["keras_adamw"], strict=True)
                )
                verdict = (
                    f" (target <= 1.1: {'ok' if ratio <= 1.1 else 'MISSED'})"
                    if n == "schedule_free"
                    else ""
                )
                fastest = min(times[n]) / min(times["keras_adamw"])
                print(
                    f"jit_compile={jit_compile!s:5}  ratio {n} / keras AdamW: median "
                    f"{ratio:.3f}{verdict}, min {fastest:.3f}, paired {paired:.3f}"
                )
            if jit_compile:
                print(XLA_FLOOR)
            print()
            del variants


if __name__ == "__main__":
    main()
