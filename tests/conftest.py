"""Test-wide settings: quiet TensorFlow logs, fixed seeds, TF backend unless told otherwise."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pytest
from hypothesis import settings

# property tests draw the same examples on every run and machine: CI cannot fail by chance
settings.register_profile("hyperstep", derandomize=True, database=None)
settings.load_profile("hyperstep")

#: A guard against a hung subprocess, never a speed check: generous enough for a loaded
#: machine (the whole suite took 23 minutes on a loaded 2-core one). Set
#: HYPERSTEP_TEST_TIMEOUT=seconds to change it.
HANG_TIMEOUT = float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600"))


@pytest.fixture(scope="session")
def hang_timeout() -> float:
    """Seconds a test's subprocess may run before it counts as hung (:data:`HANG_TIMEOUT`)."""
    return HANG_TIMEOUT


@pytest.fixture(autouse=True)
def _seed() -> None:
    import keras

    keras.utils.set_random_seed(0)
