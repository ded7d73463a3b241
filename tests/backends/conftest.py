"""Run a worker script once per Keras backend, each in its own process, all at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

#: a hang guard, not a speed check (see tests/conftest.py): HYPERSTEP_TEST_TIMEOUT=seconds
HANG_TIMEOUT = float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600"))


def run_workers(
    worker: Path, backends: Iterable[str], timeout: float | None = None
) -> dict[str, Any]:
    """Start ``worker`` under every backend at once; return ``{backend: its RESULT JSON}``.

    ``KERAS_BACKEND`` is fixed when Keras is imported, so each backend needs a process; the
    worker prints one line ``RESULT <json>``. A worker that fails or prints none fails the
    calling test with the end of its standard error. ``timeout`` (default: the generous
    ``HANG_TIMEOUT``) only catches a hung worker; its message says so.
    """
    timeout = HANG_TIMEOUT if timeout is None else timeout
    processes = {}
    for backend in backends:
        env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
        env.pop("JAX_ENABLE_X64", None)
        processes[backend] = subprocess.Popen(
            [sys.executable, str(worker)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    found = {}
    for backend, process in processes.items():
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for other in processes.values():
                other.kill()
            out, err = process.communicate()
            pytest.fail(
                f"{backend} worker {worker.name} still ran after {timeout:.0f} s and was "
                "killed (a hang guard; set HYPERSTEP_TEST_TIMEOUT=seconds on a very slow "
                f"machine):\n{err[-4000:]}"
            )
        lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
        assert process.returncode == 0 and lines, f"{backend} worker failed:\n{err[-4000:]}"
        found[backend] = json.loads(lines[-1].removeprefix("RESULT "))
    return found


@pytest.fixture(scope="session")
def workers() -> Callable[..., dict[str, Any]]:
    """:func:`run_workers`, for the module-scoped ``results`` fixtures of this folder."""
    return run_workers
