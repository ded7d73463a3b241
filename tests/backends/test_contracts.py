"""Keras's optimizer contracts (pickle, deepcopy, callable, assignment) on JAX and torch.

``contracts_worker.py`` runs every check for every Keras optimizer in one process per
backend; TensorFlow's are in ``tests/optim/test_keras_contracts.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

WORKER = Path(__file__).with_name("contracts_worker.py")
BACKENDS = ("jax", "torch")
CHECKS = ("round_trips", "callable", "assignment")


@pytest.fixture(scope="module")
def results(workers: Any) -> dict[str, Any]:
    found: dict[str, Any] = workers(WORKER, BACKENDS, 600)
    return found


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("check", CHECKS)
def test_keras_contract_holds_for_every_optimizer(
    results: dict[str, Any], backend: str, check: str
) -> None:
    result = results[backend]
    assert result["backend"] == backend
    names = [n for n in result if n != "backend"]
    assert len(names) == 14  # every Keras 3.15 optimizer but the two wrappers
    failed = {n: result[n][check] for n in names if result[n][check] != "ok"}
    assert not failed, failed
