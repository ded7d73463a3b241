"""Keras-exact by default on JAX (issue 21 item 3): ``hs.scheduled(Adam)``, ``AdamW``,
``SGD(momentum)`` and ``RMSprop`` with a scheduled learning rate, beta-like value and weight
decay are bitwise the plain Keras optimizer set to the same values before each step, over
100 steps: eagerly, inside a jitted ``stateless_apply`` (slow: the reference retraces every
step) and in ``fit``; also after run-time changes (an override, a scale) of a constant,
traced once. ``exact_worker.py`` runs under ``KERAS_BACKEND=jax``; see its docstring.

Before hyperstep carried a constant's Python-float rounding into the traced step
(:class:`hyperstep.backends.static.StaticScalar`), ``1 - beta_2`` was ``1 - float32(0.999)``
and Adam ended ~2e-6 from Keras here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

WORKER = Path(__file__).with_name("exact_worker.py")
sys.path.insert(0, str(WORKER.parent))
from exact_worker import CASES, FIT  # noqa: E402

sys.path.pop(0)

pytestmark = pytest.mark.backend("jax")  # its pass runs the worker in-process


def _run(workers: Any, modes: str) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as patch:  # the worker inherits the environment
        patch.setenv("HYPERSTEP_EXACT_MODES", modes)
        result: dict[str, Any] = workers(WORKER, ["jax"])["jax"]
    assert result["backend"] == "jax"
    return result


@pytest.fixture(scope="module")
def fast(workers: Any) -> dict[str, Any]:
    return _run(workers, "eager,eager-changed,fit")


@pytest.fixture(scope="module")
def jitted(workers: Any) -> dict[str, Any]:
    return _run(workers, "jit,jit-changed")


def _check(outcome: dict[str, Any]) -> None:
    assert outcome["moved"] > 0.5  # it trained
    assert outcome["difference"] == 0.0
    if "effect" in outcome:  # the run-time changes changed the training
        assert outcome["effect"] > 1e-6


@pytest.mark.parametrize("mode", ["eager", "eager-changed"])
@pytest.mark.parametrize("name", list(CASES))
def test_eager_updates_are_bitwise_the_plain_optimizer_set_per_step(
    fast: dict[str, Any], mode: str, name: str
) -> None:
    _check(fast[f"{mode}/{name}"])


@pytest.mark.parametrize("name", list(FIT))
def test_fit_is_bitwise_the_plain_optimizer_with_the_same_learning_rates(
    fast: dict[str, Any], name: str
) -> None:
    _check(fast[f"fit/{name}"])


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["jit", "jit-changed"])
@pytest.mark.parametrize("name", list(CASES))
def test_jitted_updates_are_bitwise_the_plain_optimizer_retraced_per_step(
    jitted: dict[str, Any], mode: str, name: str
) -> None:
    outcome = jitted[f"{mode}/{name}"]
    _check(outcome)
    assert outcome["traces"] == 1  # values and changes read from the state: no retrace
