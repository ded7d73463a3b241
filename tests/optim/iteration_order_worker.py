"""Two optimizers on one clock in every order, on the backend KERAS_BACKEND names.

``run(order, how)`` trains a generator and a discriminator for ``STEPS`` iterations with
``hs.scheduled`` Adam optimizers on one clock, and the same with plain Keras Adam whose
learning rates are set to ``schedule(i)`` before iteration ``i`` (the reference); it returns
both weights and the ``tau`` values read before and after the updates. ``how``: ``"fit"``
(a custom ``train_step``), ``"loop"`` (a custom loop, ``with clock.iteration():``, inside
``tf.function`` on TensorFlow). Run as a script it prints one JSON line of comparisons
for every order and way (``python iteration_order_worker.py``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

STEPS = 6
ORDERS = {"g_then_d": "GD", "d_then_g": "DG", "five_d_per_g": "DDDDDG"}
G_RATE = "0.01 * (1 + cos(pi * step / 8)) / 2"
D_RATE = "0.02 + 0.003 * step"
TAU = "1 - 0.004 * (cos(pi * step / 8) + 1) / 2"


def batches() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(7)
    return [
        (rng.normal(size=(8, 2)).astype("float32"), rng.normal(size=(8, 3)).astype("float32"))
        for _ in range(STEPS)
    ]


def networks() -> tuple[Any, Any]:
    import keras

    generator = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
    discriminator = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)]
    )
    rng = np.random.default_rng(3)
    for net in (generator, discriminator):
        net.set_weights([rng.normal(size=w.shape).astype("float32") for w in net.get_weights()])
    return generator, discriminator


def losses(generator: Any, discriminator: Any, noise: Any, real: Any) -> tuple[Any, Any]:
    from keras import ops

    fake = generator(noise)
    d_loss = ops.mean((discriminator(real) - 1.0) ** 2) + ops.mean(discriminator(fake) ** 2)
    g_loss = ops.mean((discriminator(fake) - 1.0) ** 2)
    return d_loss, g_loss


def gradients(loss_of: Any, variables: list[Any]) -> list[Any]:
    """The gradients of ``loss_of()`` with respect to ``variables`` (stateful backends)."""
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = loss_of()
        return tape.gradient(loss, variables)
    if backend == "torch":
        import torch

        loss = loss_of()
        grads = torch.autograd.grad(loss, [v.value for v in variables])
        return list(grads)
    import jax

    def pure(values: list[Any]) -> Any:
        with keras.StatelessScope(state_mapping=list(zip(variables, values, strict=True))):
            return loss_of()

    return jax.grad(pure)([v.value for v in variables])


def make_iteration(order: str, parts: Any, read_tau: Any) -> Any:
    """One iteration: the updates in ``order`` ("G"/"D" letters), tau read before and after."""
    generator, discriminator, g_opt, d_opt = parts

    def iteration(noise: Any, real: Any) -> Any:
        before = read_tau()
        for letter in order:
            if letter == "D":
                grads = gradients(
                    lambda: losses(generator, discriminator, noise, real)[0],
                    discriminator.trainable_variables,
                )
                d_opt.apply(grads, discriminator.trainable_variables)
            else:
                grads = gradients(
                    lambda: losses(generator, discriminator, noise, real)[1],
                    generator.trainable_variables,
                )
                g_opt.apply(grads, generator.trainable_variables)
        return before, read_tau()

    return iteration


def reference(order: str) -> dict[str, Any]:
    """Plain Keras Adam, learning rates set to schedule(i) before iteration i."""
    import keras

    import hyperstep as hs

    generator, discriminator = networks()
    g_opt, d_opt = keras.optimizers.Adam(), keras.optimizers.Adam()
    g_rate, d_rate, tau = hs.parse(G_RATE), hs.parse(D_RATE), hs.parse(TAU)
    iteration = compiled(
        make_iteration(order, (generator, discriminator, g_opt, d_opt), lambda: 0.0)
    )
    taus = []
    for i, (noise, real) in enumerate(batches()):
        g_opt.learning_rate = float(keras.ops.convert_to_numpy(g_rate(i)))
        d_opt.learning_rate = float(keras.ops.convert_to_numpy(d_rate(i)))
        iteration(noise, real)
        taus.append(float(keras.ops.convert_to_numpy(tau(i))))
    return {"weights": weights(generator, discriminator), "tau": taus}


def compiled(function: Any) -> Any:
    """``function`` in a ``tf.function`` on TensorFlow (as ``fit`` runs it), else as it is."""
    import keras

    if keras.backend.backend() != "tensorflow":
        return function
    import tensorflow as tf

    return tf.function(function)


def weights(generator: Any, discriminator: Any) -> list[list[float]]:
    return [
        np.asarray(w).ravel().tolist()
        for w in generator.get_weights() + discriminator.get_weights()
    ]


def scheduled_parts() -> tuple[Any, ...]:
    import keras

    import hyperstep as hs

    generator, discriminator = networks()
    clock = hs.Clock()
    g_opt = hs.scheduled(keras.optimizers.Adam(), clock=clock, learning_rate=G_RATE)
    d_opt = hs.scheduled(keras.optimizers.Adam(), clock=clock, learning_rate=D_RATE)
    tau = hs.Hyperparameter(TAU, clock=clock, name="tau")
    return generator, discriminator, g_opt, d_opt, tau, clock


def custom_loop(order: str) -> dict[str, Any]:
    import keras

    generator, discriminator, g_opt, d_opt, tau, clock = scheduled_parts()
    iteration = make_iteration(order, (generator, discriminator, g_opt, d_opt), lambda: tau.value)

    def step(noise: Any, real: Any) -> Any:
        with clock.iteration():
            return iteration(noise, real)

    step = compiled(step)
    seen = [step(noise, real) for noise, real in batches()]
    return {
        "weights": weights(generator, discriminator),
        "before": [float(keras.ops.convert_to_numpy(b)) for b, _ in seen],
        "after": [float(keras.ops.convert_to_numpy(a)) for _, a in seen],
        "step": int(keras.ops.convert_to_numpy(clock.step)),
    }


def in_fit(order: str) -> dict[str, Any]:
    import keras

    generator, discriminator, g_opt, d_opt, tau, clock = scheduled_parts()
    iteration = make_iteration(order, (generator, discriminator, g_opt, d_opt), lambda: tau.value)
    seen: list[Any] = []

    class GAN(keras.Model):
        def __init__(self) -> None:
            super().__init__()
            self.generator, self.discriminator = generator, discriminator
            self.tau = tau

        def call(self, noise: Any) -> Any:
            return self.generator(noise)

        def train_step(self, data: Any) -> Any:
            noise, real = data
            before, after = iteration(noise, real)
            return {"before": before, "after": after}

    model = GAN()
    model.compile(optimizer=g_opt)

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            seen.append((float(logs["before"]), float(logs["after"])))

    noise = np.concatenate([n for n, _ in batches()])
    real = np.concatenate([r for _, r in batches()])
    model.fit(noise, real, batch_size=8, epochs=1, shuffle=False, verbose=0, callbacks=[Record()])
    return {
        "weights": weights(generator, discriminator),
        "before": [b for b, _ in seen],
        "after": [a for _, a in seen],
        "step": int(keras.ops.convert_to_numpy(clock.step)),
    }


def compare(order: str, how: str) -> dict[str, Any]:
    expected = reference(ORDERS[order])
    found = (custom_loop if how == "loop" else in_fit)(ORDERS[order])
    diff = max(
        float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
        for a, b in zip(found["weights"], expected["weights"], strict=True)
    )
    same = [
        np.array_equal(np.asarray(a, "float32"), np.asarray(b, "float32"))
        for a, b in zip(found["weights"], expected["weights"], strict=True)
    ]
    return {
        "order": order,
        "how": how,
        "weights_bitwise": all(same),
        "tau_after_equals_before": found["after"] == found["before"],
        "tau_equals_schedule": found["before"] == expected["tau"],
        "step": found["step"],
        "max_difference": diff,
    }


def main(ways: list[str]) -> None:
    rows = [compare(order, how) for how in ways for order in ORDERS]
    print("RESULT " + json.dumps(rows))


if __name__ == "__main__":
    main(sys.argv[1:] or ["loop", "fit"])
