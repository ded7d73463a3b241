"""The units of hyperstep.schedules.keras_formulas: the ``*_decay`` words give Keras's own
float32 values bit for bit (eagerly, TensorFlow), hold where Keras holds, and refuse bad
arguments naming them. Built through ``hs.parse`` (their public spelling)."""

import re

import keras
import numpy as np
import pytest

from hyperstep import parse
from hyperstep.errors import InvalidArgumentError, InvalidTypeError

K = keras.optimizers.schedules
STEPS = np.array([0, 1, 2, 7, 9, 10, 11, 33, 99, 100, 101, 250, 1000, 5000])

CASES = [
    ("exponential_decay(0.1, 7, 0.93)", K.ExponentialDecay(0.1, 7, 0.93)),
    ("exponential_decay(0.1, 7, 0.5, staircase=True)", K.ExponentialDecay(0.1, 7, 0.5, True)),
    ("polynomial_decay(0.3, 100)", K.PolynomialDecay(0.3, 100)),
    (
        "polynomial_decay(0.3, 33, 0.01, power=0.7, cycle=True)",
        K.PolynomialDecay(0.3, 33, 0.01, power=0.7, cycle=True),
    ),
    ("cosine_decay(0.7, 100, alpha=0.1)", K.CosineDecay(0.7, 100, alpha=0.1)),
    (
        "cosine_decay(0.0, 90, warmup_target=0.5, warmup_steps=11)",
        K.CosineDecay(0.0, 90, warmup_target=0.5, warmup_steps=11),
    ),
    ("cosine_decay_restarts(0.5, 10)", K.CosineDecayRestarts(0.5, 10)),
    (
        "cosine_decay_restarts(0.5, 9, t_mul=1.0, m_mul=0.8, alpha=0.05)",
        K.CosineDecayRestarts(0.5, 9, t_mul=1.0, m_mul=0.8, alpha=0.05),
    ),
]


@pytest.mark.parametrize(("text", "theirs"), CASES, ids=[t for t, _ in CASES])
def test_each_word_is_keras_bit_for_bit_step_by_step(text, theirs) -> None:
    ours = parse(text)
    expected = np.array([keras.ops.convert_to_numpy(theirs(int(s))) for s in STEPS])
    got = np.array([keras.ops.convert_to_numpy(ours(int(s))) for s in STEPS])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(
    ("text", "natural"),
    [
        ("exponential_decay(0.1, 7, 0.93)", None),
        ("polynomial_decay(0.3, 100)", 100),
        ("polynomial_decay(0.3, 100, cycle=True)", None),
        ("cosine_decay(0.7, 100)", 100),
        ("cosine_decay(0.0, 90, warmup_target=0.5, warmup_steps=11)", 101),
        ("cosine_decay_restarts(0.5, 10)", None),
    ],
)
def test_natural_steps_is_where_keras_holds_its_last_value(text, natural) -> None:
    assert parse(text).natural_steps == natural


def test_repr_writes_keras_argument_names_and_reads_back() -> None:
    s = parse("cosine_decay(0.0, 90, warmup_target=0.5, warmup_steps=11.0)")
    assert repr(s) == "cosine_decay(0.0, 90, warmup_target=0.5, warmup_steps=11)"
    assert parse(repr(s)).arguments() == s.arguments()


def test_bad_arguments_name_the_argument_and_value() -> None:
    from hyperstep.schedules import keras_formulas as kf

    cases = [
        (lambda: kf.cosine_decay(1.0, 10, warmup_steps=-1), InvalidArgumentError, "steps=-1"),
        (lambda: kf.exponential_decay(1.0, 0, 0.5), InvalidArgumentError, "decay_steps=0"),
        (lambda: kf.polynomial_decay(1e39, 10), InvalidArgumentError, "learning_rate=1e+39"),
        (lambda: kf.polynomial_decay(1.0, 10, cycle=1), InvalidTypeError, "Received: cycle=1"),
        (lambda: kf.cosine_decay_restarts(1.0, 10, t_mul="2"), InvalidTypeError, "t_mul='2'"),
    ]
    for build, error, text in cases:
        with pytest.raises(error, match=re.escape(text)):
            build()
