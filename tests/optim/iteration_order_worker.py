"""Two optimizers on one clock in every order, on the backend KERAS_BACKEND names.

``run(order, how)`` trains a generator and a discriminator for ``STEPS`` iterations with
``hs.scheduled`` Adam optimizers on one clock, and the same with plain Keras Adam whose
learning rates are set to ``schedule(i)`` before iteration ``i`` (the reference); it returns
both weights and the ``tau`` values read before and after the updates. ``how``: ``"fit"``
(a custom ``train_step``; on JAX a stateless one, :func:`jax_train_step`, compared with
the same jitted step and plain Keras Adam), ``"loop"`` (a custom loop, ``with
clock.iteration():``, inside ``tf.function`` on TensorFlow). Also: the loop without the
iteration (:func:`without_iteration`) and a momentum teacher inside the step
(:func:`teacher_run`). Run as a script with the ways to run (default: all) it prints one
JSON line of results (``python iteration_order_worker.py loop fit``).
"""

from __future__ import annotations

import functools
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


@functools.cache  # the same plain run for every test of an order (its result is only read)
def reference(order: str) -> dict[str, Any]:
    """Plain Keras Adam, learning rates set to schedule(i) before iteration i."""
    import keras

    import hyperstep as hs

    generator, discriminator = networks()
    g_opt, d_opt = keras.optimizers.Adam(), keras.optimizers.Adam()
    built(generator, discriminator, g_opt, d_opt)
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


def built(generator: Any, discriminator: Any, g_opt: Any, d_opt: Any) -> None:
    """Build both optimizers before the step is traced, as ``fit`` builds its optimizer: a
    ``tf.function`` whose first trace creates variables traces twice. (The test of the
    generator first without the iteration keeps them unbuilt: built inside the first trace.)"""
    g_opt.build(generator.trainable_variables)
    d_opt.build(discriminator.trainable_variables)


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
    built(generator, discriminator, g_opt, d_opt)
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


def jax_train_step(model: Any, order: str, parts: Any, read_tau: Any) -> Any:
    """A JAX ``train_step(state, data)`` updating in ``order``: Keras's JAX ``fit`` carries
    ``model.optimizer``'s variables (the generator's) in its state, the discriminator's
    optimizer's as variables the model tracks (``model.non_trainable_variables``)."""
    import jax
    import keras

    generator, discriminator, g_opt, d_opt = parts

    def train_step(state: Any, data: Any) -> Any:
        noise, real = data
        refs = [
            model.trainable_variables,
            model.non_trainable_variables,
            model.optimizer.variables,
            model.metrics_variables,
        ]
        current = {}
        for rs, vs in zip(refs, state, strict=False):  # (no metrics: three lists)
            current.update(zip(map(id, rs), vs, strict=True))
        every = {id(r): r for rs in refs for r in rs}

        def scope(variables: Any = (), values: Any = ()) -> Any:
            held = {**current, **{id(r): v for r, v in zip(variables, values, strict=True)}}
            return keras.StatelessScope(state_mapping=[(every[i], v) for i, v in held.items()])

        with scope():
            before = read_tau()
        for letter in order:
            net, opt, k = (discriminator, d_opt, 0) if letter == "D" else (generator, g_opt, 1)
            variables = net.trainable_variables

            def pure(values: Any, variables: Any = variables, k: int = k) -> Any:
                with scope(variables, values):
                    return losses(generator, discriminator, noise, real)[k]

            trained = [current[id(v)] for v in variables]
            grads = jax.grad(pure)(trained)
            with scope():  # (a hyperparameter on the clock is read through the scope)
                trained, opt_values = opt.stateless_apply(
                    [current[id(v)] for v in opt.variables], grads, trained
                )
            current.update(zip(map(id, variables), trained, strict=True))
            current.update(zip(map(id, opt.variables), opt_values, strict=True))
        with scope():
            after = read_tau()
        return {"before": before, "after": after}, tuple(
            [current[id(r)] for r in rs] for rs in refs[: len(state)]
        )

    return train_step


