"""Shared-clock training checks, run by ``test_jax_training.py`` once per backend.

``KERAS_BACKEND=jax python tests/backends/training_worker.py`` runs every check under that
backend and prints one JSON object:

* ``free_fit``: a free ``hs.Hyperparameter`` (``kl_beta``, on the optimizer's clock) read
  in a layer's ``call`` and in the compiled loss during ``model.fit``; each forward pass
  writes the value it read into a non-trainable vector (nothing syncs the JAX state in the
  middle of an epoch except the two run-time changes), and the test compares those values
  with the schedule, the final weights with the TensorFlow run, and counts traces;
* ``free_loop``: the same model in the backend's own loop (TensorFlow: ``tf.function``;
  JAX: a ``jax.jit`` step with ``model.stateless_call``, ``optimizer.stateless_apply`` and
  ``Clock.stateless_copy``);
* ``gan``: two scheduled optimizers on one clock (the generator advances it, the
  discriminator steps twice per generator step), in the backend's own loop; on JAX also
  without ``stateless_copy``, to show what the copy changes;
* ``free_fit.copy_wins`` (JAX): after that ``fit``, one more compiled step from a state in
  which the model's copy of the step (100) differs from the optimizer's (3).

This file asserts nothing itself. Importing it (pytest's doctest collection does) runs
nothing.
"""

from __future__ import annotations

import warnings
from typing import Any

BATCH, SAMPLES, EPOCHS = 4, 24, 2
STEPS = SAMPLES // BATCH * EPOCHS  # 12
SET_AT, CLEAR_AT = 5, 8  # before these steps: kl_beta.set(0.7); clear + scale 0.5
BETA = "min(step / 10, 1)"
GAN_STEPS, D_STEPS = 6, 2


def data() -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(11)
    x = rng.normal(size=(SAMPLES, 3)).astype("float32")
    y = (x @ np.array([[0.5], [-1.0], [2.0]]) - 0.2).astype("float32")
    return x, y


def fixed_weights(model: Any, seed: int) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    for variable in model.trainable_variables:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))


