"""Why Ftrl and ScheduleFreeAdamW on TensorFlow graphs are compared with Grappler's rewrites
off (tests/backends/dtypes_worker.py): Grappler rewrites plain Keras's own graph, not
hyperstep's. With Python-float hyperparameters, plain Keras in a ``tf.function`` is not
bitwise plain Keras eager: the arithmetic optimizer turns Ftrl's ``power(x, 0.5)`` into
``sqrt(x)`` and constant folding ScheduleFreeAdamW's ``x / beta_1`` into a multiply, rewrites
of constants that a value read from a variable never gets. ``hs.scheduled`` in a graph, with
Grappler on, is bitwise plain Keras eager (the formula as Keras writes it), as is plain
Keras's graph with that one rewrite off."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs

STEPS = 4
#: optimizer, its arguments, the Grappler rewrite that changes plain Keras's graph
CASES = {
    "Ftrl": (
        keras.optimizers.Ftrl,
        {"l1_regularization_strength": 0.01, "l2_regularization_strength": 0.01},
        "arithmetic_optimization",
    ),
}
if hasattr(keras.optimizers, "ScheduleFreeAdamW"):  # not in the oldest Keras supported
    CASES["ScheduleFreeAdamW"] = (keras.optimizers.ScheduleFreeAdamW, {}, "constant_folding")


@contextlib.contextmanager
def _without(rewrite: str | None) -> Iterator[None]:
    if rewrite is None:
        yield
        return
    was = tf.config.optimizer.get_experimental_options().get(rewrite, True)
    tf.config.optimizer.set_experimental_options({rewrite: False})
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options({rewrite: was})


def _train(optimizer: Any, dtype: str, graph: bool, rewrite_off: str | None = None) -> np.ndarray:
    rng = np.random.RandomState(0)
    variables = [
        keras.Variable(rng.normal(size=(4, 3)), dtype=dtype),
        keras.Variable(rng.normal(size=(3,)), dtype=dtype),
    ]
    grads = [
        [tf.constant(rng.normal(size=v.shape), dtype) for v in variables] for _ in range(STEPS)
    ]
    optimizer.build(variables)

    def step(gradients: list[Any]) -> None:
        optimizer.apply(gradients, variables)

    run = tf.function(step) if graph else step
    with _without(rewrite_off):
        for gradients in grads:
            run(gradients)
    return np.concatenate([v.numpy().astype("float64").ravel() for v in variables])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(CASES))
def test_grappler_rewrites_plain_keras_graph_and_hyperstep_graph_is_plain_keras_eager(
    name: str, dtype: str
) -> None:
    cls, arguments, rewrite = CASES[name]

    def plain() -> Any:
        return cls(learning_rate=0.05, **arguments)

    eager = _train(plain(), dtype, graph=False)
    # plain Keras itself: its graph is not its eager result, but is with the rewrite off
    graph = _train(plain(), dtype, graph=True)
    assert not np.array_equal(graph, eager)
    assert np.max(np.abs(graph - eager)) < 1e-6  # a last-bit difference, not another formula
    np.testing.assert_array_equal(_train(plain(), dtype, graph=True, rewrite_off=rewrite), eager)
    # hyperstep, Grappler on: the formula as Keras writes it (its values are variables)
    np.testing.assert_array_equal(_train(hs.scheduled(plain()), dtype, graph=True), eager)
    np.testing.assert_array_equal(_train(hs.scheduled(plain()), dtype, graph=False), eager)
