"""Train every Keras optimizer, plain and through ``hs.scheduled``, in ``fit``; print JSON.

Run with ``KERAS_BACKEND`` set (``test_jax_optimizers.py``). For each configuration prints
the largest absolute difference between the two models' weights after two epochs, or the
error ``hs.scheduled`` raised.
"""

from __future__ import annotations

import json

import keras
import numpy as np

import hyperstep as hs

K = keras.optimizers

#: configurations whose Keras code tests a hyperparameter in Python (`if self.momentum != 0`,
#: the clipping arguments), plus one plain configuration of every other optimizer
CONFIGS = {
    "SGD": lambda: K.SGD(0.05),
    "SGD-momentum-nesterov": lambda: K.SGD(0.05, momentum=0.9, nesterov=True),
    "RMSprop": lambda: K.RMSprop(),
    "RMSprop-momentum": lambda: K.RMSprop(momentum=0.5),
    "Adam-clipvalue": lambda: K.Adam(clipvalue=0.01),
    "AdamW-clipnorm": lambda: K.AdamW(clipnorm=0.1),
    "Adamax-global-clipnorm": lambda: K.Adamax(global_clipnorm=0.1),
    "Lion-decay-clipvalue": lambda: K.Lion(weight_decay=0.01, clipvalue=0.1),
    "Nadam-ema": lambda: K.Nadam(use_ema=True),
    "Adadelta": lambda: K.Adadelta(1.0),
    "Adafactor": lambda: K.Adafactor(),
    "Adagrad": lambda: K.Adagrad(),
    "Ftrl": lambda: K.Ftrl(l1_regularization_strength=0.01),
    "Lamb": lambda: K.Lamb(),
    "Muon": lambda: K.Muon(),
    "ScheduleFreeAdamW": lambda: K.ScheduleFreeAdamW(),
}

X = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
Y = np.random.default_rng(1).normal(size=(32, 2)).astype("float32")


def _weights(optimizer: keras.optimizers.Optimizer) -> list[np.ndarray]:
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(2)]
    )
    model.compile(optimizer, "mse")
    model.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    return [np.asarray(v) for v in model.get_weights()]


def main() -> None:
    result: dict[str, object] = {"backend": keras.backend.backend()}
    for name, make in CONFIGS.items():
        try:
            plain = _weights(make())
            ours = _weights(hs.scheduled(make()))
        except Exception as error:  # reported, and failed, by the test
            result[name] = f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
            continue
        moved = max(float(np.max(np.abs(p - q))) for p, q in zip(plain, _initial(), strict=True))
        diff = max(float(np.max(np.abs(p - q))) for p, q in zip(plain, ours, strict=True))
        result[name] = {"difference": diff, "moved": moved}
    print("RESULT " + json.dumps(result))


def _initial() -> list[np.ndarray]:
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(2)]
    )
    return [np.asarray(v) for v in model.get_weights()]


if __name__ == "__main__":
    main()
