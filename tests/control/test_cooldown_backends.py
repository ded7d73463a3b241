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
def test_jax_fit_says_the_cooldown_is_not_carried_instead_of_ignoring_it() -> None:
    result = run("jax")
    assert result.get("error") == "FrozenValueError", result
    assert "cooldown_start" in result["message"]
