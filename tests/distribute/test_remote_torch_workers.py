"""hs.Remote under torch.distributed: two gloo processes on 127.0.0.1.

Rank 0 writes ``set learning_rate=0`` a second late, after rank 1 polled that iteration
(remote_torch_workers.py): the MIN all-reduce of the commands each can read makes both apply
it at one step, the same, and their weights stay equal and stop changing from that step on.
Each rank journals it (rank 0 in journal.jsonl, rank 1 in journal.worker1.jsonl):
harness.check_same_step.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("remote_torch_workers.py")
BUDGET = float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600"))
_SPEC = importlib.util.spec_from_file_location(
    "hs_distribute_harness", Path(__file__).with_name("harness.py")
)
assert _SPEC is not None and _SPEC.loader is not None
harness = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(harness)


@pytest.mark.slow
@pytest.mark.backend("torch")
def test_a_command_takes_effect_at_the_same_step_on_both_torch_ranks(tmp_path: Path) -> None:
    control, [port] = tmp_path / "control", harness.free_ports(1)
    env = {**os.environ, "KERAS_BACKEND": "torch"}
    commands = [
        [sys.executable, str(SCRIPT), str(tmp_path), str(rank), str(port), str(control)]
        for rank in range(2)
    ]
    harness.to_exit(commands, env, BUDGET)
    first, second = (json.loads((tmp_path / f"result_{i}.json").read_text()) for i in range(2))
    harness.check_same_step(first, second, control)
