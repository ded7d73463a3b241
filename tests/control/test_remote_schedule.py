"""``schedule`` replaces a schedule with no retrace and ``cooldown`` cools any hyperparameter.

The run (remote_schedule_worker.py) is steered from its own callback: ``schedule
learning_rate=cosine(...)``, ``cooldown weight_decay --steps 16`` (weight_decay had no
``hs.Cooldown``), ``scale learning_rate=0.5``. A fresh run built with the new schedule from
the journaled step and the cooldown started there has, at every step, the same values and
the same weights after every update, to the bit; the controlled run's train step was traced
no more often than the fresh run's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

SCRIPT = Path(__file__).with_name("remote_schedule_worker.py")


def check(result: dict[str, Any], backend: str) -> None:
    controlled, fresh = result["controlled"], result["fresh"]
    s1, s2, s3 = result["steps"]
    assert (s1, s2, s3) == (10, 20, 30)  # the update after each submission
    assert result["retraced"] == [False, None, None]
    rows, again = np.array(controlled["rows"]), np.array(fresh["rows"])
    lr = controlled["names"].index("learning_rate")
    wd = controlled["names"].index("weight_decay")
    # the new schedule from s1 (not the old one), weight decay cooled from s2 to 0 in 16 steps
    assert rows[s1, lr] != rows[s1 - 1, lr] and rows[s1, lr] > 0.015
    assert rows[s2 - 1, wd] > 0.02 and rows[s2 + 16, wd] == 0.0
    # read eagerly here; an eager read of the fresh run's schedule may round a cosine
    # differently from the step's own (graph) kernels, which the weights show exactly
    np.testing.assert_allclose(rows, again, rtol=1e-6, atol=0)
    # every update used the same values as the fresh run's, to the bit
    np.testing.assert_array_equal(np.array(controlled["weights"]), np.array(fresh["weights"]))
    assert controlled["functions"] == fresh["functions"] == 1  # one train function throughout
    if backend != "torch":  # eager torch runs the step's Python every step
        assert controlled["traces"] == fresh["traces"]  # the commands traced nothing again


def test_schedule_and_cooldown_commands_in_tensorflow_fit_match_a_fresh_run() -> None:
    import keras

    if keras.backend.backend() != "tensorflow":
        pytest.skip("the in-process run is the TensorFlow one")
    spec = importlib.util.spec_from_file_location("hs_remote_schedule_worker", SCRIPT)
    assert spec is not None and spec.loader is not None
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    check(worker.compare(), "tensorflow")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_schedule_and_cooldown_commands_match_a_fresh_run_on(backend: str) -> None:
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    check(json.loads(lines[-1].removeprefix("RESULT ")), backend)
