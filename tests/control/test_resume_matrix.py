"""The save/load matrix across fresh processes (``resume_worker.py``): a plateau, a cooldown
started and one not started, groups (loaded in another order), SWA and EMA averages, each
saved as ``.keras``, ``save_weights`` and (TensorFlow) ``tf.train.Checkpoint``, loaded in a
new process and trained on: bitwise the uninterrupted run, with no hyperstep warning. Two
processes per backend (save, load) run every cell; the full matrix on the three backends
is slow, one representative row runs on the current backend. The save runs in this
process when the backend is the pass's (a process would only add a backend import: the
fresh process is the one that loads)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import keras
import pytest

WORKER = Path(__file__).with_name("resume_worker.py")
STATES = ["plateau", "cooldown_started", "cooldown_pending", "groups", "swa", "ema"]


def _run(backend: str, phase: str, folder: Path, states: list[str]) -> dict[str, Any]:
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("JAX_ENABLE_X64", None)
    done = subprocess.run(
        [sys.executable, str(WORKER), phase, str(folder), *states],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600")),  # a hang guard only
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"{backend} {phase}:\n{done.stderr[-4000:]}"
    return json.loads(lines[-1].removeprefix("RESULT "))


def _save(backend: str, folder: Path, states: list[str]) -> dict[str, Any]:
    if backend != keras.backend.backend():
        return _run(backend, "save", folder, states)
    spec = importlib.util.spec_from_file_location("hs_resume_worker", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.run("save", folder, states)  # type: ignore[no-any-return]


def _check(backend: str, folder: Path, states: list[str]) -> None:
    saved = _save(backend, folder, states)
    loaded = _run(backend, "load", folder, states)
    formats = 3 if backend == "tensorflow" else 2
    results = loaded["results"]
    assert len(results) == formats * len(states)
    bad = {cell: found for cell, found in results.items() if not found["equal"]}
    assert not bad, (backend, bad)
    assert saved["warnings"] == loaded["warnings"] == []


def test_a_started_cooldown_and_groups_resume_bitwise_in_a_fresh_process(tmp_path: Path) -> None:
    _check(keras.backend.backend(), tmp_path, ["cooldown_started", "groups"])


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["tensorflow", "jax", "torch"])
def test_every_state_resumes_bitwise_in_a_fresh_process(tmp_path: Path, backend: str) -> None:
    _check(backend, tmp_path, STATES)
