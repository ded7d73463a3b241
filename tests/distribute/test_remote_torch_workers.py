"""hs.Remote under torch.distributed: two gloo processes on 127.0.0.1.

Rank 0 writes ``set learning_rate=0`` a second late, after rank 1 polled that iteration
(remote_torch_workers.py): the MIN all-reduce of the commands each can read makes both apply
it at one step, the same, and their weights stay equal and stop changing from that step on.
Each rank journals it (rank 0 in journal.jsonl, rank 1 in journal.worker1.jsonl).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).with_name("remote_torch_workers.py")
BUDGET = float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600"))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
@pytest.mark.backend("torch")
def test_a_command_takes_effect_at_the_same_step_on_both_torch_ranks(tmp_path: Path) -> None:
    control, port = tmp_path / "control", _free_port()
    env = {**os.environ, "KERAS_BACKEND": "torch"}
    ranks = [
        subprocess.Popen(
            [sys.executable, str(SCRIPT), str(tmp_path), str(rank), str(port), str(control)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for rank in range(2)
    ]
    try:
        logs = [rank.communicate(timeout=BUDGET)[0] for rank in ranks]
    finally:
        for rank in ranks:
            if rank.poll() is None:
                rank.kill()
    assert [r.returncode for r in ranks] == [0, 0], "\n".join(log[-3000:] for log in logs)
    first, second = (json.loads((tmp_path / f"result_{i}.json").read_text()) for i in range(2))
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
        np.testing.assert_array_equal(a, b)  # the ranks' weights, after every update
    assert not np.array_equal(weights[0][step - 1], weights[0][step - 2])  # trained before
    for row in weights[0][step:]:
        np.testing.assert_array_equal(row, weights[0][step - 1])  # frozen from `step` on
    assert first["override"] == second["override"] == 0.0
