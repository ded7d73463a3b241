"""Test-wide settings: quiet TensorFlow logs, fixed seeds, TF backend unless told otherwise."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pytest


@pytest.fixture(autouse=True)
def _seed() -> None:
    import keras

    keras.utils.set_random_seed(0)
