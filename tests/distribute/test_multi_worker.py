"""MultiWorkerMirroredStrategy, two worker processes on 127.0.0.1 (``multi_worker.py``).

Phase ``train``: both workers train with a plateau controller whose metric differs per
worker, write a checkpoint (the chief's is kept) and train on; then both are killed. Phase
``resume``: two new processes restore the checkpoint and train the same epochs again. The
single-device reference (one process, the whole batch, the mean metric) runs here. Both
phases together are bounded by ``BUDGET`` seconds; every process is killed in ``finally``.

In ``make test-slow`` (four processes that each import TensorFlow: ~30 s on 2 cores, as the
other checks with several workers on ports): ``make test`` keeps ``test_mirrored.py``, which
asserts in one process that replicas fed different metrics take the mean's plateau
decisions and that a checkpoint written under a strategy restores into a single-device run.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

SCRIPT = Path(__file__).with_name("multi_worker.py")
_SPEC = importlib.util.spec_from_file_location("hs_multi_worker", SCRIPT)
assert _SPEC is not None and _SPEC.loader is not None
WORKER = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(WORKER)  # definitions only: main() runs in the worker processes
_HARNESS_SPEC = importlib.util.spec_from_file_location(
    "hs_distribute_harness", Path(__file__).with_name("harness.py")
)
assert _HARNESS_SPEC is not None and _HARNESS_SPEC.loader is not None
HARNESS = importlib.util.module_from_spec(_HARNESS_SPEC)  # launching and collecting
_HARNESS_SPEC.loader.exec_module(HARNESS)
#: seconds for both phases (four worker processes): a hang guard (tests/conftest.py)
BUDGET = float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600"))

pytestmark = pytest.mark.slow


def _phase(directory: Path, phase: str, deadline: float) -> list[dict[str, Any]]:
    """Start two workers, wait for both results (or the deadline), then kill both."""
    ports = HARNESS.free_ports(2)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow"}
    env.pop("TF_CONFIG", None)
    commands = [
        [sys.executable, str(SCRIPT), str(directory), str(i), *map(str, ports), phase]
        for i in range(2)
    ]
    results = [directory / f"{phase}_{i}.json" for i in range(2)]
    logs = [directory / f"{phase}_{i}.log" for i in range(2)]
    return HARNESS.until_results(commands, env, results, logs, deadline, f"{phase}: ")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory = tmp_path_factory.mktemp("multi_worker")
    deadline = time.monotonic() + BUDGET
    train = _phase(directory, "train", deadline)
    resume = _phase(directory, "resume", deadline)
    return {"directory": directory, "train": train, "resume": resume}


@pytest.fixture(scope="module")
def single(runs: dict[str, Any]) -> dict[str, Any]:
    """One device: from scratch, and restored from the workers' checkpoint."""
    import tensorflow as tf

    strategy = tf.distribute.get_strategy()
    scratch = WORKER.run(strategy, WORKER.build(strategy), range(WORKER.EPOCHS), None, 1)
    parts = WORKER.build(strategy)
    parts["checkpoint"].read(str(runs["directory"] / "ckpt" / "ckpt")).assert_consumed()
    restored = {"plateau": WORKER.state(parts["plateau"])}
    resumed = WORKER.run(strategy, parts, range(WORKER.SAVE_AFTER + 1, WORKER.EPOCHS), None, 1)
    return {"scratch": scratch, "restored": restored, "resumed": resumed}


def _plateau(result: dict[str, Any]) -> list[list[float]]:
    return [epoch["plateau"] for epoch in result["epochs"]]


def _max_difference(a: list[Any], b: list[Any]) -> float:
    flat = [np.concatenate([np.ravel(np.asarray(w, dtype="float64")) for w in x]) for x in (a, b)]
    return float(np.max(np.abs(flat[0] - flat[1])))


def test_workers_take_identical_plateau_decisions_on_different_metrics(runs):
    first, second = runs["train"]
    assert first["replicas"] == second["replicas"] == 2
    assert first["steps"] == second["steps"]  # step, learning_rate, weight_decay per update
    assert _plateau(first) == _plateau(second)
    reductions = [state[-1] for state in _plateau(first)]
    assert reductions == [0, 0, 0, 1, 1, 2]  # the mean metric plateaus after epochs 3 and 5
    # alone (reduce=None) each worker decides differently from the other
    assert [e["local"][-1] for e in first["epochs"]] == [0, 0, 1, 2, 3, 4]
    assert [e["local"][-1] for e in second["epochs"]] == [0, 1, 1, 2, 2, 3]
    assert _max_difference(first["weights"], second["weights"]) == 0.0


def test_workers_follow_the_single_device_run(runs, single):
    first = runs["train"][0]
    scratch = single["scratch"]
    assert first["steps"] == scratch["steps"]
    assert _plateau(first) == _plateau(scratch)
    assert _max_difference(first["weights"], scratch["weights"]) < 1e-6


def test_restarted_workers_restore_and_continue_identically(runs):
    train = runs["train"][0]
    after = WORKER.SAVE_AFTER + 1
    for resumed in runs["resume"]:
        assert resumed["restored"]["plateau"] == train["saved"]["plateau"]
        assert resumed["steps"] == train["steps"][after * WORKER.STEPS_PER_EPOCH :]
        assert _plateau(resumed) == _plateau(train)[after:]
        assert _max_difference(resumed["weights"], train["weights"]) < 1e-6


def test_checkpoint_from_workers_restores_into_a_single_device_run(runs, single):
    train = runs["train"][0]
    after = WORKER.SAVE_AFTER + 1
    assert single["restored"]["plateau"] == train["saved"]["plateau"]
    assert single["resumed"]["steps"] == train["steps"][after * WORKER.STEPS_PER_EPOCH :]
    assert _plateau(single["resumed"]) == _plateau(train)[after:]
    assert _max_difference(single["resumed"]["weights"], train["weights"]) < 1e-6
