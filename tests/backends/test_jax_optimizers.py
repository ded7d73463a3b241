"""Every Keras optimizer through ``hs.scheduled`` trains in ``fit`` on the JAX backend.

Keras tests some hyperparameters in Python while tracing (``if self.momentum != 0`` in SGD
and RMSprop, ``if self.clipvalue and self.clipvalue > 0`` in every optimizer); under
``jax.jit`` a value read from variables cannot answer, so ``hs.scheduled`` hands those as
:class:`hyperstep.backends.static.StaticScalar`. Each configuration trains the same model
plainly and scheduled (constant values) in one JAX process; the weights must agree to
float32 rounding and must have moved.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

WORKER = Path(__file__).with_name("optimizers_worker.py")
sys.path.insert(0, str(WORKER.parent))
from optimizers_worker import CONFIGS  # noqa: E402

sys.path.pop(0)

pytestmark = pytest.mark.backend("jax")  # its pass runs the worker in-process


@pytest.fixture(scope="module")
def jax_results(workers: Any) -> dict[str, Any]:
    result: dict[str, Any] = workers(WORKER, ["jax"], 600)["jax"]
    assert result["backend"] == "jax"
    return result


@pytest.mark.parametrize("name", list(CONFIGS))
def test_scheduled_optimizer_trains_like_the_plain_one_under_jax_fit(
    jax_results: dict[str, Any], name: str
) -> None:
    outcome = jax_results[name]
    assert isinstance(outcome, dict), f"hs.scheduled failed under JAX fit: {outcome}"
    assert outcome["moved"] > 1e-4  # the plain optimizer trained at all
    assert outcome["difference"] <= 1e-5 * max(1.0, outcome["moved"])


#: plain Keras bakes its Python floats into the jitted step, and XLA simplifies arithmetic with
#: constants (ScheduleFreeAdamW divides by `beta_1`; the clipping norm): values read at run
#: time cannot be simplified so, and these end a last bit apart (eagerly they are bitwise,
#: test_jax_exact.py). TensorFlow's Grappler does the same (test_scheduled_exact.py).
FOLDED_BY_XLA = {"AdamW-clipnorm", "ScheduleFreeAdamW"}


@pytest.mark.parametrize("name", [name for name in CONFIGS if name not in FOLDED_BY_XLA])
def test_constant_values_are_bitwise_the_plain_optimizer_under_jax_fit(
    jax_results: dict[str, Any], name: str
) -> None:
    # constants Keras combines with numbers in Python (`1 - beta_2`) round as its floats do
    outcome = jax_results[name]
    assert isinstance(outcome, dict), f"hs.scheduled failed under JAX fit: {outcome}"
    assert outcome["difference"] == 0.0
