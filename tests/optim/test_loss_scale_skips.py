"""Under Keras's ``LossScaleOptimizer`` a skipped update (the gradients overflowed) is not a
step: the clock equals the wrapper's ``iterations``, every value is the schedule at the
updates applied, and the weights are bitwise those of plain Keras with the same Keras
schedule, with the overflow forced at chosen batches (a sample weight of 1e38, which the
loss scale takes past float32's range). In ``fit`` and in a custom loop, for ``hs.scheduled``
and ``hs.StepOptimizer``, stacked with ``hs.SkipNonFinite`` and with gradient accumulation;
and as the user met it, under Keras's ``mixed_float16`` policy, where ``compile`` wraps the
optimizer itself and the model computes in float16."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import keras
import numpy as np
import pytest

import hyperstep as hs

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

BATCHES, SIZE = 16, 4
OVERFLOW = (3, 9)  # the batches whose gradients overflow under the loss scale


def _schedule() -> Any:
    """The Keras schedule both runs use: ``1e-2 * 0.5 ** (step / 8)``."""
    return keras.optimizers.schedules.ExponentialDecay(1e-2, decay_steps=8, decay_rate=0.5)


class _PerUpdate(keras.optimizers.schedules.LearningRateSchedule):
    """``schedule(step // every)``: Keras's schedule reads the micro-steps under gradient
    accumulation, hyperstep's clock the updates applied."""

    def __init__(self, every: int) -> None:
        self.every = every

    def __call__(self, step: Any) -> Any:
        return _schedule()(keras.ops.floor_divide(step, self.every))


def _data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(BATCHES * SIZE, 3)).astype("float32")
    y = rng.normal(size=(BATCHES * SIZE, 1)).astype("float32")
    weight = np.ones(BATCHES * SIZE, "float32")
    for batch in OVERFLOW:
        weight[batch * SIZE : (batch + 1) * SIZE] = 1e38
    return x, y, weight


def _model() -> keras.Model:
    keras.utils.set_random_seed(1)
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])


class _Seen(keras.callbacks.Callback):
    """The learning rate the next update reads (Keras: the schedule at the inner optimizer's
    own count), the wrapper's ``iterations`` and the clock, after each batch."""

    def __init__(self, clock: Any) -> None:
        super().__init__()
        self.clock = clock
        self.rates: list[float] = []
        self.iterations: list[int] = []
        self.steps: list[int | None] = []

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        optimizer = self.model.optimizer
        self.rates.append(float(keras.ops.convert_to_numpy(optimizer.learning_rate)))
        self.iterations.append(int(optimizer.iterations))
        self.steps.append(None if self.clock is None else int(self.clock.step))


def _fit(optimizer: Any, *, scaled: bool = True, wrap: bool = True) -> tuple[keras.Model, _Seen]:
    """Train on the data under a LossScaleOptimizer (``wrap=False``: the one ``compile`` adds
    under the ``mixed_float16`` policy); ``scaled=False``: without one, on the batches that do
    not overflow only."""
    model = _model()
    wrapped = scaled and wrap
    model.compile(keras.optimizers.LossScaleOptimizer(optimizer) if wrapped else optimizer, "mse")
    seen = _Seen(getattr(optimizer, "clock", None))
    x, y, weight = _data()
    if not scaled:
        kept = np.repeat([b not in OVERFLOW for b in range(BATCHES)], SIZE)
        x, y, weight = x[kept], y[kept], weight[kept]
    model.fit(
        x, y, sample_weight=weight, batch_size=SIZE, shuffle=False, verbose=0, callbacks=[seen]
    )
    return model, seen


def _hyperstep(kind: str, accumulate: int | None, momentum: float = 0.0) -> Any:
    schedule = _schedule()
    sgd = keras.optimizers.SGD(momentum=momentum, gradient_accumulation_steps=accumulate)
    if kind == "scheduled":
        return hs.scheduled(sgd, learning_rate=schedule)
    if kind == "step_optimizer":
        return hs.StepOptimizer(
            "sgd",
            learning_rate=schedule,
            momentum=momentum,
            gradient_accumulation_steps=accumulate,
        )
    return hs.SkipNonFinite(hs.scheduled(sgd, learning_rate=schedule))


def _assert_bitwise(model: keras.Model, reference: keras.Model) -> None:
    for got, want in zip(model.get_weights(), reference.get_weights(), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("kind", "accumulate"),
    [("scheduled", None), ("step_optimizer", None), ("skip_non_finite", None), ("scheduled", 2)],
)
def test_fit_counts_only_the_updates_applied_bitwise_keras(kind: str, accumulate: int | None):
    every = accumulate or 1
    keras_schedule = _schedule() if accumulate is None else _PerUpdate(every)
    reference, expected = _fit(
        keras.optimizers.SGD(learning_rate=keras_schedule, gradient_accumulation_steps=accumulate)
    )
    updates = (BATCHES - len(OVERFLOW)) // every
    assert expected.iterations[-1] == updates  # Keras skipped the overflowed batches
    model, seen = _fit(_hyperstep(kind, accumulate))
    assert seen.steps == seen.iterations == expected.iterations
    assert seen.rates == expected.rates  # the schedule at the updates applied, bitwise
    if kind == "step_optimizer":  # its SGD rule is not Keras's SGD bit for bit on JAX and
        # torch, wrapped or not: the same optimizer trained on the applied batches alone
        reference, _ = _fit(_hyperstep(kind, accumulate), scaled=False)
    _assert_bitwise(model, reference)


