"""Units of hyperstep.backends.torch that stay whatever moves around them: ``kernels``,
``applies`` and the per-variable paths torch never takes (the fused
update itself against torch's and Keras's: tests/backends/test_torch_fused.py)."""

from __future__ import annotations

import keras
import pytest
import torch

pytestmark = pytest.mark.backend("torch")


def _backend():
    from hyperstep.backends import torch as backend

    return backend


def test_kernels_is_torch_fused_adam() -> None:
    expected = hasattr(torch, "_fused_adam_") and hasattr(torch, "_fused_adamw_")
    assert _backend().kernels() is expected


def test_applies_to_dense_gradients_of_the_variable_dtype_and_device() -> None:
    backend = _backend()
    variable = keras.Variable(torch.zeros(3))
    good = torch.ones(3)
    assert backend.applies([good], [variable]) is backend.kernels()
    assert not backend.applies([good.double()], [variable])  # another dtype
    assert not backend.applies([good.to_sparse()], [variable])  # not strided
    assert not backend.applies([None], [variable])
    with keras.StatelessScope():
        assert not backend.applies([good], [variable])


def test_the_per_variable_paths_are_never_torch() -> None:
    backend = _backend()
    variable, grad = keras.Variable(torch.zeros(2)), torch.ones(2)
    sgd = keras.optimizers.SGD()
    assert not backend.adam_applies(sgd, grad, variable)
    assert not backend.sgd_applies(sgd, grad, variable)
    assert not backend.rmsprop_applies(sgd, grad, variable)
