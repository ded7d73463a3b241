"""hs.Remote under MultiWorkerMirroredStrategy: two worker processes on 127.0.0.1.

Worker 0 writes ``set learning_rate=0`` a second late, after worker 1 polled that iteration
(remote_multi_worker.py): both apply it at one step, the same, and their weights stay equal
and stop changing from that step on. Each worker journals it (the chief in journal.jsonl,
worker 1 in journal.worker1.jsonl).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

SCRIPT = Path(__file__).with_name("remote_multi_worker.py")
BUDGET = float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600"))


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def two_workers(directory: Path, *flags: str) -> tuple[list[dict[str, Any]], Path]:
    """Run both workers to their results (then kill them); return results and CONTROL."""
    control = directory / "control"
    ports = _free_ports(2)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow"}
    env.pop("TF_CONFIG", None)
    results = [directory / f"result_{i}.json" for i in range(2)]
    logs = [directory / f"worker_{i}.log" for i in range(2)]
    workers: list[subprocess.Popen[bytes]] = []
    deadline = time.monotonic() + BUDGET
    try:
        for i in range(2):
            with open(logs[i], "wb") as log:
                command = [sys.executable, str(SCRIPT), str(directory), str(i), *map(str, ports)]
                workers.append(
                    subprocess.Popen(
                        [*command, str(control), *flags],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        env=env,
                    )
                )
        while not all(path.exists() for path in results):
            failed = [w.returncode for w in workers if w.poll() is not None]
            if failed or time.monotonic() > deadline:
                tails = "\n".join(log.read_text(errors="replace")[-3000:] for log in logs)
                pytest.fail(f"workers exited {failed} or hung.\n{tails}")
            time.sleep(0.2)
    finally:
        for worker in workers:
            worker.kill()
        for worker in workers:
            worker.wait(timeout=30)
    return [json.loads(path.read_text()) for path in results], control


@pytest.mark.slow
def test_a_command_takes_effect_at_the_same_step_on_both_workers(tmp_path: Path) -> None:
    (first, second), control = two_workers(tmp_path)
    assert first["workers"] == second["workers"] == 2
    assert first["chief"] and not second["chief"]
    assert first["applied"] == second["applied"]  # the same command at the same step
    [[seq, status, step]] = first["applied"]
    assert (seq, status) == (1, "applied") and step == 4  # the first boundary both saw it at
    for name, worker in (("journal.jsonl", 0), ("journal.worker1.jsonl", 1)):
        lines = (control / name).read_text().splitlines()
        entries = [json.loads(line) for line in lines]
        assert [(e["seq"], e["step"]) for e in entries if e.get("status")] == [(1, 4)]
        assert [e["worker"] for e in entries if e.get("event") == "begin"] == [worker]
    weights = [
        [np.concatenate([np.ravel(w) for w in row]) for row in r["weights"]]
        for r in (first, second)
    ]
    for a, b in zip(*weights, strict=True):
        np.testing.assert_array_equal(a, b)  # the workers' weights, after every update
    assert not np.array_equal(weights[0][step - 1], weights[0][step - 2])  # trained before
    for row in weights[0][step:]:
        np.testing.assert_array_equal(row, weights[0][step - 1])  # frozen from `step` on
    assert first["override"] == second["override"] == 0.0
