"""A hyperparameter written during JAX fit (in the JAX pass): from a batch callback and from
another thread, ``hp.set(0.0)`` trains from the next update on and outlives fit, and reads
there return the current value (Keras's trainer holds the state during fit); so does a
direct ``hp.scale.assign(0.0)`` or ``hp.override.assign(0.0)`` from a batch callback."""

from pathlib import Path
from typing import Any

import pytest

WORKER = Path(__file__).with_name("jax_fit_worker.py")
pytestmark = pytest.mark.backend("jax")


@pytest.fixture(scope="module")
def result(workers: Any) -> dict:
    found: dict = workers(WORKER, ["jax"])["jax"]
    return found


@pytest.mark.parametrize(
    "how", ["callback", "thread", "scale", "override", "scale-begin", "override-begin"]
)
def test_set_during_jax_fit_trains_from_the_next_step_and_outlives_fit(
    result: dict, how: str
) -> None:
    case = result[how]
    assert case["reads"] == [pytest.approx(0.01), 0.0]  # read before and after the write
    assert case["after"] == 0.0  # not put back by the end of fit
    assert case["diff"] < 1e-7  # two updates at 0.01, then none (plain Keras SGD)