def in_fit(order: str, plain: bool = False) -> dict[str, Any]:
    """``fit`` with a custom ``train_step`` (``plain``: plain Keras Adam, learning rates set
    to schedule(i) before batch i by a callback: the reference for JAX's jitted ``fit``)."""
    import keras

    import hyperstep as hs

    if plain:
        generator, discriminator = networks()
        g_opt, d_opt = keras.optimizers.Adam(), keras.optimizers.Adam()
        rates = hs.parse(G_RATE), hs.parse(D_RATE)
        tau, clock = None, None
        read_tau: Any = lambda: 0.0  # noqa: E731
    else:
        generator, discriminator, g_opt, d_opt, tau, clock = scheduled_parts()
        read_tau = lambda: tau.value  # noqa: E731
    parts = (generator, discriminator, g_opt, d_opt)
    iteration = make_iteration(order, parts, read_tau)
    stateless = keras.backend.backend() == "jax"
    seen: list[Any] = []

    class GAN(keras.Model):
        def __init__(self) -> None:
            super().__init__()
            self.generator, self.discriminator = generator, discriminator
            self.tau = tau
            if stateless:  # the discriminator's optimizer goes through fit's state too
                g_opt.build(generator.trainable_variables)
                d_opt.build(discriminator.trainable_variables)
                self.d_optimizer_variables = list(d_opt.variables)
                self.jax_step = jax_train_step(self, order, parts, read_tau)

        def call(self, noise: Any) -> Any:
            return self.generator(noise)

        def train_step(self, *args: Any) -> Any:
            if stateless:
                return self.jax_step(*args)
            noise, real = args[0]
            before, after = iteration(noise, real)
            return {"before": before, "after": after}

    model = GAN()
    model.compile(optimizer=g_opt)

    class Record(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            if plain:
                _ = self.model  # (on JAX this puts fit's state back in the variables)
                for opt, rate in zip((g_opt, d_opt), rates, strict=True):
                    opt.learning_rate = float(keras.ops.convert_to_numpy(rate(batch)))

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            seen.append((float(logs["before"]), float(logs["after"])))

    noise = np.concatenate([n for n, _ in batches()])
    real = np.concatenate([r for _, r in batches()])
    model.fit(noise, real, batch_size=8, epochs=1, shuffle=False, verbose=0, callbacks=[Record()])
    return {
        "weights": weights(generator, discriminator),
        "before": [b for b, _ in seen],
        "after": [a for _, a in seen],
        "step": -1 if clock is None else int(keras.ops.convert_to_numpy(clock.step)),
    }


def compare(order: str, how: str) -> dict[str, Any]:
    import keras

    expected = reference(ORDERS[order])
    found = (custom_loop if how == "loop" else in_fit)(ORDERS[order])
    if how == "fit" and keras.backend.backend() == "jax":  # jitted: the same step, plain Keras
        expected = {**expected, "weights": in_fit(ORDERS[order], plain=True)["weights"]}
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


def without_iteration(order: str) -> dict[str, Any]:
    """The custom loop without ``clock.iteration()``: how many of hyperstep's warnings that
    an update read a step already advanced, and whether the weights still equal the
    reference (the generator, created first, advances the clock after its update)."""
    import warnings

    import keras

    expected = reference(ORDERS[order])
    generator, discriminator, g_opt, d_opt, _, clock = scheduled_parts()
    step = compiled(
        make_iteration(ORDERS[order], (generator, discriminator, g_opt, d_opt), lambda: 0.0)
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for noise, real in batches():
            step(noise, real)
    found = weights(generator, discriminator)
    return {
        "order": order,
        "how": "without_iteration",
        "warnings": sum("advanced the clock" in str(w.message) for w in caught),
        "weights_bitwise": all(
            np.array_equal(np.asarray(a, "float32"), np.asarray(b, "float32"))
            for a, b in zip(found, expected["weights"], strict=True)
        ),
        "step": int(keras.ops.convert_to_numpy(clock.step)),
    }


# ---- a momentum teacher (hs.EMA.network) inside the step ----------------------------------
TEACHER_STEPS = 6


def student_net() -> Any:
    import keras

    model = keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(4, activation="tanh"), keras.layers.Dense(2)]
    )
    rng = np.random.default_rng(1)
    model.set_weights([rng.normal(size=w.shape).astype("float32") for w in model.get_weights()])
    return model


def teacher_batches() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [rng.normal(size=(8, 3)).astype("float32") for _ in range(TEACHER_STEPS)]


