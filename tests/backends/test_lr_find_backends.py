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
@pytest.mark.parametrize("backend", BACKENDS)
def test_jax_traces_the_step_no_more_for_the_test(
    results: dict[str, Any], backend: str, kind: str
) -> None:
    if backend == "jax":
        assert results["jax"][kind]["traces"]["completed"] == 0  # traced by the first fit
        assert results["jax"][kind]["traces_in_fit"] == 0
    else:
        assert results["torch"][kind]["traces"]["completed"] == 12  # eager: a call per step


# ---- everything put back: wrappers, clocks, global random state (lr_find_restore_worker) ---

RESTORE_WORKER = Path(__file__).with_name("lr_find_restore_worker.py")
ALL_BACKENDS = ("tensorflow", "jax", "torch")
WRAPPERS = ("scheduled", "loss-scale", "skip-non-finite", "multi", "mixed")


@pytest.fixture(scope="module")
def restored(workers: Any) -> dict[str, Any]:
    found: dict[str, Any] = workers(RESTORE_WORKER, ALL_BACKENDS)  # ~3 min on 2 loaded cores
    return found


@pytest.mark.parametrize("kind", WRAPPERS)
@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_every_variable_clock_hyperparameter_and_generator_comes_back_through_wrappers(
    restored: dict[str, Any], backend: str, kind: str
) -> None:
    found = restored[backend]["wrappers"][kind]
    expected = {
        "scheduled": "ScheduledAdamW",
        "loss-scale": "LossScaleOptimizer",
        "skip-non-finite": "SkipNonFinite",
        "multi": "MultiOptimizer",
        "mixed": "LossScaleOptimizer",  # compile wrapped Adam under mixed_float16
    }
    assert found["optimizer"] == expected[kind]
    assert found["changed_variables"] == [] and found["variables"] > 20
    assert found["changed_settings"] == []
    settings = found["settings"]
    if kind != "mixed":  # the clock had advanced 5 steps; every hyperparameter compared
        assert any(k.endswith("/step") and v == 5 for k, v in settings.items())
        assert any(k.endswith("/head/learning_rate") for k in settings)
    assert found["changed_generators"] == []
    generators = {"tensorflow": "tensorflow", "torch": "torch"}.get(backend)
    assert {"python", "numpy", "keras"} <= set(found["generators"])
    if generators:
        assert generators in found["generators"]
    # the ramp went through the wrapper: each step saw its rate (a MultiOptimizer's other
    # sub-optimizer at its ratio to the first, 2e-3 / (1e-3 * 0.5 ** 0.5))
    ratio = 2e-3 / (1e-3 * 0.5 ** (5 / 10)) if kind == "multi" else 1.0
    np.testing.assert_allclose(found["seen"], np.array(found["rates"]) * ratio, rtol=1e-6)


@pytest.mark.parametrize("case", ["seeded", "unbuilt"])
@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_a_seeded_script_trains_the_same_with_or_without_the_test(
    restored: dict[str, Any], backend: str, case: str
) -> None:
    # dropout, a shuffled fit of 2 epochs; "unbuilt": no Input, the test builds it as fit
    without, with_test = restored[backend][case]
    assert without == with_test


@pytest.mark.parametrize("kind", ["keras", "scheduled"])
@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_gradient_accumulation_takes_one_rate_per_applied_update(
    restored: dict[str, Any], backend: str, kind: str
) -> None:
    # as Lightning's finder: 10 rates over 20 batches with accumulation 2, the rate held
    # for both batches of an update; the half-accumulated gradient put back bitwise
    found = restored[backend]["accumulation"][kind]
    assert len(found["rates"]) == 10 and found["raw"] == 10
    np.testing.assert_allclose(found["seen"], np.repeat(found["rates"], 2), rtol=1e-6)
    assert found["changed_variables"] == []


@pytest.mark.parametrize("backend", ALL_BACKENDS)
def test_the_restore_worker_warns_nothing(restored: dict[str, Any], backend: str) -> None:
    assert restored[backend]["warnings"] == []
