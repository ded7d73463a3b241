"""A hyperparameter written during JAX fit (one process): from a batch callback and from
another thread, ``hp.set(0.0)`` trains from the next update on and outlives fit, and reads
there return the current value (Keras's trainer holds the state during fit); so does a
direct ``hp.scale.assign(0.0)`` or ``hp.override.assign(0.0)`` from a batch callback."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

WORKER = Path(__file__).with_name("jax_fit_worker.py")


@pytest.fixture(scope="module")
def result() -> dict:
    env = {**os.environ, "KERAS_BACKEND": "jax", "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, str(WORKER)], env=env, capture_output=True, text=True, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


@pytest.mark.parametrize(
    "how", ["callback", "thread", "scale", "override", "scale-begin", "override-begin"]
)
def test_set_during_jax_fit_trains_from_the_next_step_and_outlives_fit(
    result: dict, how: str
) -> None:
    case = result[how]
    assert case["reads"] == [pytest.approx(0.01), 0.0]  # read before and after the write
    assert case["after"] == 0.0  # not put back by the end of fit
    assert case["diff"] < 1e-7  # two updates at 0.01, then none (plain Keras SGD)