def build_free() -> tuple[Any, Any, Any]:
    """A model whose layer reads ``kl_beta`` (on the optimizer's clock) in ``call``."""
    import keras
    from keras import ops

    import hyperstep as hs

    optimizer = hs.scheduled(keras.optimizers.Adam(), learning_rate="warmup(0.05, steps=3)")

    class Recorded(keras.layers.Layer):
        """Dense + ``kl_beta * mean(h**2)`` as an added loss; records each value read."""

        def __init__(self, clock: Any, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.kl_beta = hs.Hyperparameter(BETA, clock=clock, name="kl_beta")
            self.dense = keras.layers.Dense(2, activation="tanh")
            self.seen = self.add_weight(shape=(STEPS,), initializer="zeros", trainable=False)
            self.calls = self.add_weight(shape=(), dtype="int32", trainable=False)
            self.seen_in_loss = self.add_weight(shape=(STEPS,), trainable=False)
            self.loss_calls = self.add_weight(shape=(), dtype="int32", trainable=False)
            self.traced = 0  # a Python side effect: counts the times `call` runs

        def record(self, seen: Any, calls: Any, value: Any) -> None:
            hit = ops.equal(ops.arange(STEPS, dtype="int32"), ops.mod(calls.value, STEPS))
            seen.assign(ops.where(hit, value, seen.value))
            calls.assign_add(1)

        def call(self, x: Any) -> Any:
            self.traced += 1
            beta = self.kl_beta.value
            self.record(self.seen, self.calls, beta)
            h = self.dense(x)
            self.add_loss(beta * ops.mean(h**2))
            return h

    layer = Recorded(optimizer.clock, name="recorded")
    model = keras.Sequential([keras.Input((3,)), layer, keras.layers.Dense(1)])
    fixed_weights(model, 5)

    def loss(y_true: Any, y_pred: Any) -> Any:
        beta = layer.kl_beta.value  # read in the compiled loss too
        layer.record(layer.seen_in_loss, layer.loss_calls, beta)
        return (1.0 + beta) * ops.mean((y_pred - y_true) ** 2)

    model.loss_for_test = loss
    return model, optimizer, layer


def change(step: int, layer: Any) -> None:
    """The scripted run-time changes due before the update at ``step``."""
    if step == SET_AT:
        layer.kl_beta.set(0.7)
    if step == CLEAR_AT:
        layer.kl_beta.clear()
        layer.kl_beta.scale.assign(0.5)


def numbers(variable: Any) -> Any:
    """A variable's value as a NumPy array."""
    import keras

    return keras.ops.convert_to_numpy(variable)


def weights(model: Any) -> list[list[float]]:
    return [numbers(v).ravel().tolist() for v in model.trainable_variables]


def free_result(model: Any, optimizer: Any, layer: Any, traced_after_first: int) -> dict:
    return {
        "seen": numbers(layer.seen).tolist(),
        "seen_in_loss": numbers(layer.seen_in_loss).tolist(),
        "calls": int(numbers(layer.calls)),
        "step": int(numbers(optimizer.clock.step)),
        "weights": weights(model),
        "traced_after_first_step": layer.traced - traced_after_first,
    }


# ---- checks ---------------------------------------------------------------------------------
def check_free_fit() -> dict[str, Any]:
    import keras

    model, optimizer, layer = build_free()
    model.compile(optimizer, model.loss_for_test)
    first = {}

    class Changes(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            step = self.params["steps"] * self.epoch + batch
            if step in (SET_AT, CLEAR_AT):
                _ = self.model  # on JAX this syncs the training state into the variables
                change(step, layer)

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self.epoch = epoch

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            first.setdefault("traced", layer.traced)

    x, y = data()
    model.fit(
        x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0, callbacks=[Changes()]
    )
    result = free_result(model, optimizer, layer, first["traced"])
    if keras.backend.backend() == "jax":
        result["copy_wins"] = check_copy_wins(model)
    return result


def check_copy_wins(model: Any) -> dict[str, Any]:
    """JAX ``fit``: one more compiled step of ``model`` (trained by :func:`check_free_fit`)
    from a state whose two copies of the step differ."""
    import numpy as np

    optimizer, layer = model.optimizer, model.layers[0]
    state = model._get_jax_state(
        trainable_variables=True,
        non_trainable_variables=True,
        optimizer_variables=True,
        metrics_variables=True,
    )
    model_copy = [v is optimizer.clock.step for v in model.non_trainable_variables].index(True)
    optimizer_copy = [v is optimizer.clock.step for v in optimizer.variables].index(True)
    seen = [v is layer.seen for v in model.non_trainable_variables].index(True)
    calls = int(numbers(layer.calls)) % STEPS  # where this forward pass records its value
    state[1][model_copy] = np.array(100, "int32")
    state[2][optimizer_copy] = np.array(3, "int32")
    x, y = data()
    traced = layer.traced
    _, state = model.train_function(state, iter([(x[:BATCH], y[:BATCH])]))
    return {
        "read": float(state[1][seen][calls]),
        "model_copy": int(state[1][model_copy]),
        "optimizer_copy": int(state[2][optimizer_copy]),
        "traced": layer.traced - traced,
    }


def loop_free_tensorflow(model: Any, optimizer: Any, layer: Any) -> tuple[int, None]:
    import tensorflow as tf

    x, y = data()
    optimizer.build(model.trainable_variables)

    @tf.function
    def train_step(xb: Any, yb: Any) -> Any:
        with tf.GradientTape() as tape:
            y_pred = model(xb, training=True)
            loss = model.loss_for_test(yb, y_pred) + tf.add_n(model.losses)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        return loss

    traced = None
    for step in range(STEPS):
        change(step, layer)
        i = step * BATCH % SAMPLES
        train_step(x[i : i + BATCH], y[i : i + BATCH])
        traced = layer.traced if traced is None else traced
    return traced, None


def loop_free_jax(model: Any, optimizer: Any, layer: Any) -> tuple[int, int]:
    import jax
    import keras

    x, y = data()
    optimizer.build(model.trainable_variables)
    clock = optimizer.clock

    def loss_fn(trainable: Any, non_trainable: Any, xb: Any, yb: Any) -> Any:
        y_pred, non_trainable, losses = model.stateless_call(
            trainable, non_trainable, xb, training=True, return_losses=True
        )
        # the compiled loss reads kl_beta too: evaluate it on the model's state
        mapping = list(zip(model.non_trainable_variables, non_trainable, strict=True))
        with keras.StatelessScope(state_mapping=mapping) as scope:
            loss = model.loss_for_test(yb, y_pred) + sum(losses)
        non_trainable = [scope.get_current_value(v) for v in model.non_trainable_variables]
        return loss, non_trainable

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    @jax.jit
    def train_step(state: Any, xb: Any, yb: Any) -> Any:
        trainable, non_trainable, optimizer_variables = state
        (loss, non_trainable), grads = grad_fn(trainable, non_trainable, xb, yb)
        trainable, optimizer_variables = optimizer.stateless_apply(
            optimizer_variables, grads, trainable
        )
        # the optimizer advanced its copy of the step: the model's copy follows
        non_trainable = clock.stateless_copy(
            (optimizer.variables, optimizer_variables),
            (model.non_trainable_variables, non_trainable),
        )
        return loss, (trainable, non_trainable, optimizer_variables)

    groups = (model.trainable_variables, model.non_trainable_variables, optimizer.variables)

    def fetch() -> Any:
        return tuple([v.value for v in group] for group in groups)

    def sync(state: Any) -> None:
        for group, values in zip(groups, state, strict=True):
            for variable, value in zip(group, values, strict=True):
                variable.assign(value)

    state = fetch()
    traced = None
    for step in range(STEPS):
        if step in (SET_AT, CLEAR_AT):  # run-time changes go through the variables
            sync(state)
            change(step, layer)
            state = fetch()
        i = step * BATCH % SAMPLES
        _, state = train_step(state, x[i : i + BATCH], y[i : i + BATCH])
        traced = layer.traced if traced is None else traced
    sync(state)
    return traced, train_step._cache_size()  # type: ignore[attr-defined]


def check_free_loop(backend: str) -> dict[str, Any]:
    model, optimizer, layer = build_free()
    loop = {"tensorflow": loop_free_tensorflow, "jax": loop_free_jax}[backend]
    traced, compiled = loop(model, optimizer, layer)
    return {**free_result(model, optimizer, layer, traced), "compiled": compiled}


def build_gan() -> tuple[Any, Any, Any, Any]:
    """Generator, discriminator and their scheduled optimizers on one clock."""
    import keras

    import hyperstep as hs

    generator = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
    discriminator = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(1)]
    )
    fixed_weights(generator, 1)
    fixed_weights(discriminator, 2)
    clock = hs.Clock()
    g_optimizer = hs.scheduled(
        keras.optimizers.Adam(), clock=clock, advance=True, learning_rate="0.05 * 0.5 ** step"
    )
    d_optimizer = hs.scheduled(
        keras.optimizers.Adam(), clock=clock, advance=False, learning_rate="0.02 + 0.01 * step"
    )
    g_optimizer.build(generator.trainable_variables)
    d_optimizer.build(discriminator.trainable_variables)
    return generator, discriminator, g_optimizer, d_optimizer


