"""Parity with Keras's six built-in schedules, at every step from 0 to 3x past the end,
both for the vocabulary spelling and for ``from_keras``."""

import importlib.util
import pathlib

import keras
import numpy as np
import pytest

import hyperstep.schedules as hs

_spec = importlib.util.spec_from_file_location(
    "schedule_reference", pathlib.Path(__file__).with_name("reference.py")
)
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

K = keras.optimizers.schedules

# (Keras schedule, the same schedule in the vocabulary, end of range, boundaries)
CASES = [
    (K.ExponentialDecay(0.1, 10, 0.96), hs.exponential(0.1, 0.96, every=10), 100, [10]),
    (
        K.ExponentialDecay(0.1, 10, 0.5, staircase=True),
        hs.exponential(0.1, 0.5, every=10, staircase=True),
        100,
        [10, 20],
    ),
    (K.ExponentialDecay(1.0, 3, 1.2), hs.exponential(1.0, 1.2, every=3), 30, [3]),
    (
        K.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1]),
        hs.piecewise([10, 20], [1.0, 0.5, 0.1], inclusive=True),
        20,
        [10, 20],
    ),
    (
        K.PiecewiseConstantDecay([0, 1, 7], [4.0, 3.0, 2.0, 1.0]),
        hs.piecewise([0, 1, 7], [4.0, 3.0, 2.0, 1.0], inclusive=True),
        7,
        [0, 1, 7],
    ),
    (K.PolynomialDecay(0.1, 100), hs.polynomial(0.1, 1e-4, steps=100), 100, [100]),
    (
        K.PolynomialDecay(0.1, 100, 0.01, power=2.0),
        hs.polynomial(0.1, 0.01, steps=100, power=2.0),
        100,
        [100],
    ),
    (
        K.PolynomialDecay(0.1, 10, 0.01, power=0.5, cycle=True),
        hs.polynomial(0.1, 0.01, steps=10, power=0.5, cycle=True),
        10,
        [10, 20],
    ),
    (K.InverseTimeDecay(0.1, 10, 0.5), hs.inverse_time(0.1, 0.5, every=10), 100, [10]),
    (
        K.InverseTimeDecay(0.1, 10, 0.5, staircase=True),
        hs.inverse_time(0.1, 0.5, every=10, staircase=True),
        100,
        [10, 20],
    ),
    (K.CosineDecay(1.0, 100), hs.cosine(1.0, steps=100), 100, [100]),
    (K.CosineDecay(1e-3, 100, alpha=0.1), hs.cosine(1e-3, steps=100, end=1e-4), 100, [100]),
    (
        K.CosineDecayRestarts(1.0, 10, t_mul=2.0, m_mul=0.5),
        hs.cosine_restarts(1.0, steps=10, m_mul=0.5),
        70,
        [10, 30, 70],
    ),
    (
        K.CosineDecayRestarts(0.5, 10, t_mul=1.0, m_mul=0.9, alpha=0.2),
        hs.cosine_restarts(0.5, steps=10, t_mul=1.0, m_mul=0.9, end=0.1),
        30,
        [10, 20, 30],
    ),
    (
        K.CosineDecayRestarts(1.0, 5, t_mul=3.0, alpha=0.1),
        hs.cosine_restarts(1.0, steps=5, t_mul=3.0, end=0.1),
        65,
        [5, 20, 65],
    ),
]
IDS = [f"{type(k).__name__}-{i}" for i, (k, *_rest) in enumerate(CASES)]


@pytest.mark.parametrize(("keras_schedule", "ours", "end", "boundaries"), CASES, ids=IDS)
def test_vocabulary_matches_keras_at_every_step(keras_schedule, ours, end, boundaries):
    steps = ref.grid(end, *boundaries)
    assert_matches_keras(ours(steps), keras_schedule, steps)


