"""``hs.find_lr`` puts everything back, under one backend, run by ``test_lr_find_backends.py``.

``KERAS_BACKEND=torch python tests/backends/lr_find_restore_worker.py`` prints one line
``RESULT <json>``:

- ``wrappers``: for an ``hs.scheduled`` optimizer alone, inside ``LossScaleOptimizer``, inside
  ``hs.SkipNonFinite``, in a ``MultiOptimizer`` next to a plain Keras Adam, and a plain
  Adam under ``mixed_float16`` (``compile`` adds the ``LossScaleOptimizer``): which
  variables (every variable of the model, of each optimizer, the clock's and every
  hyperparameter's) changed bytes, which hyperparameter values and clock settings changed,
  which global random generators changed (Python's, NumPy's, Keras's, torch's,
  TensorFlow's operation seeds), and the learning rates the steps saw;
- ``seeded``: the weights of a seeded script (dropout, shuffled fit) with and without a
  range test first, as bytes' digests;
- ``unbuilt``: the same for a model without ``Input`` (built by the test, as fit builds);
- ``accumulation``: the learning rate of each batch and the rates of the finding with
  ``gradient_accumulation_steps=2``.

Importing this module (pytest's doctest collection does) runs nothing.
"""

from __future__ import annotations

import hashlib
import pickle
import random
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

BATCH, SAMPLES, STEPS = 8, 40, 12


def data() -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(7)
    x = rng.normal(size=(SAMPLES, 3)).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5]]) + 0.3).astype("float32")
    return x, y


def scheduled() -> Any:
    import keras

    import hyperstep as hs

    return hs.scheduled(
        keras.optimizers.AdamW(),
        learning_rate="1e-3 * 0.5 ** (step / 10)",
        weight_decay=0.01,
        groups=[hs.Group("head", match="*/head/*", learning_rate=4e-3)],
    )


def optimizer(kind: str) -> Any:
    import keras

    import hyperstep as hs

    if kind == "scheduled":
        return scheduled()
    if kind == "loss-scale":
        return keras.optimizers.LossScaleOptimizer(scheduled())
    if kind == "skip-non-finite":
        return hs.SkipNonFinite(scheduled())
    if kind == "multi":
        mapping = keras.optimizers.OptimizerMap(default_optimizer=keras.optimizers.Adam(2e-3))
        mapping[".*head.*"] = scheduled()
        return keras.optimizers.MultiOptimizer(mapping)
    return keras.optimizers.Adam(1e-3)  # "mixed": compile wraps it


def model(kind: str, dropout: float = 0.0, built: bool = True) -> Any:
    import keras

    layers = [
        keras.layers.Dense(4, activation="tanh", name="body"),
        keras.layers.BatchNormalization(name="norm"),
        keras.layers.Dropout(dropout),
        keras.layers.Dense(1, name="head", dtype="float32"),
    ]
    found = keras.Sequential(([keras.Input((3,))] if built else []) + layers)
    found.compile(optimizer=optimizer(kind), loss="mse")
    return found


def optimizers(root: Any) -> list[Any]:
    found, pending = [], [root]
    while pending:
        current = pending.pop(0)
        found.append(current)
        if hasattr(current, "inner_optimizer"):
            pending.append(current.inner_optimizer)
        if hasattr(current, "optimizers") and not hasattr(current, "hyperparameters"):
            pending.extend(current.optimizers)
    return found


def digest(value: Any) -> str:
    import numpy as np

    return hashlib.sha256(np.asarray(value).tobytes()).hexdigest()[:16]


def variables(built: Any) -> dict[str, str]:
    found = [*built.variables, *built.metrics_variables]
    for each in optimizers(built.optimizer):
        found.extend(each.variables)
        clock = getattr(each, "clock", None)
        if clock is not None:
            found.extend(clock.variables)
        for hyperparameter in getattr(each, "hyperparameters", {}).values():
            found.extend(hyperparameter.variables)
    return {f"{v.path}#{id(v)}": digest(v.numpy()) for v in found}


def settings(built: Any) -> dict[str, Any]:
    import keras

    found: dict[str, Any] = {}
    for index, each in enumerate(optimizers(built.optimizer)):
        clock = getattr(each, "clock", None)
        if clock is not None:
            found[f"{index}/steps_per_epoch"] = clock.steps_per_epoch
            found[f"{index}/follows_fit"] = clock.follows_fit
            found[f"{index}/step"] = int(keras.ops.convert_to_numpy(clock.step.value))
        for name, hyperparameter in getattr(each, "hyperparameters", {}).items():
            found[f"{index}/{name}"] = repr(float(keras.ops.convert_to_numpy(hyperparameter.value)))
        if not hasattr(each, "hyperparameters") and hasattr(each, "iterations"):
            found[f"{index}/iterations"] = int(keras.ops.convert_to_numpy(each.iterations))
    return found


