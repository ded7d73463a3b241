"""Shared by the demo tests: a resumed run's outputs compared with an uninterrupted run's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np
import pytest


def _weights(path: Path) -> dict[str, np.ndarray]:
    """Every array in a ``.weights.h5`` file (model and optimizer), by its HDF5 path."""
    found: dict[str, np.ndarray] = {}
    with h5py.File(path, "r") as f:
        f.visititems(
            lambda name, item: (
                found.__setitem__(name, item[()]) if isinstance(item, h5py.Dataset) else None
            )
        )
    return found


def _assert_same_run(out: Path, reference: Path) -> None:
    """The CSV logs are equal text and every saved array (model and optimizer) is bitwise equal."""
    for name in ("hyperparameters.csv", "metrics.csv"):
        assert (out / name).read_text() == (reference / name).read_text(), name
    resumed = _weights(out / "model.weights.h5")
    uninterrupted = _weights(reference / "model.weights.h5")
    assert resumed.keys() == uninterrupted.keys() and len(resumed) > 10
    for key, value in uninterrupted.items():
        np.testing.assert_array_equal(resumed[key], value, err_msg=key)


@pytest.fixture(scope="session")
def assert_same_run() -> Callable[[Path, Path], None]:
    """A function asserting that two demo run directories hold the same logs and weights."""
    return _assert_same_run
