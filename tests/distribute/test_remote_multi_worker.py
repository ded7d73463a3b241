"""hs.Remote under MultiWorkerMirroredStrategy: two worker processes on 127.0.0.1.

Worker 0 writes ``set learning_rate=0`` a second late, after worker 1 polled that iteration
(remote_multi_worker.py): both apply it at one step, the same, and their weights stay equal
and stop changing from that step on. Each worker journals it (the chief in journal.jsonl,
worker 1 in journal.worker1.jsonl): harness.check_same_step.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).with_name("remote_multi_worker.py")
BUDGET = float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600"))
_SPEC = importlib.util.spec_from_file_location(
    "hs_distribute_harness", Path(__file__).with_name("harness.py")
)
assert _SPEC is not None and _SPEC.loader is not None
harness = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(harness)


def two_workers(directory: Path, *flags: str) -> tuple[list[dict[str, Any]], Path]:
    """Run both workers to their results (then kill them); return results and CONTROL."""
    control = directory / "control"
    ports = harness.free_ports(2)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow"}
    env.pop("TF_CONFIG", None)
    head = [sys.executable, str(SCRIPT), str(directory)]
    commands = [[*head, str(i), *map(str, ports), str(control), *flags] for i in range(2)]
    results = [directory / f"result_{i}.json" for i in range(2)]
    logs = [directory / f"worker_{i}.log" for i in range(2)]
    found = harness.until_results(commands, env, results, logs, time.monotonic() + BUDGET)
    return found, control


@pytest.mark.slow
def test_a_command_takes_effect_at_the_same_step_on_both_workers(tmp_path: Path) -> None:
    (first, second), control = two_workers(tmp_path)
    harness.check_same_step(first, second, control)
