"""hs.Cooldown in fit on the torch and JAX backends (each in its pytest pass)."""

from pathlib import Path

import numpy as np
import pytest

WORKER = Path(__file__).with_name("cooldown_worker.py")


@pytest.mark.slow
@pytest.mark.backend("torch")
def test_torch_fit_follows_the_cooldown_and_trains_like_keras_set_per_step(workers) -> None:
    result = workers(WORKER, ["torch"])["torch"]
    assert result["start"] == 4
    np.testing.assert_allclose(result["rates"], result["expected"], rtol=1e-6, atol=1e-8)
    assert result["diff"] < 1e-6  # float32 rounding of the per-step arithmetic


@pytest.mark.slow
@pytest.mark.backend("jax")
def test_jax_fit_follows_the_cooldown_and_trains_like_keras_set_per_step(workers) -> None:
    # the optimizer tracks the cooldown's variable when it is built, so the jitted step
    # carries it (a Cooldown made after the optimizer, before fit)
    result = workers(WORKER, ["jax"])["jax"]
    assert "error" not in result, result
    assert result["start"] == 4
    np.testing.assert_allclose(result["rates"], result["expected"], rtol=1e-6, atol=1e-8)
    assert result["diff"] < 1e-6  # float32 rounding of the per-step arithmetic