def gan_batch(step: int) -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(100 + step)
    noise = rng.normal(size=(8, 2)).astype("float32")
    real = (rng.normal(size=(8, 3)) + np.array([1.0, -1.0, 0.5])).astype("float32")
    return noise, real


def gan_losses(
    generator: Any, discriminator: Any, noise: Any, real: Any
) -> tuple[Any, Any]:  # least-squares GAN
    from keras import ops

    fake = generator(noise)
    d_loss = ops.mean((discriminator(real) - 1.0) ** 2) + ops.mean(discriminator(fake) ** 2)
    g_loss = ops.mean((discriminator(fake) - 1.0) ** 2)
    return d_loss, g_loss


def loop_gan_tensorflow(parts: Any) -> tuple[list[dict[str, float]], None]:
    import tensorflow as tf

    generator, discriminator, g_optimizer, d_optimizer = parts
    traces = []
    for step in range(GAN_STEPS):
        noise, real = gan_batch(step)
        traces.append(
            {
                "d_step": int(d_optimizer.clock.step.numpy()),
                "d_learning_rate": float(d_optimizer.learning_rate),
                "g_learning_rate": float(g_optimizer.learning_rate),
            }
        )
        for _ in range(D_STEPS):
            with tf.GradientTape() as tape:
                d_loss, _ = gan_losses(generator, discriminator, noise, real)
            grads = tape.gradient(d_loss, discriminator.trainable_variables)
            d_optimizer.apply(grads, discriminator.trainable_variables)
        with tf.GradientTape() as tape:
            _, g_loss = gan_losses(generator, discriminator, noise, real)
        grads = tape.gradient(g_loss, generator.trainable_variables)
        g_optimizer.apply(grads, generator.trainable_variables)
    return traces, None


