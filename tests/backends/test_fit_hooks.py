"""The hooks :mod:`hyperstep.backends.fit` installs in ``keras.callbacks.CallbackList``, per
backend: fit's start and epochs everywhere, each batch only on JAX."""

from __future__ import annotations

import keras
import pytest

from hyperstep.backends import fit  # noqa: F401  (wraps Keras at its import)

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")


@pytest.mark.parametrize("name", ["on_train_begin", "on_epoch_begin"])
def test_fit_start_and_epochs_are_followed_on_every_backend(name: str) -> None:
    assert getattr(keras.callbacks.CallbackList, name)._hyperstep


@pytest.mark.parametrize("name", ["on_train_batch_begin", "on_train_batch_end"])
def test_a_batch_costs_hyperstep_nothing_outside_jax(name: str) -> None:
    """Outside JAX's fit the batch hooks are Keras's own (no wrapper runs per batch); on JAX
    they are hyperstep's (writes reach the state the trainer holds)."""
    hook = getattr(keras.callbacks.CallbackList, name)
    assert getattr(hook, "_hyperstep", False) == (keras.backend.backend() == "jax")