def byol_loss(student: Any, teacher: Any, x: Any) -> Any:
    """The student regresses the teacher's (fixed) output."""
    from keras import ops

    target = ops.stop_gradient(teacher(x))
    return ops.mean((student(x) - target) ** 2) + 0.1 * ops.mean(student(x) ** 2)


def teacher_run() -> dict[str, Any]:
    """``hs.EMA(init="initial", form="momentum").network(student)`` used in a custom loop's
    step (``with clock.iteration():``), against plain Keras SGD and the hand-written
    ``teacher = tau * teacher + (1 - tau) * student`` with ``tau = TAU(i)`` at iteration i;
    the same teacher kept by ``hs.EMA`` without an optimizer (``clock=``)."""
    import keras

    import hyperstep as hs

    student = student_net()
    opt = hs.scheduled(keras.optimizers.SGD(0.05))
    ema = hs.EMA(opt, decay=TAU, init="initial", form="momentum")
    teacher = ema.network(student)

    def step(x: Any) -> Any:
        with opt.clock.iteration():
            grads = gradients(lambda: byol_loss(student, teacher, x), student.trainable_variables)
            before = ema.decay.value
            opt.apply(grads, student.trainable_variables)
            return before, ema.decay.value  # BYOL reads tau after the update

    seen = [compiled(step)(x) for x in teacher_batches()]

    plain_student = student_net()
    plain_teacher = keras.models.clone_model(plain_student)
    plain_teacher.set_weights(plain_student.get_weights())
    plain = keras.optimizers.SGD(0.05)
    tau_of = hs.parse(TAU)

    def plain_step(x: Any, tau: Any) -> None:
        variables = plain_student.trainable_variables
        plain.apply(
            gradients(lambda: byol_loss(plain_student, plain_teacher, x), variables), variables
        )
        for t, s in zip(plain_teacher.trainable_variables, variables, strict=True):
            t.assign(tau * t.value + (1 - tau) * s.value)

    taus = []
    for i, x in enumerate(teacher_batches()):
        tau = tau_of(i)
        taus.append(float(keras.ops.convert_to_numpy(tau)))
        compiled(plain_step)(x, tau)

    # the same teacher kept by hs.EMA without an optimizer (the student trained by plain SGD)
    alone_student, alone_opt, clock = student_net(), keras.optimizers.SGD(0.05), hs.Clock()
    alone = hs.EMA(decay=TAU, init="initial", form="momentum", clock=clock)
    alone_teacher = alone.network(alone_student)

    def alone_step(x: Any) -> None:
        variables = alone_student.trainable_variables
        with clock.iteration():
            loss = lambda: byol_loss(alone_student, alone_teacher, x)  # noqa: E731
            alone_opt.apply(gradients(loss, variables), variables)
            alone.update()

    for x in teacher_batches():
        compiled(alone_step)(x)

    def same(a: Any, b: Any) -> bool:
        return all(
            np.array_equal(u, v) for u, v in zip(a.get_weights(), b.get_weights(), strict=True)
        )

    return {
        "how": "teacher",
        "teacher_bitwise": same(teacher, plain_teacher),
        "student_bitwise": same(student, plain_student),
        "teacher_moved": not same(teacher, student_net()),
        "alone_bitwise": same(alone_teacher, plain_teacher),
        "alone_step": int(keras.ops.convert_to_numpy(clock.step)),
        "tau_equals_schedule": [float(keras.ops.convert_to_numpy(b)) for b, _ in seen] == taus,
        "tau_after_equals_before": all(
            float(keras.ops.convert_to_numpy(a)) == float(keras.ops.convert_to_numpy(b))
            for b, a in seen
        ),
        "step": int(keras.ops.convert_to_numpy(opt.clock.step)),
    }


def main(ways: list[str]) -> None:
    rows: list[dict[str, Any]] = []
    for how in ways:
        if how == "without_iteration":
            rows += [without_iteration(order) for order in ("g_then_d", "d_then_g")]
        elif how == "teacher":
            rows.append(teacher_run())
        else:
            rows += [compare(order, how) for order in ORDERS]
    print("RESULT " + json.dumps(rows))


if __name__ == "__main__":
    main(sys.argv[1:] or ["loop", "fit", "without_iteration", "teacher"])
