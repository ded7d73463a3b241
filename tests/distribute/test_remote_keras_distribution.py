"""hs.Remote under keras.distribution.DataParallel, two CPU devices, on JAX (in a subprocess:
remote_keras_distribution.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("remote_keras_distribution.py")


def _run(*args: str) -> dict:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "jax"}
    command = [sys.executable, str(SCRIPT), *args]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


@pytest.mark.slow
def test_a_command_takes_effect_at_the_same_step_on_both_devices() -> None:
    result = _run()
    assert result["devices"] == 2 and set(result["shards"]) == {2}
    assert result["applied"] == [3, 5]
    assert result["replicas_equal"]  # both devices' copies of every weight, after every step
    assert result["changed_before"] and result["frozen_after"]
    assert result["override"] == [0.0, 0.0] and result["override_devices"] == 2
    decay = result["decay"]  # weight_decay cooled linearly over 4 steps from step 5
    assert decay[4] == decay[5] == pytest.approx(0.04) and decay[9:] == [0.0] * len(decay[9:])
    assert decay[6] == pytest.approx(0.03) and decay[7] == pytest.approx(0.02)
    assert result["traces"] == 1  # nothing retraced


@pytest.mark.slow
def test_armed_tables_under_steps_per_execution_replay_bitwise_on_both_devices() -> None:
    # the Remote armed each hyperparameter before the data-parallel step was traced; the
    # schedule and scale commands reach every step of an execution, on both devices
    result = _run("armed")
    assert result["devices"] == 2 and set(result["shards"]) == {2}
    assert result["applied"] == [8, 16]
    assert result["replayed"] == ["learning_rate"]
    assert result["replicas_equal"] and result["steered"]
    assert result["bitwise"]  # both copies of every weight, against the replayed run
    assert result["traces"] == [1, 1]  # no command traced the step again
