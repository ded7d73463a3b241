"""hp.set(0.0) during JAX fit (run by test_jax_fit_writes.py with KERAS_BACKEND=jax): from a
batch callback and from another thread, after the second update; and the direct assigns
``hp.scale.assign(0.0)`` / ``hp.override.assign(0.0)`` from a batch callback (at the second
batch's end, or the third's begin). Prints ``RESULT {...}``:
the values read there, the value after fit, and the largest weight difference from plain
Keras SGD trained two updates at 0.01 and two at 0."""

import json
import threading

import keras
import numpy as np

import hyperstep as hs

X = np.linspace(-1, 1, 48, dtype="float32").reshape(16, 3)
Y = np.ones((16, 1), "float32")


CASES = ("callback", "thread", "scale", "override", "scale-begin", "override-begin")


def reference(start: list) -> list:
    plain = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    plain.set_weights(start)
    sgd = keras.optimizers.SGD(learning_rate=0.01)
    plain.compile(sgd, "mse")
    for t in range(4):
        sgd.learning_rate.assign(0.01 if t < 2 else 0.0)
        plain.train_on_batch(X[4 * t : 4 * t + 4], Y[4 * t : 4 * t + 4])
    return plain.get_weights()


def run(how: str) -> dict:
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.01)
    hp = opt.hyperparameters["learning_rate"]
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    start = model.get_weights()
    model.compile(opt, "mse")
    reads: list = []
    ask, done = threading.Event(), threading.Event()

    def other() -> None:  # another thread: reads, then writes while fit runs
        ask.wait(60)
        reads.append(float(hp.value))
        hp.set(0.0)
        reads.append(float(hp.value))
        done.set()

    class Change(keras.callbacks.Callback):  # never touches self.model (no sync by Keras)
        def on_train_batch_end(self, batch, logs=None):
            if batch != 1:
                return
            if how == "callback":
                reads.append(float(hp.value))
                hp.set(0.0)
                reads.append(float(hp.value))
            elif how in ("scale", "override"):
                write(how)
            elif how == "thread":
                ask.set()
                done.wait(60)

        def on_train_batch_begin(self, batch, logs=None):
            if batch == 2 and how in ("scale-begin", "override-begin"):
                write(how.removesuffix("-begin"))

    def write(which: str) -> None:  # a direct assign, not hp.set
        reads.append(float(hp.value))
        getattr(hp, which).assign(0.0)
        reads.append(float(hp.value))

    if how == "thread":
        threading.Thread(target=other, daemon=True).start()
    model.fit(X, Y, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=[Change()])
    diff = max(
        float(np.max(np.abs(a - b)))
        for a, b in zip(model.get_weights(), reference(start), strict=True)
    )
    return {"reads": reads[-2:], "after": float(hp.value), "diff": diff}


if __name__ == "__main__":
    print("RESULT " + json.dumps({how: run(how) for how in CASES}))
