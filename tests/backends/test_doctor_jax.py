"""Units of hyperstep.backends.doctor_jax, the doctor's JAX half: what its raw variables are
(the contract every backend's half keeps: tests/backends/test_doctor.py; the whole
diagnosis: tests/doctor)."""

from __future__ import annotations

import keras
import pytest

from hyperstep.backends import doctor_jax as backend

pytestmark = pytest.mark.backend("jax")


def test_raw_variables_are_floating_jax_arrays() -> None:
    import jax.numpy as jnp

    assert backend.is_raw_variable(jnp.ones(2)) and backend.raw_kind(jnp.ones(2)) == "jax.Array"
    assert not backend.is_raw_variable(jnp.ones(2, dtype="int32"))
    assert not backend.is_raw_variable(keras.Variable(1.0))
