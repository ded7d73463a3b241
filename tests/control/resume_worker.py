"""The save/load matrix across fresh processes (run by test_resume_matrix.py): each state
(a plateau, a cooldown started and one not started, groups, SWA and EMA averages) saved as
``.keras``, ``save_weights`` and (TensorFlow) ``tf.train.Checkpoint`` in one process, loaded
in another that builds only what a user's program would, trained on and compared with the
uninterrupted run, bitwise.

``python resume_worker.py save DIR STATE...``: for each state, fit part 0 (3 steps), change
the state, save in every format, go on (part 1: the uninterrupted run) and keep its weights.
``python resume_worker.py load DIR STATE...``: load each file, build again only what the
program builds after a load, run part 1, and print ``RESULT {cell: {...}}``.
``run(phase, directory, states)`` returns that result in the calling process (the test saves in
its own process: only the load must be a fresh one).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

import keras
import numpy as np

import hyperstep as hs

BACKEND = keras.backend.backend()
FORMATS = ["keras", "weights", *(["checkpoint"] if BACKEND == "tensorflow" else [])]
SCHEDULE = "0.05 * 0.9 ** step"
X = np.random.RandomState(0).normal(size=(24, 3)).astype("float32")
Y = (X @ np.array([[1.0], [-2.0], [0.5]], "float32")).astype("float32")


def make(state: str, order: tuple[str, ...] = ("body", "head")) -> tuple[Any, Any, Any]:
    """The model, its optimizer and the state's object, as the program builds them."""
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(2, name="body"), keras.layers.Dense(1, name="head")]
    )
    groups = {
        "body": hs.Group("body", match="*body/*", learning_rate=0.1),
        "head": hs.Group("head", match="*head/*", learning_rate="0.2 * 0.9 ** step"),
    }
    grouped = {"groups": [groups[g] for g in order]} if state == "groups" else {}
    opt = hs.scheduled(keras.optimizers.SGD(momentum=0.9), learning_rate=SCHEDULE, **grouped)
    model.compile(opt, "mse")
    return model, opt, attach(state, opt)


def attach(state: str, opt: Any) -> Any:
    """The object the program builds for ``state`` (again after a load)."""
    lr = opt.hyperparameters["learning_rate"]
    if state == "plateau":
        return hs.ReduceOnPlateau(lr, factor=0.5, patience=1)
    if state in ("cooldown_started", "cooldown_pending"):
        return hs.Cooldown(lr, steps=4, shape="linear")
    if state == "swa":
        return hs.SWA(opt, start=2, every=2)
    if state == "ema":
        return hs.EMA(opt, decay="min(0.9, (1 + step) / (10 + step))", start=1)
    return None


def fit(model: Any, part: int, extra: Any) -> None:
    # the averages update as callbacks; the plateau is updated by hand (before_save, after_save)
    averages = isinstance(extra, keras.callbacks.Callback) and not isinstance(
        extra, hs.ReduceOnPlateau
    )
    callbacks = [extra] if averages else []
    model.fit(
        X[12 * part : 12 * part + 12],
        Y[12 * part : 12 * part + 12],
        batch_size=4,
        shuffle=False,
        verbose=0,
        callbacks=callbacks,
    )


def before_save(state: str, opt: Any, extra: Any) -> None:
    """The state changed after part 0, before the save."""
    if state == "plateau":
        extra.update(1.0)
        extra.update(0.9)  # best 0.9
    elif state == "cooldown_started":
        extra.start(at=2)
    elif state == "groups":
        opt.hyperparameters["body/learning_rate"].set(0.5)
        opt.hyperparameters["head/learning_rate"].scale.assign(0.25)


def after_save(state: str, extra: Any) -> None:
    """What the program does next, in both runs, before part 1."""
    if state == "plateau":
        extra.update(0.95)  # no improvement on the restored best: halves the rate
    elif state == "cooldown_pending":
        extra.start(at=4)


def weights(model: Any, opt: Any) -> list[np.ndarray]:
    found = [v.numpy() for v in model.trainable_variables]
    if getattr(opt, "_hs_average", None) is not None:
        with hs.averaged_weights(opt):
            found += [v.numpy() for v in model.trainable_variables]
    return found


def checkpoint(model: Any) -> Any:
    import tensorflow as tf

    return tf.train.Checkpoint(model=model, optimizer=model.optimizer)


def save(directory: Path, states: list[str]) -> dict[str, Any]:
    expected = {}
    for state in states:
        model, opt, extra = make(state)
        fit(model, 0, extra)
        before_save(state, opt, extra)
        model.save(directory / f"{state}.keras")
        model.save_weights(directory / f"{state}.weights.h5")
        if BACKEND == "tensorflow":
            checkpoint(model).write(str(directory / f"{state}.ckpt"))
        after_save(state, extra)
        fit(model, 1, extra)
        for i, w in enumerate(weights(model, opt)):
            expected[f"{state}/{i}"] = w
    np.savez(directory / "expected.npz", **expected)
    return {}


def load(directory: Path, states: list[str]) -> dict[str, Any]:
    expected = np.load(directory / "expected.npz")
    results = {}
    for state in states:
        for form in FORMATS:
            if form == "keras":
                model = keras.models.load_model(directory / f"{state}.keras")
                opt = model.optimizer
                # a saved cooldown start is honored with no Cooldown built again
                extra = None if state == "cooldown_started" else attach(state, opt)
            else:  # groups listed in another order: each state lands on its name
                model, opt, extra = make(state, ("head", "body"))  # the program again
                opt.build(model.trainable_variables)
                if form == "weights":
                    model.load_weights(directory / f"{state}.weights.h5")
                else:
                    checkpoint(model).read(str(directory / f"{state}.ckpt")).expect_partial()
            after_save(state, extra)
            fit(model, 1, extra)
            found = weights(model, opt)
            want = [expected[f"{state}/{i}"] for i in range(len(found))]
            results[f"{state}/{form}"] = {
                "equal": len(found) == sum(1 for k in expected if k.startswith(f"{state}/"))
                and all(np.array_equal(a, b) for a, b in zip(found, want, strict=True)),
                "diff": max(float(np.max(np.abs(a - b))) for a, b in zip(found, want, strict=True)),
            }
    return results


def run(phase: str, directory: Path, states: list[str]) -> dict[str, Any]:
    """``save`` or ``load`` ``states`` in ``directory``: the results and hyperstep's warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = (save if phase == "save" else load)(directory, states)
    own = str(Path(hs.__file__).parent)  # hyperstep's own warnings (not by a path's name)
    mine = sorted({str(w.message)[:300] for w in caught if str(w.filename).startswith(own)})
    return {"backend": BACKEND, "results": result, "warnings": mine}


if __name__ == "__main__":
    print("RESULT " + json.dumps(run(sys.argv[1], Path(sys.argv[2]), sys.argv[3:])))
