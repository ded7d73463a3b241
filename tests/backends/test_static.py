"""Units of hyperstep.backends.static: ``StaticScalar`` answers Python checks with its static
number and computes with its traced value; ``weak`` keeps an array's dtype out of promotion."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from hyperstep.backends.static import StaticScalar, weak

pytestmark = pytest.mark.backend("jax")


@pytest.mark.parametrize(
    ("static", "truth", "above"), [(0.9, True, False), (0.0, False, False), (None, True, True)]
)
def test_truth_and_comparisons_use_static(static, truth, above) -> None:
    x = StaticScalar(jnp.float32(0.5), static=static)
    assert bool(x) is truth
    assert (x != 0) is truth and (x > 0) is truth
    assert (x > 1e30) is above  # None reads as +inf


def test_arithmetic_uses_the_traced_value_under_jit() -> None:

    @jax.jit
    def step(value):
        momentum = StaticScalar(value, static=0.9)
        if momentum != 0:  # Keras's Python check: no TracerBoolConversionError
            return jnp.asarray(momentum) * 2 + (1 - momentum)
        return value

    assert float(step(jnp.float32(0.25))) == float(np.float32(0.5) + np.float32(0.75))
    assert float(step(jnp.float32(0.5))) == 1.5  # a changed value, same compiled step


def test_exact_arithmetic_rounds_the_python_float_once() -> None:
    beta_2 = StaticScalar(jnp.float32(0.999), static=0.999, exact=True)
    assert float(jnp.asarray(1 - beta_2)) == float(np.float32(1 - 0.999))
    changed = StaticScalar(jnp.float32(0.99), static=0.999, exact=True)
    assert float(jnp.asarray(1 - changed)) == float(np.float32(1) - np.float32(0.99))


def test_each_constant_piece_rounds_its_python_float_while_the_value_is_it() -> None:
    # a schedule's constant pieces (0.9 before a command, 0.7 after), compiled once
    @jax.jit
    def complement(value):
        return jnp.asarray(1 - StaticScalar(value, static=None, exact=(0.9, 0.7)))

    assert float(complement(jnp.float32(0.9))) == float(np.float32(1 - 0.9))
    assert float(complement(jnp.float32(0.7))) == float(np.float32(1 - 0.7))
    # another value: float32 arithmetic, as the plain optimizer set to it
    assert float(complement(jnp.float32(0.8))) == float(np.float32(1) - np.float32(0.8))
    assert np.float32(1 - 0.9) != np.float32(1) - np.float32(0.9)  # the test can fail
    # the first matching piece counts: two constants of one float32 rounding
    first = StaticScalar(jnp.float32(0.9), static=None, exact=(0.9, float(np.float32(0.9))))
    assert float(jnp.asarray(1 - first)) == float(np.float32(1 - 0.9))
    # no pieces: float32 arithmetic
    plain = StaticScalar(jnp.float32(0.9), static=None, exact=())
    assert float(jnp.asarray(1 - plain)) == float(np.float32(1) - np.float32(0.9))


def test_weak_takes_the_other_operand_dtype() -> None:
    strong = jnp.float32(0.5)
    half = jnp.ones((2,), dtype="float16")
    assert (half * strong).dtype == jnp.float32
    assert (half * weak(strong)).dtype == jnp.float16
    already = jnp.asarray(0.5)  # a Python float's array: weak already, returned as is
    assert weak(already) is already
    assert weak(3.0) == 3.0  # no aval: unchanged
