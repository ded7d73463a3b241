"""Time a full ``hs.doctor`` diagnosis of ResNet50 against one plain training step.

ResNet50 (``weights=None``, 10 classes), batch 2 at 224x224, compiled with SGD and sparse
categorical cross-entropy. "One training step" is ``model.train_on_batch`` on the same
batch after a warm-up (the traced ``fit()`` step, without tracing); the first, cold step
(tracing included) is printed for context. Doctor runs and training steps are interleaved,
``--repeats`` times each, and the median is compared.

Targets: a diagnosis in <= 10 s, and <= 5x one training step.

Run: ``python benchmarks/doctor.py [--repeats 3]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np

import hyperstep as hs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--size", type=int, default=224)
    args = parser.parse_args()

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

    doctor_times, step_times = [], []
    diagnosis = None
    for _ in range(args.repeats):
        start = time.perf_counter()
        diagnosis = hs.doctor(model, (x, y))
        doctor_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        model.train_on_batch(x, y)
        step_times.append(time.perf_counter() - start)

    def summary(times: list[float]) -> str:
        return (
            f"min {min(times):.2f} s  median {statistics.median(times):.2f} s  "
            f"max {max(times):.2f} s"
        )

    doctor_median = statistics.median(doctor_times)
    step_median = statistics.median(step_times)
    ratio = doctor_median / step_median
    print(f"ResNet50 weights=None, batch 2 at {args.size}x{args.size}, {args.repeats} repeats")
    print(
        f"  findings: {len(diagnosis.findings) if diagnosis else '?'} "
        f"({diagnosis.variables if diagnosis else '?'} variables examined)"
    )
    print(f"  hs.doctor           {summary(doctor_times)}")
    print(f"  train step (warm)   {summary(step_times)}")
    print(f"  train step (cold, first call with tracing): {cold:.2f} s")
    print(f"  ratio doctor / warm step (medians): {ratio:.2f}x")
    print(f"  ratio doctor / cold step: {doctor_median / cold:.2f}x")
    print(
        f"  target <= 10 s: {'met' if doctor_median <= 10 else 'NOT met'} ({doctor_median:.2f} s)"
    )
    print(f"  target <= 5x one training step: {'met' if ratio <= 5 else 'NOT met'} ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
