"""One state model, on each backend (in its pytest pass, several cases per run): a Cooldown
made after the step was traced, a ``.keras`` reload with a plateau, state by name across
reordered and removed groups (``save_weights``; ``tf.train.Checkpoint`` on TensorFlow)."""

from pathlib import Path
from typing import Any

import numpy as np
import pytest

WORKER = Path(__file__).with_name("state_worker.py")
CASES = ["cooldown_after_fit", "plateau_reload", "groups", "checkpoint"]


@pytest.fixture(scope="module", params=["tensorflow", "jax", "torch"])
def backend(request: pytest.FixtureRequest) -> str:
    """Each case in its backend's pytest pass (see tests/conftest.py)."""
    return str(request.param)


@pytest.fixture(scope="module")
def result(workers: Any, backend: str) -> dict:
    found: dict = workers(WORKER, [backend], args=CASES)[backend]
    return found


def test_a_cooldown_created_after_the_first_fit_trains_the_next_fit(result: dict) -> None:
    case = result["cooldown_after_fit"]
    assert case["start"] == 4
    np.testing.assert_allclose(case["rates"], case["expected"], rtol=1e-6, atol=1e-9)
    assert case["diff"] < 1e-6  # the weights followed the cooled rate (plain Keras SGD)


def test_a_keras_reload_with_a_plateau_keeps_the_optimizer_state_bitwise(result: dict) -> None:
    case = result["plateau_reload"]
    assert case["skipped"] == []  # Keras's "Skipping variable loading" warning
    assert case["same"] and case["iterations"] == 12
    assert case["best"] == case["expected_best"] == 0.75  # the plateau built again continues
    assert len(case["unread"]) == 1 and "learning_rate/plateau_best" in case["unread"][0]


def test_named_state_lands_on_its_owner_across_reordered_and_removed_groups(result: dict) -> None:
    case = result["groups"]
    saved = case["saved"]
    reordered, fewer = case["reordered"], case["fewer"]
    for key in ("learning_rate", "body/learning_rate", "head/learning_rate"):
        assert reordered[key] == saved[key]
    assert reordered["body/learning_rate"]["override"] == 0.5
    assert reordered["head/learning_rate"]["scale"] == 0.25
    assert reordered["head/learning_rate"]["plateau_best"] == 0.5
    assert reordered["head/momentum"]["scale"] == 1.0  # new: untouched
    assert reordered["head/momentum"]["override"] == "nan"
    assert case["reordered_warnings"] == []
    assert fewer["body/learning_rate"] == saved["body/learning_rate"]
    assert fewer["learning_rate"] == saved["learning_rate"]
    assert len(case["fewer_warnings"]) == 1
    assert "head/learning_rate/scale" in case["fewer_warnings"][0]
    assert "head/learning_rate/plateau_best" in case["fewer_warnings"][0]


def test_tf_checkpoint_restores_by_name_across_reordered_groups(result: dict) -> None:
    if result["backend"] != "tensorflow":
        pytest.skip("tf.train.Checkpoint is TensorFlow's")
    saved = result["groups"]["saved"]
    reordered = result["checkpoint"]["reordered"]
    for key in ("learning_rate", "body/learning_rate", "head/learning_rate"):
        assert reordered[key] == saved[key]