def loop_gan_jax(parts: Any, copy: bool) -> tuple[list[dict[str, float]], int]:
    import jax
    import keras

    generator, discriminator, g_optimizer, d_optimizer = parts
    clock = g_optimizer.clock

    def d_loss_fn(
        d_trainable: Any, g_trainable: Any, d_fixed: Any, g_fixed: Any, batch: Any
    ) -> Any:
        fake, _ = generator.stateless_call(g_trainable, g_fixed, batch[0])
        real_score, _ = discriminator.stateless_call(d_trainable, d_fixed, batch[1])
        fake_score, _ = discriminator.stateless_call(d_trainable, d_fixed, fake)
        return keras.ops.mean((real_score - 1.0) ** 2) + keras.ops.mean(fake_score**2)

    def g_loss_fn(
        g_trainable: Any, d_trainable: Any, d_fixed: Any, g_fixed: Any, batch: Any
    ) -> Any:
        fake, _ = generator.stateless_call(g_trainable, g_fixed, batch[0])
        fake_score, _ = discriminator.stateless_call(d_trainable, d_fixed, fake)
        return keras.ops.mean((fake_score - 1.0) ** 2)

    d_grad, g_grad = jax.grad(d_loss_fn), jax.grad(g_loss_fn)

    @jax.jit
    def train_step(state: Any, batch: Any) -> Any:
        g_trainable, d_trainable, g_fixed, d_fixed, g_values, d_values = state
        for _ in range(D_STEPS):  # the discriminator reads its copy of the step
            grads = d_grad(d_trainable, g_trainable, d_fixed, g_fixed, batch)
            d_trainable, d_values = d_optimizer.stateless_apply(d_values, grads, d_trainable)
        grads = g_grad(g_trainable, d_trainable, d_fixed, g_fixed, batch)
        g_trainable, g_values = g_optimizer.stateless_apply(g_values, grads, g_trainable)
        if copy:  # the generator advanced the clock: the discriminator's copy follows
            d_values = clock.stateless_copy(
                (g_optimizer.variables, g_values), (d_optimizer.variables, d_values)
            )
        return g_trainable, d_trainable, g_fixed, d_fixed, g_values, d_values

    state = (
        [v.value for v in generator.trainable_variables],
        [v.value for v in discriminator.trainable_variables],
        [v.value for v in generator.non_trainable_variables],
        [v.value for v in discriminator.non_trainable_variables],
        [v.value for v in g_optimizer.variables],
        [v.value for v in d_optimizer.variables],
    )
    traces = []
    for step in range(GAN_STEPS):
        row = {}
        for key, optimizer, values in (("d", d_optimizer, state[5]), ("g", g_optimizer, state[4])):
            mapping = list(zip(optimizer.variables, values, strict=True))
            with keras.StatelessScope(state_mapping=mapping):  # read a value without syncing
                row[f"{key}_learning_rate"] = float(optimizer.learning_rate)
                row[f"{key}_step"] = int(optimizer.clock.step.value)
        traces.append({k: row[k] for k in ("d_step", "d_learning_rate", "g_learning_rate")})
        state = train_step(state, gan_batch(step))
    owners = (
        generator.trainable_variables,
        discriminator.trainable_variables,
        generator.non_trainable_variables,
        discriminator.non_trainable_variables,
        d_optimizer.variables,  # the generator's (advancing) copy of the step last: it wins
        g_optimizer.variables,
    )
    for group, values in zip(owners, (*state[:4], state[5], state[4]), strict=True):
        for variable, value in zip(group, values, strict=True):
            variable.assign(value)
    return traces, train_step._cache_size()  # type: ignore[attr-defined]


def check_gan(backend: str, copy: bool = True) -> dict[str, Any]:
    parts = build_gan()
    if backend == "tensorflow":
        traces, compiled = loop_gan_tensorflow(parts)
    else:
        traces, compiled = loop_gan_jax(parts, copy)
    generator, discriminator, g_optimizer, _ = parts
    return {
        "traces": traces,
        "compiled": compiled,
        "step": int(numbers(g_optimizer.clock.step)),
        "weights": weights(generator) + weights(discriminator),
    }


def main() -> None:
    from worker_io import report  # beside this script (run as one; also imported by tests)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import keras

        import hyperstep  # noqa: F401

        backend = keras.backend.backend()
        result: dict[str, Any] = {"backend": backend, "free_fit": check_free_fit()}
        if backend in ("tensorflow", "jax"):
            result["free_loop"] = check_free_loop(backend)
            result["gan"] = check_gan(backend)
        if backend == "jax":
            result["gan_without_copy"] = check_gan(backend, copy=False)
    report(result, caught)


if __name__ == "__main__":
    main()
