"""Shared by the demo tests: every array of a ``.weights.h5`` file."""

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


@pytest.fixture(scope="session")
def read_weights() -> Callable[[Path], dict[str, np.ndarray]]:
    """A function reading every array of a ``.weights.h5`` file, by its HDF5 path."""
    return _weights
