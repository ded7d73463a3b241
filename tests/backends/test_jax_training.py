"""A clock shared across the model and optimizers under JAX's stateless training.

``training_worker.py`` runs once per backend, in that backend's pytest pass (TensorFlow's
result, the reference, from the TensorFlow pass: see tests/conftest.py); see its docstring
for the checks. Expected hyperparameter values come from the schedule's formula written out
here; weights are compared with the TensorFlow run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError

WORKER = Path(__file__).with_name("training_worker.py")
BACKENDS = ("tensorflow", "jax", "torch")
STEPS, SET_AT, CLEAR_AT = 12, 5, 8  # as in training_worker.py


@pytest.fixture(scope="module")
def results(workers: Any) -> dict[str, Any]:
    """Run the worker under every backend, all at once; return ``{backend: result}``."""
    found: dict[str, Any] = workers(WORKER, BACKENDS)
    return found


def expected_kl_beta() -> list[float]:
    """``min(step / 10, 1)``; set to 0.7 before step 5; cleared and scaled by 0.5 at 8."""
    values = []
    for step in range(STEPS):
        schedule = min(step / 10, 1.0)
        if SET_AT <= step < CLEAR_AT:
            values.append(0.7)
        elif step >= CLEAR_AT:
            values.append(0.5 * schedule)
        else:
            values.append(schedule)
    return values


FREE = [("tensorflow", "fit"), ("tensorflow", "loop"), ("jax", "fit"), ("jax", "loop")]
FREE += [("torch", "fit")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_worker_ran_on_its_backend(results: dict[str, Any], backend: str) -> None:
    assert results[backend]["backend"] == backend


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_hyperstep_warning(results: dict[str, Any], backend: str) -> None:
    assert results[backend]["warnings"] == []


@pytest.mark.parametrize(("backend", "how"), FREE)
@pytest.mark.parametrize("where", ["seen", "seen_in_loss"])
def test_free_hyperparameter_read_in_forward_pass_and_loss_follows_its_schedule(
    results: dict[str, Any], backend: str, how: str, where: str
) -> None:
    # each forward pass (and each loss) wrote the value it read at its own index
    run = results[backend][f"free_{how}"]
    np.testing.assert_allclose(run[where], expected_kl_beta(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(("backend", "how"), FREE)
def test_clock_advances_once_per_step_with_a_free_hyperparameter(
    results: dict[str, Any], backend: str, how: str
) -> None:
    run = results[backend][f"free_{how}"]
    assert run["calls"] == STEPS  # forward passes recorded
    assert run["step"] == STEPS  # one advance each, by the optimizer


@pytest.mark.parametrize(("backend", "how"), [f for f in FREE if f[0] != "tensorflow"])
def test_free_hyperparameter_weights_within_1e_5_of_tensorflow_fit(
    results: dict[str, Any], backend: str, how: str
) -> None:
    # kl_beta weighs an added loss and the compiled loss: a wrong value moves the weights
    expected = results["tensorflow"]["free_fit"]["weights"]
    got = results[backend][f"free_{how}"]["weights"]
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, atol=1e-5, rtol=0)


@pytest.mark.parametrize(("backend", "how"), [f for f in FREE if f[0] != "torch"])
def test_changing_a_free_hyperparameter_does_not_retrace(
    results: dict[str, Any], backend: str, how: str
) -> None:
    # `call` is Python: it runs again only if the step is traced again (set, clear, scale)
    run = results[backend][f"free_{how}"]
    assert run["traced_after_first_step"] == 0
    if backend == "jax" and how == "loop":
        assert run["compiled"] == 1  # jax.jit's cache


@pytest.mark.backend("jax")
def test_jax_fit_gives_the_optimizer_copy_of_the_step_to_the_model(
    results: dict[str, Any],
) -> None:
    # fit's compiled step fed a state whose model copy says 100 and optimizer copy says 3
    copy = results["jax"]["free_fit"]["copy_wins"]
    assert copy["read"] == pytest.approx(0.5 * 0.3)  # scale 0.5 * min(3 / 10, 1): step 3
    assert copy["model_copy"] == copy["optimizer_copy"] == 4  # 3 + one advance
    assert copy["traced"] == 0


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_gan_optimizers_read_the_same_step_advanced_once_per_step(
    results: dict[str, Any], backend: str
) -> None:
    gan = results[backend]["gan"]
    steps = range(len(gan["traces"]))
    assert [row["d_step"] for row in gan["traces"]] == list(steps)
    np.testing.assert_allclose(
        [row["d_learning_rate"] for row in gan["traces"]],
        [0.02 + 0.01 * t for t in steps],
        rtol=1e-6,
    )
    np.testing.assert_allclose(
        [row["g_learning_rate"] for row in gan["traces"]], [0.05 * 0.5**t for t in steps], rtol=1e-6
    )
    assert gan["step"] == len(steps)  # the generator's advances only


@pytest.mark.backend("jax")
def test_gan_weights_within_1e_5_of_tensorflow(results: dict[str, Any]) -> None:
    got, expected = results["jax"]["gan"]["weights"], results["tensorflow"]["gan"]["weights"]
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, atol=1e-5, rtol=0)
    assert results["jax"]["gan"]["compiled"] == 1


@pytest.mark.backend("jax")
def test_gan_without_stateless_copy_reads_a_frozen_step(results: dict[str, Any]) -> None:
    """What ``stateless_copy`` prevents: the discriminator's copy never moves."""
    stale = results["jax"]["gan_without_copy"]
    assert [row["d_step"] for row in stale["traces"]] == [0] * len(stale["traces"])
    expected = results["tensorflow"]["gan"]["weights"]
    pairs = zip(stale["weights"], expected, strict=True)
    assert max(np.max(np.abs(np.subtract(g, e))) for g, e in pairs) > 1e-4


# ---- Clock.stateless_copy, in this process --------------------------------------------------
def test_stateless_copy_replaces_only_the_step_in_a_new_list() -> None:
    import keras

    clock = hs.Clock()
    other = keras.Variable(1.0)
    target = [5.0, 0]
    copied = clock.stateless_copy(([other, clock.step], [2.0, 9]), ([other, clock.step], target))
    assert copied == [5.0, 9] and target == [5.0, 0]


def test_stateless_copy_names_the_pair_without_the_step() -> None:
    import keras

    clock, other = hs.Clock(name="shared"), keras.Variable(1.0, name="bias")
    with pytest.raises(InvalidArgumentError, match=r"stateless_copy\(target=...\).*bias"):
        clock.stateless_copy(([clock.step], [3]), ([other], [1.0]))
    with pytest.raises(InvalidArgumentError, match=r"one value per variable.*2 variables"):
        clock.stateless_copy(([clock.step, other], [3]), ([clock.step], [1]))
    with pytest.raises(InvalidTypeError, match=r"pair `\(variables, values\)`.*source="):
        clock.stateless_copy([clock.step], ([clock.step], [1]))
