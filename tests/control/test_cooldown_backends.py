"""hs.Cooldown in fit on the torch and JAX backends (one process each; slow: imports)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

WORKER = Path(__file__).with_name("cooldown_worker.py")


def run(backend: str) -> dict:
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, str(WORKER)], env=env, capture_output=True, text=True, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


@pytest.mark.slow
def test_torch_fit_follows_the_cooldown_and_trains_like_keras_set_per_step() -> None:
    result = run("torch")
    assert result["start"] == 4
    np.testing.assert_allclose(result["rates"], result["expected"], rtol=1e-6, atol=1e-8)
    assert result["diff"] < 1e-6  # float32 rounding of the per-step arithmetic


@pytest.mark.slow
def test_jax_fit_follows_the_cooldown_and_trains_like_keras_set_per_step() -> None:
    # the optimizer tracks the cooldown's variable when it is built, so the jitted step
    # carries it (a Cooldown made after the optimizer, before fit)
    result = run("jax")
    assert "error" not in result, result
    assert result["start"] == 4
    np.testing.assert_allclose(result["rates"], result["expected"], rtol=1e-6, atol=1e-8)
    assert result["diff"] < 1e-6  # float32 rounding of the per-step arithmetic
