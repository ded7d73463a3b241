"""One backend's state-model cases (run by test_state_model.py with KERAS_BACKEND set): prints
``RESULT {...}``.

* ``cooldown_after_fit``: fit 4 steps, create and start an ``hs.Cooldown``, fit 4 more: the
  rates each update used and the largest weight difference from plain Keras SGD whose
  learning rate is set to the closed form before each update.
* ``plateau_reload``: an ``hs.ReduceOnPlateau`` created (not passed to fit), 12 steps of
  Adam, ``.keras`` saved and loaded: the optimizer's own variables bitwise, its iterations,
  Keras's warnings, the plateau's state once built again, the warning of unread state.
* ``groups``: ``save_weights`` with groups ``body, head``, loaded into ``head, body`` (one
  hyperparameter more) and into ``body`` alone: each named state on its owner, the warnings.
* ``checkpoint`` (TensorFlow): the same reorder through ``tf.train.Checkpoint``.
"""

import json
import os
import sys
import tempfile
import warnings

import keras
import numpy as np

import hyperstep as hs

X = np.linspace(-1, 1, 48, dtype="float32").reshape(16, 3)
Y = np.ones((16, 1), "float32")


def dense_model(seed: int = 5) -> keras.Model:
    keras.utils.set_random_seed(seed)
    return keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(2, name="body"), keras.layers.Dense(1, name="head")]
    )


def cooldown_after_fit() -> dict:
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.05)
    hp = opt.hyperparameters["learning_rate"]
    rates = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            _ = self.model  # JAX: the trainer's state back in the variables
            rates.append(float(hp.value))

    model = dense_model()
    start = model.get_weights()
    model.compile(opt, "mse")
    fit = dict(batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=[Record()])
    model.fit(X, Y, **fit)  # the step is traced here
    cooldown = hs.Cooldown(opt, steps=4, shape="linear")
    cooldown.start()
    model.fit(X, Y, **fit)
    expected = [0.05 if t < 4 else 0.05 * (1 - min(t - 4, 4) / 4) for t in range(8)]
    plain = dense_model()
    plain.set_weights(start)
    sgd = keras.optimizers.SGD(learning_rate=0.05)
    plain.compile(sgd, "mse")
    for t in range(8):
        sgd.learning_rate.assign(expected[t])
        i = t % 4
        plain.train_on_batch(X[4 * i : 4 * i + 4], Y[4 * i : 4 * i + 4])
    diff = max(
        float(np.max(np.abs(a - b)))
        for a, b in zip(model.get_weights(), plain.get_weights(), strict=True)
    )
    return {"start": cooldown.start_step, "rates": rates, "expected": expected, "diff": diff}


def plateau_reload(folder: str) -> dict:
    opt = hs.scheduled(keras.optimizers.Adam(), learning_rate=0.01)
    plateau = hs.ReduceOnPlateau(opt, monitor="loss", patience=1)  # created, not in fit
    model = dense_model()
    model.compile(opt, "mse")
    model.fit(X, Y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    plateau.update(0.75)
    path = os.path.join(folder, "plateau.keras")
    model.save(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = keras.models.load_model(path)
    skipped = [str(w.message) for w in caught if "Skipping variable loading" in str(w.message)]
    mine = loaded.optimizer._hs_keras_variables()
    theirs = opt._hs_keras_variables()
    same = len(mine) == len(theirs) and all(
        np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(mine, theirs, strict=True)
    )
    iterations = int(np.asarray(loaded.optimizer.iterations))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded.fit(X, Y, batch_size=4, epochs=1, shuffle=False, verbose=0)
    unread = [str(w.message) for w in caught if "read by no object" in str(w.message)]
    again = hs.ReduceOnPlateau(loaded.optimizer, monitor="loss", patience=1)
    return {
        "same": same,
        "count": len(mine),
        "iterations": iterations,
        "skipped": skipped,
        "best": again.best,
        "expected_best": plateau.best,
        "unread": unread,
    }


def grouped(order: tuple[str, ...], momentum: bool = False) -> tuple[keras.Model, object]:
    given = {
        "body": hs.Group("body", match="*/body/*", learning_rate=0.1),
        "head": hs.Group(
            "head", match="*/head/*", learning_rate=0.2, **({"momentum": 0.5} if momentum else {})
        ),
    }
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.05, groups=[given[g] for g in order])
    model = dense_model()
    model.compile(opt, "mse")
    opt.build(model.trainable_variables)
    return model, opt


def state_of(opt: object) -> dict:
    """Each hyperparameter's state as numbers (an unset override as the string "nan")."""
    override = lambda hp: float(np.asarray(hp.override))  # noqa: E731
    return {
        key: {
            "override": "nan" if np.isnan(override(hp)) else override(hp),
            "scale": float(np.asarray(hp.scale)),
            **{name: float(np.asarray(v)) for name, v in hp.state.items()},
        }
        for key, hp in opt.hyperparameters.items()
    }


def write_groups(opt: object) -> None:
    opt.hyperparameters["body/learning_rate"].set(0.5)
    opt.hyperparameters["head/learning_rate"].scale.assign(0.25)
    opt.hyperparameters["learning_rate"].scale.assign(0.75)
    plateau = hs.ReduceOnPlateau(opt.hyperparameters["head/learning_rate"], patience=3)
    plateau.update(0.5)


def groups(folder: str) -> dict:
    model, opt = grouped(("body", "head"))
    write_groups(opt)
    path = os.path.join(folder, "groups.weights.h5")
    model.save_weights(path)
    results = {"saved": state_of(opt)}
    for label, order, momentum in (
        ("reordered", ("head", "body"), True),
        ("fewer", ("body",), False),
    ):
        model, opt = grouped(order, momentum)
        if "head/learning_rate" in opt.hyperparameters:
            hs.ReduceOnPlateau(opt.hyperparameters["head/learning_rate"], patience=3)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            model.load_weights(path)
        results[label] = state_of(opt)
        results[label + "_warnings"] = [
            str(w.message) for w in caught if "belongs to no hyperparameter" in str(w.message)
        ]
    return results


def checkpoint(folder: str) -> dict:
    import tensorflow as tf

    model, opt = grouped(("body", "head"))
    write_groups(opt)
    saved = tf.train.Checkpoint(model=model, optimizer=opt).save(os.path.join(folder, "ckpt"))
    model, opt = grouped(("head", "body"), momentum=True)
    hs.ReduceOnPlateau(opt.hyperparameters["head/learning_rate"], patience=3)
    tf.train.Checkpoint(model=model, optimizer=opt).restore(saved).expect_partial()
    return {"reordered": state_of(opt)}


def main() -> dict:
    backend = keras.backend.backend()
    result: dict = {"backend": backend}
    with tempfile.TemporaryDirectory() as folder:
        for name in sys.argv[1:]:
            if name == "checkpoint" and backend != "tensorflow":
                continue
            case = globals()[name]
            result[name] = case() if name == "cooldown_after_fit" else case(folder)
    return result


if __name__ == "__main__":
    print("RESULT " + json.dumps(main()))
