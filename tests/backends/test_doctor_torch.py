"""Units of hyperstep.backends.doctor_torch, the doctor's torch half: what its raw variables are
(the contract every backend's half keeps: tests/backends/test_doctor.py; the whole
diagnosis: tests/doctor)."""

from __future__ import annotations

import pytest

from hyperstep.backends import doctor_torch as backend

pytestmark = pytest.mark.backend("torch")


def test_raw_variables_are_parameters_and_tensors_that_require_grad() -> None:
    import torch

    parameter = torch.nn.Parameter(torch.ones(2))
    tensor = torch.ones(2, requires_grad=True)
    assert backend.is_raw_variable(parameter) and backend.raw_kind(parameter) == "torch Parameter"
    assert backend.is_raw_variable(tensor) and backend.raw_kind(tensor) == "torch tensor"
    assert backend.raw_trainable(tensor)
    assert not backend.is_raw_variable(torch.ones(2))
