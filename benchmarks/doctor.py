"""Time a full ``hs.doctor`` diagnosis of ResNet50 against one plain training step, per backend.

ResNet50 (``weights=None``, 10 classes), batch 2 at 224x224 (``--size``), compiled with SGD
and sparse categorical cross-entropy. "One training step" is ``model.train_on_batch`` on the
same batch after a warm-up (the compiled ``fit()`` step, without tracing or compiling); the
first, cold step is printed for context. A first diagnosis warms up the backend too (JAX
compiles each primitive it runs eagerly once per shape), then doctor runs and training steps
are interleaved, ``--repeats`` times each; the ratio is given per pair (min/median/max) and
of the medians.

Target: <= 5x one training step, on each backend.

Run: ``python benchmarks/doctor.py --backend jax [--repeats 3] [--quick]`` (``--backend``
defaults to ``KERAS_BACKEND``, else TensorFlow; ``--quick``: one repeat). At small sizes
(``--size 64``) the step is so short that the diagnosis's Python overhead dominates.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def summary(times: list[float], unit: str = "s") -> str:
    return (
        f"min {min(times):.2f} {unit}  median {statistics.median(times):.2f} {unit}  "
        f"max {max(times):.2f} {unit}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["tensorflow", "jax", "torch"], default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--quick", action="store_true", help="one repeat")
    args = parser.parse_args()
    if args.quick:
        args.repeats = 1
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend

    import keras
    import numpy as np

    import hyperstep as hs

    keras.utils.set_random_seed(0)
    model = keras.applications.ResNet50(
        weights=None, input_shape=(args.size, args.size, 3), classes=10
    )
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
    x = np.random.default_rng(0).normal(size=(2, args.size, args.size, 3)).astype("float32")
    y = np.array([1, 2], "int32")

    start = time.perf_counter()
    model.train_on_batch(x, y)
    cold = time.perf_counter() - start
    model.train_on_batch(x, y)  # warm-up
    start = time.perf_counter()
    diagnosis = hs.doctor(model, (x, y))
    cold_doctor = time.perf_counter() - start

    doctor_times, step_times = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        diagnosis = hs.doctor(model, (x, y))
        doctor_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        model.train_on_batch(x, y)
        step_times.append(time.perf_counter() - start)

    ratios = [d / s for d, s in zip(doctor_times, step_times, strict=True)]
    ratio = statistics.median(doctor_times) / statistics.median(step_times)
    print(
        f"{keras.backend.backend()}: ResNet50 weights=None, batch 2 at {args.size}x{args.size}, "
        f"{args.repeats} repeats"
    )
    print(f"  findings: {len(diagnosis.findings)} ({diagnosis.variables} variables examined)")
    print(f"  hs.doctor           {summary(doctor_times)}")
    print(f"  train step (warm)   {summary(step_times)}")
    print(f"  first train step (tracing, compiling): {cold:.2f} s")
    print(f"  first hs.doctor (warming the backend up): {cold_doctor:.2f} s")
    print(f"  ratio doctor / warm step, per pair: {summary(ratios, 'x')}")
    print(f"  ratio doctor / warm step (medians): {ratio:.2f}x")
    print(f"  target <= 5x one training step: {'met' if ratio <= 5 else 'NOT met'} ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
