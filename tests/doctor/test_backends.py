"""The doctor's catalogue on JAX and torch: one pytest pass per backend, in its own process.

``KERAS_BACKEND`` is fixed when Keras is imported, so each backend's pass is
``KERAS_BACKEND=jax python -m pytest tests/doctor/... tests/cli/test_doctor_cli.py``: every
code found on that backend's own mistakes, every healthy model clean (ResNet50 included), the
callback in that backend's ``fit`` and the CLI's ``--json`` and exit status. This file runs in
the TensorFlow pass (the default) and starts the others; under them it does nothing.
"""

import os
import subprocess
import sys
from pathlib import Path

import keras
import pytest

import hyperstep

ROOT = Path(__file__).resolve().parents[2]
FILES = [
    "tests/doctor/test_codes.py",
    "tests/doctor/test_healthy.py",
    "tests/doctor/test_callback.py",
    "tests/doctor/test_report.py",
    "tests/cli/test_doctor_cli.py",
]


def run_pass(backend, marker, timeout, files=FILES):
    """``pytest files -m marker`` with ``KERAS_BACKEND=backend``; fails with its output."""
    source = str(Path(hyperstep.__file__).parents[1])
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env["PYTHONPATH"] = os.pathsep.join([source, env.get("PYTHONPATH", "")])
    env.pop("JAX_ENABLE_X64", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *files, "-m", marker, "-p", "no:cacheprovider"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    tail = (done.stdout + done.stderr)[-4000:]
    assert done.returncode == 0, tail
    assert " passed" in done.stdout and "failed" not in done.stdout, tail


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_the_doctor_catalogue_passes_on_the_backend(backend, hang_timeout):
    if keras.backend.backend() != "tensorflow":
        return  # this pass is itself one of the per-backend passes
    run_pass(backend, "not slow", hang_timeout)


@pytest.mark.slow  # ResNet50 and MobileNetV2 on eager JAX: minutes of per-primitive compiling
def test_the_big_healthy_models_have_no_findings_on_jax(hang_timeout):
    if keras.backend.backend() != "tensorflow":
        return
    run_pass("jax", "slow", hang_timeout, ["tests/doctor/test_healthy.py"])
