"""Launching and collecting the two-process tests of tests/distribute (not a test file).

:func:`free_ports` picks loopback ports; :func:`until_results` runs worker processes until
each has written its result file (then kills them, as a crash would), :func:`to_exit` runs
them to their exit; :func:`check_same_step` holds the checks that a ``set learning_rate=0``
sent by ``hs.Remote``'s chief took effect at one step on both workers. The test files load
it from its file (``importlib.util.spec_from_file_location``: pytest's importlib mode, no
package here).
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path
from typing import Any


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (all bound at once, then released)."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def until_results(
    commands: list[list[str]],
    env: dict[str, str],
    results: list[Path],
    logs: list[Path],
    deadline: float,
    label: str = "",
) -> list[dict[str, Any]]:
    """Start one process per command (output to its log), wait for every result file (or a
    process's exit, or ``time.monotonic() > deadline``: then ``pytest.fail`` with the logs'
    tails), kill them all, and return the results read as JSON."""
    import pytest

    workers: list[subprocess.Popen[bytes]] = []
    try:
        for command, path in zip(commands, logs, strict=True):
            with open(path, "wb") as log:
                workers.append(
                    subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
                )
        while not all(path.exists() for path in results):
            failed = [w.returncode for w in workers if w.poll() is not None]
            if failed or time.monotonic() > deadline:
                tails = "\n".join(log.read_text(errors="replace")[-3000:] for log in logs)
                why = f"exited {failed}" if failed else "ran past the deadline (hung?)"
                pytest.fail(f"{label}workers {why}.\n{tails}")
            time.sleep(0.2)
    finally:
        for worker in workers:  # every worker is killed, as in a crash
            worker.kill()
        for worker in workers:
            worker.wait(timeout=30)
    return [json.loads(path.read_text()) for path in results]


def to_exit(commands: list[list[str]], env: dict[str, str], budget: float) -> list[str]:
    """Run one process per command to its exit (killed after ``budget`` seconds); assert
    every one exited 0 (the outputs' tails in the message) and return their outputs."""
    processes = [
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
        )
        for command in commands
    ]
    try:
        logs = [process.communicate(timeout=budget)[0] for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    codes = [process.returncode for process in processes]
    assert codes == [0] * len(processes), "\n".join(log[-3000:] for log in logs)
    return logs


def check_same_step(first: dict[str, Any], second: dict[str, Any], control: Path) -> None:
    """The chief's ``set learning_rate=0`` (sent late, after worker 1 polled) applied at one
    step, step 4, on both workers: each journals it (the chief in journal.jsonl, worker 1 in
    journal.worker1.jsonl), their weights are equal after every update, trained before that
    step and frozen from it on."""
    import numpy as np

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
