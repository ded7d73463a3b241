"""``epoch`` is fit's epoch on JAX and torch too (one process each; slow: imports).

``epochs_worker.py`` runs under each backend; see its docstring. The reference for the
learning rate is keras-io's epoch-table callback in the same process (plain Keras SGD), the
reference for beta is ``min(epoch / 10, 1)`` of the epoch fit gave its callbacks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

WORKER = Path(__file__).with_name("epochs_worker.py")
BACKENDS = ("jax", "torch")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results(workers: Any) -> dict[str, Any]:
    found: dict[str, Any] = workers(WORKER, BACKENDS)
    return found


@pytest.mark.parametrize("backend", BACKENDS)
def test_worker_ran_on_its_backend_without_hyperstep_warnings(
    results: dict[str, Any], backend: str
) -> None:
    assert results[backend]["backend"] == backend
    assert results[backend]["warnings"] == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_epoch_table_equals_keras_callback_over_epochs_of_5_5_5_1(
    results: dict[str, Any], backend: str
) -> None:
    table = results[backend]["table"]
    assert np.bincount(table["reference"]["epochs"]).tolist() == [5, 5, 5, 1, 5, 5, 5, 1]
    assert table["ours"] == table["reference"]  # every update's rate and fit's epoch
    assert table["weights"][1] == table["weights"][0]  # final weights, bit for bit


@pytest.mark.parametrize("backend", BACKENDS)
def test_saved_to_keras_mid_run_and_resumed_exactly(results: dict[str, Any], backend: str) -> None:
    table = results[backend]["table"]
    resumed = table["resumed"]
    assert resumed["state"] == [16, 3, 15, 5]  # step, fit's epoch 3 began at 15, length 5
    assert resumed["rates"] == table["ours"]["rates"]
    assert resumed["epochs"] == table["ours"]["epochs"]
    assert table["weights"][2] == table["weights"][1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_free_epoch_beta_built_functionally_follows_the_optimizer_clock(
    results: dict[str, Any], backend: str
) -> None:
    beta = results[backend]["beta"]
    assert beta["before"] == 0.0 and beta["moved"] and beta["step"] == 32
    assert beta["values"] == [float(np.float32(min(e / 10, 1))) for e in beta["epochs"]]
    assert len(set(beta["values"])) == 8
