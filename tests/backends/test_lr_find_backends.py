"""``hs.find_lr`` on Keras's JAX and PyTorch backends (TensorFlow: ``tests/tune/``).

``lr_find_worker.py`` runs once per backend in its own process: each step sees its learning
rate (a group at its ratio), the state comes back bitwise after a completed, an
early-stopped and an interrupted test, and under ``jax.jit`` the step is not traced again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

WORKER = Path(__file__).with_name("lr_find_worker.py")
BACKENDS = ("jax", "torch")
KINDS = ("keras", "scheduled")
TIMEOUT = 240
# two fresh processes importing JAX or torch: ~50 s on a loaded 2-core machine
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def results(workers: Any) -> dict[str, Any]:
    found: dict[str, Any] = workers(WORKER, BACKENDS, TIMEOUT)
    return found


@pytest.mark.parametrize("backend", BACKENDS)
def test_runs_on_the_backend_without_warnings(results: dict[str, Any], backend: str) -> None:
    assert results[backend]["backend"] == backend
    assert results[backend]["warnings"] == []


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_state_is_restored_bitwise_however_it_ends(
    results: dict[str, Any], backend: str, kind: str
) -> None:
    found = results[backend][kind]
    assert found["restored"] == {"completed": True, "early-stopped": True, "interrupted": True}
    assert found["early"]["stopped"] and found["early"]["steps"] < 40


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_each_step_sees_its_learning_rate(results: dict[str, Any], backend: str, kind: str) -> None:
    found = results[backend][kind]
    rates = np.array(found["learning_rates"])
    np.testing.assert_allclose(rates, np.geomspace(1e-8, 1.0, 12), rtol=1e-13)
    np.testing.assert_array_equal(found["seen"], rates.astype("float32"))
    if kind == "scheduled":  # the group keeps its ratio to the main learning rate
        ratio = 4e-3 / (1e-3 * 0.5 ** (4 / 10))  # at step 4, after one epoch
        np.testing.assert_allclose(found["head"], rates * ratio, rtol=1e-6)
    assert np.all(np.isfinite(found["raw_losses"]))


@pytest.mark.parametrize("kind", KINDS)
def test_jax_traces_the_step_no_more_for_the_test(results: dict[str, Any], kind: str) -> None:
    assert results["jax"][kind]["traces"]["completed"] == 0  # traced by the first fit
    assert results["jax"][kind]["traces_in_fit"] == 0
    assert results["torch"][kind]["traces"]["completed"] == 12  # eager: a call per step
