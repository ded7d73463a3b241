"""One backend's Cooldown run in fit (run by test_cooldown_backends.py with KERAS_BACKEND set):
prints ``RESULT {...}`` with the start step, the rates each update used, and the largest weight
difference from plain Keras SGD set to the closed-form rate before each update."""

import json
import math

import keras
import numpy as np

import hyperstep as hs


def closed_form(t: int) -> float:
    cosine = lambda s: 0.1 * 0.5 * (1 + math.cos(math.pi * min(s, 40) / 40))  # noqa: E731
    return cosine(t) if t < 4 else cosine(4) * (1 - min(t - 4, 4) / 4)


def main() -> dict:
    opt = hs.scheduled(
        keras.optimizers.SGD(momentum=0.9), learning_rate=hs.schedules.cosine(0.1, 40)
    )
    hp = opt.hyperparameters["learning_rate"]
    cooldown = hs.Cooldown(opt, steps=4, shape="linear")
    rates = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            _ = self.model
            rates.append(float(hp.value))

    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    start = model.get_weights()
    model.compile(opt, "mse")
    x = np.linspace(-1, 1, 48, dtype="float32").reshape(16, 3)
    y = np.ones((16, 1), "float32")
    callbacks = [hs.callbacks.StartCooldown(cooldown, at_epoch=1), Record()]
    try:
        model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0, callbacks=callbacks)
    except hs.errors.FrozenValueError as error:
        return {"error": type(error).__name__, "message": str(error)}
    plain = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    plain.set_weights(start)
    sgd = keras.optimizers.SGD(momentum=0.9, learning_rate=0.1)
    plain.compile(sgd, "mse")
    for t in range(12):
        sgd.learning_rate.assign(closed_form(t))
        i = t % 4
        plain.train_on_batch(x[4 * i : 4 * i + 4], y[4 * i : 4 * i + 4])
    diff = max(
        float(np.max(np.abs(a - b)))
        for a, b in zip(model.get_weights(), plain.get_weights(), strict=True)
    )
    expected = [closed_form(t) for t in range(12)]
    return {"start": cooldown.start_step, "rates": rates, "expected": expected, "diff": diff}


if __name__ == "__main__":
    print("RESULT " + json.dumps(main()))