@pytest.fixture
def mixed_float16() -> Iterator[None]:
    """Keras's ``mixed_float16`` policy, set as a user sets it; the previous policy after."""
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_float16")
    yield
    keras.mixed_precision.set_global_policy(previous)


class _KerasSGD(keras.optimizers.SGD):
    """Keras's SGD with its own ``update_step``, ``m = momentum * m - learning_rate * g;
    w = w + m``, as ``StepOptimizer``'s SGD rule computes it: on torch ``keras.optimizers.SGD``
    is a foreach kernel whose ``alpha`` add rounds once where that formula rounds twice (a
    subclass keeps Keras's formula), and with ``momentum = 0`` Keras's ``w + g * -lr`` is
    fused on JAX."""


MOMENTUM = 0.5


@pytest.mark.parametrize(
    ("kind", "accumulate"),
    [
        ("scheduled", None),
        ("step_optimizer", None),
        ("skip_non_finite", None),
        ("scheduled", 2),
        ("step_optimizer", 2),
    ],
)
def test_mixed_float16_policy_counts_only_the_updates_applied_bitwise_keras(
    mixed_float16: None, kind: str, accumulate: int | None
):
    every = accumulate or 1
    keras_schedule = _schedule() if accumulate is None else _PerUpdate(every)
    sgd = _KerasSGD if kind == "step_optimizer" else keras.optimizers.SGD
    reference, expected = _fit(
        sgd(
            learning_rate=keras_schedule, momentum=MOMENTUM, gradient_accumulation_steps=accumulate
        ),
        wrap=False,
    )
    assert reference.layers[0].compute_dtype == "float16"
    assert isinstance(reference.optimizer, keras.optimizers.LossScaleOptimizer)
    counts = expected.iterations
    assert all(counts[b] == counts[b - 1] for b in OVERFLOW)  # Keras skipped them
    model, seen = _fit(_hyperstep(kind, accumulate, MOMENTUM), wrap=False)
    assert isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
    assert seen.steps == seen.iterations == expected.iterations
    assert seen.rates == expected.rates  # the schedule at the updates applied, bitwise
    _assert_bitwise(model, reference)


def _gradients() -> list[np.ndarray]:
    """One gradient per step (already scaled, as a LossScaleOptimizer takes them); infinite
    at the steps in ``OVERFLOW``."""
    rng = np.random.default_rng(2)
    found = [rng.normal(size=3).astype("float32") * 2.0**15 for _ in range(BATCHES)]
    for step in OVERFLOW:
        found[step][1] = np.inf
    return found


def _loop(optimizer: Any, *, iteration: bool) -> tuple[np.ndarray, list[float], list[int]]:
    """A custom loop applying ``_gradients()`` through a LossScaleOptimizer (in
    ``tf.function`` on TensorFlow, ``jax.jit`` with ``stateless_apply`` on JAX, eagerly on
    torch), ``with clock.iteration():`` around each where ``iteration``; the weights, the
    learning rate and the wrapper's ``iterations`` after each step."""
    wrapper = keras.optimizers.LossScaleOptimizer(optimizer)
    weight = keras.Variable(np.ones(3, "float32"))
    wrapper.build([weight])
    clock = getattr(optimizer, "clock", None)
    scope = clock.iteration if iteration and clock is not None else contextlib.nullcontext
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        @jax.jit
        def step(values: Any, weights: Any, gradient: Any) -> Any:
            weights, values = wrapper.stateless_apply(values, [gradient], weights)
            return values, weights

        values, weights = [v.value for v in wrapper.variables], [weight.value]
    else:

        def apply(gradient: Any) -> None:
            with scope():
                wrapper.apply([gradient], [weight])

        if backend == "tensorflow":
            import tensorflow as tf

            apply = tf.function(apply)
    rates, iterations = [], []
    for gradient in _gradients():
        if backend == "jax":
            values, weights = step(values, weights, gradient)
            for variable, value in zip(wrapper.variables, values, strict=True):
                variable.assign(value)
            weight.assign(weights[0])
        else:
            apply(keras.ops.convert_to_tensor(gradient))
        rates.append(float(keras.ops.convert_to_numpy(wrapper.learning_rate)))
        iterations.append(int(wrapper.iterations))
        if clock is not None:
            assert int(clock.step) == iterations[-1]
    return keras.ops.convert_to_numpy(weight), rates, iterations


# (JAX's jitted loop updates through stateless_apply, which clock.iteration() refuses)
ITERATION = pytest.param(
    True, id="clock.iteration", marks=pytest.mark.backend("tensorflow", "torch")
)


@pytest.mark.parametrize("iteration", [pytest.param(False, id="alone"), ITERATION])
@pytest.mark.parametrize("kind", ["scheduled", "skip_non_finite"])
def test_custom_loop_counts_only_the_updates_applied_bitwise_keras(kind: str, iteration: bool):
    weight, rates, iterations = _loop(
        keras.optimizers.SGD(learning_rate=_schedule()), iteration=False
    )
    assert iterations[-1] == BATCHES - len(OVERFLOW)
    got_weight, got_rates, got_iterations = _loop(_hyperstep(kind, None), iteration=iteration)
    assert got_iterations == iterations  # each step asserted the clock equals them
    assert got_rates == rates
    np.testing.assert_array_equal(got_weight, weight)
