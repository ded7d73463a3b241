"""``opt.learning_rate = x`` (what Keras's callbacks write) reads back exactly float32(x) at
that step, as on a plain Keras optimizer, while the schedule keeps running."""

from __future__ import annotations

import unittest
import warnings

import keras
import numpy as np
import pytest

import hyperstep as hs

with warnings.catch_warnings():  # Keras's test module uses its own pytest mark
    warnings.simplefilter("ignore", pytest.PytestUnknownMarkWarning)
    try:  # in Keras 3.15.1's wheel, not in 3.10's (`make test-oldest`)
        from keras.src.callbacks import reduce_lr_on_plateau_test as keras_tests
    except ImportError:
        keras_tests = None

_KerasCase: type = keras_tests.ReduceLROnPlateauTest if keras_tests else unittest.TestCase


class _WrappedReduceLROnPlateau(_KerasCase):
    """Keras's own ReduceLROnPlateau test case, with the optimizer wrapped by hs.scheduled."""

    def setUp(self):
        super().setUp()
        self.model.compile(loss="mse", optimizer=hs.scheduled(keras.optimizers.Adam(0.1)))


@pytest.mark.skipif(
    keras_tests is None, reason="this Keras's wheel lacks its ReduceLROnPlateau test module"
)
def test_keras_reduces_lr_with_model_fit_passes_with_a_wrapped_optimizer():
    case = _WrappedReduceLROnPlateau("test_reduces_lr_with_model_fit")
    result = unittest.TestResult()
    case.run(result)
    assert result.wasSuccessful(), (result.failures + result.errors)[0][1][-3000:]
    assert "learning_rate" in case.model.optimizer.hyperparameters  # it ran wrapped


def _reachable(base: np.float32, target: np.float32) -> bool:
    """Whether some float32 scale gives float32(base * scale) == target (searched +-8 ulp
    around target / base, an independent brute force)."""
    s = np.float32(float(target) / float(base))
    for _ in range(8):
        s = np.nextafter(s, np.float32(0))
    for _ in range(17):
        if np.float32(base * s) == target:
            return True
        s = np.nextafter(s, np.float32(np.inf))
    return False


@pytest.mark.parametrize("start", [0.1, 1e-3, 3e-4, 0.7, 123.0])
@pytest.mark.parametrize("factor", [0.1, 0.5, 0.3, 0.2, 1 / 3])
def test_assigning_a_number_reads_back_float32_of_it_like_plain_keras(start, factor):
    """Exact whenever a float32 scale can give it (the value is schedule * scale); else the
    nearest, one ulp off."""
    plain = keras.optimizers.Adam(start)
    ours = hs.scheduled(keras.optimizers.Adam(start))
    for _ in range(3):  # three reductions in a row, as the callback makes them
        x = float(plain.learning_rate) * factor
        plain.learning_rate = x
        ours.learning_rate = x
        target = np.float32(plain.learning_rate)
        got = np.float32(ours.learning_rate)
        if _reachable(np.float32(start), target):
            assert got == target
        else:
            assert abs(int(got.view(np.int32)) - int(target.view(np.int32))) == 1


def test_assigning_to_a_running_schedule_reads_back_exactly_and_keeps_it_running():
    opt = hs.scheduled(keras.optimizers.SGD(hs.schedules.cosine(0.1, steps=100)))
    hp = opt.hyperparameters["learning_rate"]
    reached = 0
    for step in range(0, 100, 7):
        hp.clock.step.assign(step)
        x = float(opt.learning_rate) * 0.37
        opt.learning_rate = x
        got, target = np.float32(opt.learning_rate), np.float32(x)
        if _reachable(np.float32(hp.base_at(step)), target):
            assert got == target
            reached += 1
        else:
            assert abs(int(got.view(np.int32)) - int(target.view(np.int32))) == 1
    assert reached >= 8  # most steps: exact
    hp.clock.step.assign(100)
    assert float(opt.learning_rate) == 0.0  # the cosine still reaches its end