def generators() -> dict[str, str]:
    """A digest of each global random generator's state."""
    import keras
    import numpy as np

    found = {
        "python": hashlib.sha256(pickle.dumps(random.getstate())).hexdigest()[:16],
        "numpy": hashlib.sha256(pickle.dumps(np.random.get_state())).hexdigest()[:16],
    }
    from keras.src.backend.common import global_state

    generator = global_state.get_global_attribute("global_seed_generator")
    found["keras"] = "none" if generator is None else digest(generator.state.numpy())
    backend = keras.backend.backend()
    if backend == "torch":
        import torch

        found["torch"] = digest(torch.get_rng_state().numpy())
    if backend == "tensorflow":
        from tensorflow.python.eager import context

        seeds = context.context()._rng
        found["tensorflow"] = "none" if seeds is None else repr(seeds.getstate())[-40:]
    return found


def changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def wrappers() -> dict[str, Any]:
    import keras

    import hyperstep as hs

    x, y = data()
    result = {}
    for kind in ("scheduled", "loss-scale", "skip-non-finite", "multi", "mixed"):
        keras.utils.set_random_seed(1)
        if kind == "mixed":
            keras.config.set_dtype_policy("mixed_float16")
        try:
            built = model(kind)
            built.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)  # 5 steps: a clock at 5
            seen = seen_rates(optimizers(built.optimizer)[-1])
            before = (variables(built), settings(built), generators())
            finding = hs.find_lr(
                built, x, y, batch_size=BATCH, steps=STEPS, callbacks=[seen], verbose=0
            )
            after = (variables(built), settings(built), generators())
        finally:
            keras.config.set_dtype_policy("float32")
        result[kind] = {
            "optimizer": type(built.optimizer).__name__,
            "variables": len(before[0]),
            "changed_variables": changed(before[0], after[0]),
            "changed_settings": changed(before[1], after[1]),
            "settings": before[1],
            "changed_generators": changed(before[2], after[2]),
            "generators": sorted(before[2]),
            "rates": finding.learning_rates.tolist(),
            "seen": seen.seen,
        }
    return result


def seen_rates(optimizer: Any) -> Any:
    """A callback recording ``optimizer.learning_rate`` at each batch's start (``.seen``)."""
    import keras

    class Seen(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[float] = []

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            self.model  # noqa: B018 (JAX: state synced before reading)
            self.seen.append(float(keras.ops.convert_to_numpy(optimizer.learning_rate)))

    return Seen()


def trained(with_test: bool, built: bool) -> str:
    import keras

    import hyperstep as hs

    x, y = data()
    keras.utils.set_random_seed(3)
    fresh = model("scheduled", dropout=0.3, built=built)
    if with_test:
        hs.find_lr(fresh, x, y, batch_size=BATCH, steps=STEPS, verbose=0)
    fresh.fit(x, y, batch_size=BATCH, epochs=2, shuffle=True, verbose=0)
    return digest(b"".join(w.tobytes() for w in fresh.get_weights()))


def accumulation() -> dict[str, Any]:
    import keras

    import hyperstep as hs

    x, y = data()
    result = {}
    for kind in ("keras", "scheduled"):
        if kind == "keras":
            chosen = keras.optimizers.SGD(0.01, gradient_accumulation_steps=2)
        else:
            chosen = hs.scheduled(keras.optimizers.SGD(gradient_accumulation_steps=2))
        built = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        built.compile(optimizer=chosen, loss="mse")
        built.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)  # 5 batches: one accumulated
        seen = seen_rates(chosen)
        before = variables(built)
        finding = hs.find_lr(
            built,
            x,
            y,
            batch_size=BATCH,
            steps=10,
            stop_factor=None,
            callbacks=[seen],
            verbose=0,
        )
        result[kind] = {
            "rates": finding.learning_rates.tolist(),
            "raw": len(finding.raw_losses),
            "seen": seen.seen,
            "changed_variables": changed(before, variables(built)),
        }
    return result


def main() -> None:
    from worker_io import report

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import keras

        result: dict[str, Any] = {"backend": keras.backend.backend()}
        result["wrappers"] = wrappers()
        result["seeded"] = [trained(False, True), trained(True, True)]
        result["unbuilt"] = [trained(False, False), trained(True, False)]
        result["accumulation"] = accumulation()
    report(result, caught)


if __name__ == "__main__":
    main()
