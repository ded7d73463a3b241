"""Keras's own optimizer test files (``tests/optim/keras_suite/``, Keras 3.15.1, every
optimizer wrapped by ``hs.scheduled``) on every backend: the suite collects them on the
backend it runs on; here each other backend runs them in a subprocess (about two minutes
each on two CPU cores, so slow)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import keras
import pytest

SUITE = Path(__file__).with_name("keras_suite")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_keras_optimizer_test_files_pass_on_every_backend(backend: str) -> None:
    if backend == keras.backend.backend():
        pytest.skip("collected in this run (tests/optim/keras_suite)")
    if tuple(int(part) for part in keras.__version__.split(".")[:2]) < (3, 15):
        pytest.skip("the files are Keras 3.15.1's")
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    process = subprocess.run(
        [sys.executable, "-m", "pytest", str(SUITE), "-q", "-p", "no:cacheprovider", "-rfE"],
        env=env,
        capture_output=True,
        text=True,
        timeout=float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600")),
        cwd=SUITE.parents[2],
    )
    assert process.returncode == 0, process.stdout[-6000:] + process.stderr[-2000:]
    progress = "".join(line.split(" [")[0] for line in process.stdout.splitlines()[:3])
    assert progress.count(".") > 90, process.stdout[-2000:]  # the tests ran (about 105)
