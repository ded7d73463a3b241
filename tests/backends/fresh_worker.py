"""Saved in one process, loaded in a fresh one that only imported hyperstep.

``python fresh_worker.py save DIR``: for every case (an optimizer on this backend), fit 3
steps, save the model as ``.keras``, ``.weights.h5``, a pickle and (TensorFlow) a
``tf.train.Checkpoint``, fit 3 more steps (the uninterrupted run) and keep its weights.

``python fresh_worker.py load DIR ORDER``: import Keras and hyperstep (``ORDER``:
``keras-first`` or ``hyperstep-first``) and nothing else of hyperstep; load every
``.keras`` file and pickle; only then build the optimizers anew for the weights files and
checkpoints; fit the same 3 steps from each and compare with the uninterrupted run, bitwise.
"""

from __future__ import annotations

import pickle
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

PHASE, DIR = sys.argv[1], Path(sys.argv[2])
ORDER = sys.argv[3] if len(sys.argv) > 3 else "keras-first"
if ORDER == "keras-first":
    import keras

    import hyperstep as hs
else:
    import hyperstep as hs  # noqa: I001 (the order under test)
    import keras
import fresh_user  # noqa: E402 (after the imports whose order is under test)
import numpy as np  # noqa: E402
from worker_io import report  # noqa: E402

BACKEND = keras.backend.backend()
STEPS = 3
SCHEDULE = "0.01 * 0.5 ** (step / 4)"
BUILTIN = sorted(
    name
    for name in dir(keras.optimizers)
    if isinstance(getattr(keras.optimizers, name), type)
    and issubclass(getattr(keras.optimizers, name), keras.optimizers.Optimizer)
    and name not in ("Optimizer", "LossScaleOptimizer", "MultiOptimizer")
)
NAMES = BUILTIN if BACKEND == "tensorflow" else ["Adam", "AdamW", "SGD"]
CASES = [*NAMES, "user", "user_custom_objects", "step"]
if BACKEND == "torch":
    CASES.append("AdamW_fused")
FORMATS = ["keras", "weights", "pickle", *(["checkpoint"] if BACKEND == "tensorflow" else [])]
CUSTOM = {"UnregisteredSignDescent": fresh_user.UnregisteredSignDescent}


def make_optimizer(case: str) -> Any:
    if case == "step":
        return hs.StepOptimizer("adam", learning_rate=SCHEDULE)
    if case == "user":
        return hs.scheduled(fresh_user.SignDescent(), learning_rate=SCHEDULE, shrink=0.75)
    if case == "user_custom_objects":
        return hs.scheduled(fresh_user.UnregisteredSignDescent(), learning_rate=SCHEDULE)
    if case == "AdamW_fused":
        return hs.scheduled(keras.optimizers.AdamW(), learning_rate=SCHEDULE, fused=True)
    extra = {"momentum": 0.9} if case == "SGD" else {}
    return hs.scheduled(getattr(keras.optimizers, case)(**extra), learning_rate=SCHEDULE)


def data(part: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.RandomState(0).normal(size=(8 * STEPS, 3)).astype("float32")
    y = x @ np.array([[1.0, -2.0], [0.5, 0.25], [-1.0, 3.0]], "float32")
    half = 4 * STEPS
    return x[part * half : (part + 1) * half], y[part * half : (part + 1) * half]


def fit(model: Any, part: int) -> None:
    x, y = data(part)
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)


def model_with(optimizer: Any) -> Any:
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer, "mse")
    return model


def weights(model: Any) -> np.ndarray:
    return np.concatenate([np.ravel(w) for w in model.get_weights()])


def checkpoint(model: Any) -> Any:
    import tensorflow as tf

    return tf.train.Checkpoint(model=model, optimizer=model.optimizer)


def save() -> dict[str, Any]:
    expected = {}
    for case in CASES:
        model = model_with(make_optimizer(case))
        fit(model, 0)
        model.optimizer.hyperparameters["learning_rate"].scale.assign(0.8)  # state to keep
        model.save(DIR / f"{case}.keras")
        model.save_weights(DIR / f"{case}.weights.h5")
        (DIR / f"{case}.pickle").write_bytes(pickle.dumps(model))
        if BACKEND == "tensorflow":
            checkpoint(model).write(str(DIR / f"{case}.ckpt"))
        fit(model, 1)
        expected[case] = weights(model)
        expected[f"{case}/step"] = np.array(int(model.optimizer.clock.step.numpy()))
    np.savez(DIR / "expected.npz", **expected)
    return {"cases": CASES}


def load() -> dict[str, Any]:
    loaded: dict[tuple[str, str], Any] = {}
    for case in CASES:  # before any other hyperstep call
        custom = CUSTOM if case == "user_custom_objects" else None
        loaded[case, "keras"] = keras.models.load_model(
            DIR / f"{case}.keras", custom_objects=custom
        )
        with keras.saving.custom_object_scope(custom or {}):
            loaded[case, "pickle"] = pickle.loads((DIR / f"{case}.pickle").read_bytes())
    for case in CASES:
        model = model_with(make_optimizer(case))
        model.optimizer.build(model.trainable_variables)
        model.load_weights(DIR / f"{case}.weights.h5")
        loaded[case, "weights"] = model
        if BACKEND == "tensorflow":
            model = model_with(make_optimizer(case))
            model.optimizer.build(model.trainable_variables)
            checkpoint(model).read(str(DIR / f"{case}.ckpt")).assert_existing_objects_matched()
            loaded[case, "checkpoint"] = model
    expected = np.load(DIR / "expected.npz")
    results: dict[str, Any] = {}
    for (case, form), model in loaded.items():
        fresh = make_optimizer(case)
        optimizer = model.optimizer
        fit(model, 1)
        results[f"{case}/{form}"] = {
            "equal": bool(np.array_equal(weights(model), expected[case])),
            "step": int(optimizer.clock.step.numpy()),
            "expected_step": int(expected[f"{case}/step"]),
            "same_class": type(optimizer) is type(fresh),
            "class": type(optimizer).__name__,
            "fused": getattr(optimizer, "_hs_state", None) is not None
            and bool(optimizer._hs_state.fused),
        }
    return {"results": results, "order": ORDER}


if __name__ == "__main__":
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = save() if PHASE == "save" else load()
    report({"backend": BACKEND, **result}, caught)
