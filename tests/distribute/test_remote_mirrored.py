"""hs.Remote under MirroredStrategy (two logical CPUs, in a subprocess: remote_mirrored.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).with_name("remote_mirrored.py")


def test_a_command_takes_effect_at_the_same_step_on_both_replicas() -> None:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow"}
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    result = json.loads(lines[-1].removeprefix("RESULT "))
    assert result["replicas"] == 2 and result["step"] == 3
    assert result["replicas_equal"]  # both copies of every weight, after every step
    assert result["changed_before"] and result["frozen_after"]
    assert result["override"] == [0.0, 0.0]
