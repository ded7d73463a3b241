"""Per-step overhead of ``hs.scheduled`` on Keras's TensorFlow, JAX and PyTorch backends.

MLP 784-256-256-10, batch 128, float32, CPU, each backend's natural training step:

* TensorFlow: a ``tf.function`` step (``GradientTape`` + ``optimizer.apply``);
* JAX: a ``jax.jit`` stateless step (``model.stateless_call`` + ``optimizer.stateless_apply``),
  its state donated (``donate_argnums=0``) as Keras's ``fit`` does;
* torch: an eager step (``loss.backward()`` + ``optimizer.apply``).

Variants, measured interleaved inside one process per backend (each repeat runs every
variant for one block of steps, in a rotating order):

* ``keras``      ``keras.optimizers.AdamW`` with a Keras ``ExponentialDecay`` learning rate
                 (constant ``beta_1`` and ``weight_decay``): the baseline;
* ``hyperstep``  ``hs.scheduled(AdamW(), ...)`` with the learning rate, ``beta_1`` and
                 ``weight_decay`` all on schedules (Keras's own update: bitwise Keras);
* ``fused``      (TensorFlow only) the same with ``fused=True``: TensorFlow's one-pass
                 ``ResourceApplyAdam`` and weight decay in one multiply;
* ``optax``      (JAX only) the same three schedules through
                 ``optax.inject_hyperparams(optax.adamw)``, in the same jitted step;
* ``keras+22``   (JAX only) the baseline with 22 unused scalar variables added to the
                 optimizer: as many extra arrays as ``hs.scheduled(AdamW)`` passes through
                 the jitted step (Keras's own unused ``learning_rate`` variable, the
                 clock's step, and scale, override, cooldown start and form of each of the
                 5 hyperparameters), to show what passing them costs by itself;
* ``keras+21``   (TensorFlow only) the baseline with 21 scalar variables added to the
                 optimizer and read in the step (``loss + 0 * sum``): as many as
                 ``hs.scheduled(AdamW)``'s step captures besides Keras's (the clock's step,
                 and scale, override, cooldown start and form of each hyperparameter), to
                 show what capturing and reading them costs by itself.

Each backend runs on one thread and steps are timed in process CPU time (steadier than wall
time when other processes share the machine). Prints min/median/max milliseconds per step,
the ratio of medians to ``keras`` and the median of ratios paired within a repeat; the
target for ``hyperstep / keras`` is <= 1.02.
On a loaded machine the spread between blocks can exceed the overhead: read ``paired``.
``--processes N`` runs each backend in N fresh processes, one after the other, and pools their
blocks (the per-process paired ratios are printed too).

Usage: python benchmarks/backends.py [--repeats N] [--steps N] [--backends tensorflow,jax,torch]
       [--processes N]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from _models import mlp  # benchmarks/_models.py (the script's folder is on sys.path)

BATCH = 128
TARGET = 1.02


# ---- one backend, in its own process -------------------------------------------------------
def _optimizer(variant: str) -> Any:
    import keras

    import hyperstep as hs

    if variant in ("hyperstep", "fused"):
        return hs.scheduled(
            keras.optimizers.AdamW(),
            fused=variant == "fused",
            learning_rate=hs.schedules.exponential(1e-3, 0.5, every=1000),
            beta_1="0.95 - 0.1 * min(step / 1000, 1)",
            weight_decay=hs.schedules.linear(0.0, 1e-4, steps=10_000),
        )
    decay = keras.optimizers.schedules.ExponentialDecay(1e-3, 1000, 0.5)
    return keras.optimizers.AdamW(decay, weight_decay=1e-4)


def _step_tensorflow(model: Any, optimizer: Any, x: Any, y: Any, read: Any = ()) -> Any:
    import keras
    import tensorflow as tf

    optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step() -> Any:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        if read:  # keras+21: scalar state read in the step, as hyperstep's is
            loss += 0.0 * tf.add_n([variable.value for variable in read])
        return loss

    def run(n: int) -> None:
        for _ in range(n):
            loss = step()
        float(loss)

    return run


def _step_jax(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    import jax
    import keras

    optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def compute(trainable: Any, non_trainable: Any) -> Any:
        logits, non_trainable = model.stateless_call(trainable, non_trainable, x)
        return loss_fn(y, logits), non_trainable

    grad_fn = jax.value_and_grad(compute, has_aux=True)

    @functools.partial(jax.jit, donate_argnums=0)
    def step(state: Any) -> Any:
        trainable, non_trainable, optimizer_variables = state
        (loss, non_trainable), grads = grad_fn(trainable, non_trainable)
        trainable, optimizer_variables = optimizer.stateless_apply(
            optimizer_variables, grads, trainable
        )
        return loss, (trainable, non_trainable, optimizer_variables)

    state = (
        [v.value for v in model.trainable_variables],
        [v.value for v in model.non_trainable_variables],
        [v.value for v in optimizer.variables],
    )

    def run(n: int) -> None:
        nonlocal state
        for _ in range(n):
            loss, state = step(state)
        loss.block_until_ready()

    return run


def _step_optax(model: Any, x: Any, y: Any) -> Any:
    import jax
    import jax.numpy as jnp
    import keras
    import optax

    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    tx = optax.inject_hyperparams(optax.adamw)(
        learning_rate=optax.exponential_decay(1e-3, 1000, 0.5),
        b1=lambda count: 0.95 - 0.1 * jnp.minimum(count / 1000, 1.0),
        weight_decay=lambda count: 1e-4 * jnp.minimum(count / 10_000, 1.0),
    )

    def compute(trainable: Any, non_trainable: Any) -> Any:
        logits, non_trainable = model.stateless_call(trainable, non_trainable, x)
        return loss_fn(y, logits), non_trainable

    grad_fn = jax.value_and_grad(compute, has_aux=True)

    @functools.partial(jax.jit, donate_argnums=0)
    def step(state: Any) -> Any:
        trainable, non_trainable, opt_state = state
        (loss, non_trainable), grads = grad_fn(trainable, non_trainable)
        updates, opt_state = tx.update(grads, opt_state, trainable)
        return loss, (optax.apply_updates(trainable, updates), non_trainable, opt_state)

    trainable = [v.value for v in model.trainable_variables]
    state = (trainable, [v.value for v in model.non_trainable_variables], tx.init(trainable))

    def run(n: int) -> None:
        nonlocal state
        for _ in range(n):
            loss, state = step(state)
        loss.block_until_ready()

    return run


def _step_torch(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    import keras
    import torch

    optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def run(n: int) -> None:
        for _ in range(n):
            loss = loss_fn(yt, model(xt))
            model.zero_grad()
            loss.backward()
            grads = [v.value.grad for v in model.trainable_variables]
            with torch.no_grad():
                optimizer.apply(grads, model.trainable_variables)
        float(loss.detach())

    return run


def _padded(count: int) -> tuple[Any, Any]:
    """A model and the baseline optimizer with ``count`` scalar variables added: on JAX they
    pass through the jitted step like hyperstep's clock and hyperparameter state (on
    TensorFlow the step reads them)."""
    model, optimizer = mlp(), _optimizer("keras")
    optimizer.build(model.trainable_variables)
    for index in range(count):
        optimizer.add_variable((), initializer="zeros", name=f"unused_{index}")
    return model, optimizer


def _one_thread(backend: str) -> None:
    """Run the backend on one thread: process CPU time is then steady on a shared machine."""
    if backend == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    elif backend == "torch":
        import torch

        torch.set_num_threads(1)


def child(repeats: int, steps: int) -> dict[str, Any]:
    """Time every variant on the backend of this process; return ``{variant: [ms/step]}``."""
    import keras
    import numpy as np

    backend = keras.backend.backend()
    _one_thread(backend)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCH, 784)).astype("float32")
    y = rng.integers(0, 10, size=(BATCH,)).astype("int32")
    make = {"tensorflow": _step_tensorflow, "jax": _step_jax, "torch": _step_torch}[backend]
    runs = {v: make(mlp(), _optimizer(v), x, y) for v in ("keras", "hyperstep")}
    if backend == "tensorflow":
        runs["fused"] = make(mlp(), _optimizer("fused"), x, y)
        model, optimizer = _padded(21)
        runs["keras+21"] = make(model, optimizer, x, y, optimizer.variables[-21:])
    if backend == "jax":
        runs["optax"] = _step_optax(mlp(), x, y)
        runs["keras+22"] = make(*_padded(22), x, y)
    for run in runs.values():  # compile and warm up
        run(max(steps // 4, 5))
    names = list(runs)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.process_time()
            runs[name](steps)
            times[name].append((time.process_time() - start) / steps * 1e3)
    return times


# ---- the parent: one child per backend, then the table --------------------------------------
def _paired(values: list[float], base: list[float]) -> float:
    """The median of the ratios of blocks run in the same repeat."""
    return statistics.median(v / b for v, b in zip(values, base, strict=True))


def _report(backend: str, times: dict[str, list[float]]) -> list[str]:
    base = times["keras"]
    lines = [f"{backend}:"]
    for name, values in times.items():
        median = statistics.median(values)
        line = (
            f"  {name:10s} min {min(values):7.3f}  median {median:7.3f}  max {max(values):7.3f}"
            " ms/step"
        )
        if name != "keras":
            paired = _paired(values, base)
            line += f"   x{median / statistics.median(base):.3f} (paired x{paired:.3f})"
        lines.append(line)
    hyper = times["hyperstep"]
    paired = _paired(hyper, base)
    extra = statistics.median(h - b for h, b in zip(hyper, base, strict=True))
    verdict = "met" if paired <= TARGET else "NOT met"
    lines.append(
        f"  hyperstep / keras: paired x{paired:.3f} ({extra:+.3f} ms/step), "
        f"target <= {TARGET}: {verdict}"
    )
    if "optax" in times:
        ratio = _paired(hyper, times["optax"])
        lines.append(f"  hyperstep / optax inject_hyperparams: paired x{ratio:.3f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=60)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--backends", default="tensorflow,jax,torch")
    parser.add_argument(
        "--processes", type=int, default=1, help="fresh processes per backend (pooled)"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(args.repeats, args.steps)))
        return
    print(__doc__.split("\n\n")[0])
    print(f"batch {BATCH}, {args.repeats} repeats x {args.steps} steps per variant\n")
    for backend in args.backends.split(","):
        started = time.perf_counter()
        runs = [_run_child(backend, args) for _ in range(args.processes)]
        found = [times for times in runs if times is not None]
        if not found:
            continue
        times = {name: [t for run in found for t in run[name]] for name in found[0]}
        print("\n".join(_report(backend, times)))
        if len(found) > 1:
            per = [_paired(run["hyperstep"], run["keras"]) for run in found]
            print(f"  per process, paired: {' '.join(f'x{p:.3f}' for p in per)} (pooled above)")
        print(f"  ({time.perf_counter() - started:.0f} s including start-up)")


def _run_child(backend: str, args: argparse.Namespace) -> dict[str, list[float]] | None:
    """Run one child process for ``backend``; return its times, or None (printing why)."""
    env = {
        **os.environ,
        "KERAS_BACKEND": backend,
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "XLA_FLAGS": "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1",
        "OMP_NUM_THREADS": "1",
    }
    command = [sys.executable, __file__, "--child", f"--repeats={args.repeats}"]
    done = subprocess.run(
        [*command, f"--steps={args.steps}"], env=env, capture_output=True, text=True, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    if done.returncode != 0 or not lines:
        print(f"{backend}: failed\n{done.stderr[-3000:]}")
        return None
    times: dict[str, list[float]] = json.loads(lines[-1].removeprefix("RESULT "))
    return times


if __name__ == "__main__":
    main()