def assert_matches_keras(values, keras_schedule, steps):
    """``ref.assert_close``, plus, for ExponentialDecay, Keras's own rate rounding.

    Keras computes ``float32(rate) ** p``: the float32 rounding of ``rate`` (relative
    ``delta``) grows into a relative error of ``p * delta`` (1.2 rounds by 4e-8, so 30
    periods give 1.2e-6). hyperstep corrects for it (see the float64 test below), so the
    two differ by exactly that much and no more.
    """
    expected = np.asarray(keras_schedule(steps), dtype=np.float64)
    if isinstance(keras_schedule, K.ExponentialDecay):
        rate = keras_schedule.decay_rate
        delta = abs(float(np.float32(rate)) / rate - 1.0)
        p = np.asarray(steps) / keras_schedule.decay_steps
        np.testing.assert_allclose(values, expected, rtol=1e-6 + float(p.max()) * delta)
        truth = keras_schedule.initial_learning_rate * rate ** (
            np.floor(p) if keras_schedule.staircase else p
        )
        ref.assert_close(values, truth)
    else:
        ref.assert_close(values, expected)


@pytest.mark.parametrize(("keras_schedule", "ours", "end", "boundaries"), CASES, ids=IDS)
def test_from_keras_matches_keras_and_the_vocabulary(keras_schedule, ours, end, boundaries):
    # from_keras repeats Keras's float32 operations: bitwise Keras for the same call (here
    # a vector of steps; one step at a time and traced in test_keras_bitwise.py)
    converted = hs.from_keras(keras_schedule)
    steps = ref.grid(end, *boundaries)
    ref.assert_close(converted(steps), np.asarray(keras_schedule(steps), np.float64))
    np.testing.assert_array_equal(
        np.asarray(converted(steps)).view(np.int32),
        np.asarray(keras_schedule(steps), np.float32).view(np.int32),
    )


WARMUP_CASES = [
    # (initial, decay_steps, alpha, warmup_target, warmup_steps)
    (0.0, 100, 0.1, 1.0, 10),
    (0.2, 50, 0.0, 1e-3, 25),
    (1.0, 30, 0.5, 0.5, 1),
]


@pytest.mark.parametrize("args", WARMUP_CASES)
def test_cosine_decay_with_warmup_matches_keras_on_a_grid(args):
    lr0, decay, alpha, target, warm = args
    k = K.CosineDecay(lr0, decay, alpha=alpha, warmup_target=target, warmup_steps=warm)
    ours = hs.warmup(hs.cosine(target, steps=decay, end=alpha * target), steps=warm, start=lr0)
    total = warm + decay
    points = sorted(
        {0, 1, warm // 2, total // 2, 3 * total}
        | {b + d for b in (warm, total) for d in (-1, 0, 1) if b + d >= 0}
    )
    # Keras's warmup branch is an ops.cond: it cannot take a vector of steps, so loop
    expected = [float(k(t)) for t in points]
    ref.assert_close(ours(points), expected)
    ref.assert_close(hs.from_keras(k)(points), expected)


def test_cosine_decay_with_warmup_target_but_no_warmup_steps_decays_from_the_target():
    k = K.CosineDecay(0.0, 20, alpha=0.1, warmup_target=2.0)
    converted = hs.from_keras(k)
    assert repr(converted) == "cosine_decay(0.0, 20, alpha=0.1, warmup_target=2.0)"
    ref.assert_close(converted(np.arange(61)), [float(k(t)) for t in range(61)])


def test_cosine_to_zero_stays_relatively_accurate_up_to_the_last_step():
    # Keras forms 0.5 * (1 + cos(pi * t)) and loses relative accuracy as it nears 0 (1e-5
    # at step 99 of 100); hyperstep's sin(pi / 2 * (1 - t)) ** 2 keeps it to float32 rounding
    steps = np.arange(100)
    truth = ref.cosine(1.0, 100)(steps)
    ours = hs.cosine(1.0, steps=100)(steps)  # from_keras gives Keras's own bits instead
    np.testing.assert_allclose(ours, truth, rtol=1e-6, atol=0)
    keras_bits = np.asarray(hs.from_keras(K.CosineDecay(1.0, 100))(steps), np.float64)
    assert np.max(np.abs(keras_bits / truth - 1)) > 1e-6  # Keras's own, less accurate
