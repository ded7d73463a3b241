"""The expression forms real recipes use: ``%`` and ``//`` with Python's semantics, ``pi`` and
``e``, constant sub-expressions folded in float64 as Python folds them, and epoch tables
with ``piecewise(..., unit="epoch")``."""

import math

import numpy as np
import pytest

import hyperstep as hs
from hyperstep import parse
from hyperstep.errors import ScheduleSyntaxError
from hyperstep.schedules import bind_epochs, piecewise
from hyperstep.schedules.expressions import Step


def values(schedule, steps) -> np.ndarray:
    return np.asarray(schedule(np.asarray(steps)), dtype=np.float32)


OPERANDS = [-7.0, -6.0, -3.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.5, 6.0, 7.0, 10.0]
DIVISORS = [3.0, -3.0, 2.5, -2.5, 0.5, -4.0, 1.0]


@pytest.mark.parametrize("op", ["%", "//"])
@pytest.mark.parametrize("divisor", DIVISORS)
def test_mod_and_floordiv_follow_python_with_negative_operands(op, divisor) -> None:
    python = {"%": lambda a, b: a % b, "//": lambda a, b: a // b}[op]
    # the step is the left operand (steps may be negative when the tree shifts them)
    schedule = parse(f"step {op} ({divisor!r})")
    expected = np.array([python(a, divisor) for a in OPERANDS], dtype=np.float32)
    np.testing.assert_array_equal(values(schedule, OPERANDS), expected)
    # and as the right operand, with the step as divisor (0 left out)
    divisors = [a for a in OPERANDS if a != 0.0]
    schedule = parse(f"({divisor!r}) {op} step")
    expected = np.array([python(divisor, a) for a in divisors], dtype=np.float32)
    np.testing.assert_array_equal(values(schedule, divisors), expected)


def test_mod_makes_a_cyclical_schedule_and_round_trips() -> None:
    schedule = parse("min(1.0, (epoch % 4) / 2)", steps_per_epoch=10)
    steps = np.arange(100)
    expected = [min(1.0, ((s // 10) % 4) / 2) for s in steps]
    np.testing.assert_array_equal(values(schedule, steps), np.float32(expected))
    np.testing.assert_array_equal(values(parse(repr(schedule)), steps), np.float32(expected))
    assert repr(parse("step // 3 % 2 * 4")) == "step // 3.0 % 2.0 * 4.0"
    assert repr(parse("step % (3 * 2)")) == "step % (3.0 * 2.0)"


def test_pi_and_e_are_pythons() -> None:
    assert float(parse("pi")(0)) == np.float32(math.pi)
    assert float(parse("e")(0)) == np.float32(math.e)
    schedule = parse("0.5 * (1 + cos(pi * step / 100))")
    expected = [0.5 * (1 + math.cos(math.pi * s / 100)) for s in range(101)]
    np.testing.assert_allclose(values(schedule, np.arange(101)), expected, atol=1e-7)
    assert float(parse("linear(0, e, steps=1)")(1)) == np.float32(math.e)


def test_constant_sub_expressions_are_folded_in_float64_like_python() -> None:
    # keras-io's speech Transformer: a Python-float slope times a float32 epoch tensor
    import tensorflow as tf

    init, peak, warmup_epochs = 1e-05, 0.001, 15

    def original(epoch):  # the constants are Python floats: folded in float64 by Python
        epoch = tf.cast(epoch, "float32")
        return init + ((peak - init) / (warmup_epochs - 1)) * epoch

    schedule = parse("1e-05 + ((0.001 - 1e-05) / (15 - 1)) * step")
    steps = np.arange(150)
    expected = original(tf.constant(steps)).numpy()
    np.testing.assert_array_equal(values(schedule, steps), expected)
    np.testing.assert_array_equal(values(parse(repr(schedule)), steps), expected)
    assert repr(schedule) == "1e-05 + (0.001 - 1e-05) / (15.0 - 1.0) * step"
    # float32 intermediates differ: the test can fail
    slope32 = (np.float32(0.001) - np.float32(1e-05)) / (np.float32(15) - np.float32(1))
    assert slope32 != np.float32((0.001 - 1e-05) / (15 - 1))


def test_folding_matches_python_for_functions_and_keeps_errors_to_float32() -> None:
    assert float(parse("sqrt(2) * step")(1)) == np.float32(math.sqrt(2))
    assert float(parse("exp(-(1 / 3)) + 0 * step")(0)) == np.float32(math.exp(-1 / 3))
    assert float(parse("where(1 < 2, 0.1 + 0.2, 0) + 0 * step")(0)) == np.float32(0.1 + 0.2)
    # an operation with no finite value on constants is inf or nan at every step: refused,
    # pointing at it (it used to be left to float32 and gave inf at every step)
    with pytest.raises(ScheduleSyntaxError, match="has no finite value") as info:
        parse("1 / (1 - 1) + step")
    assert info.value.column == 0


EPOCH_TABLE = [(5, 0.1), (10, 0.01), (15, 0.001)]  # keras-io's callbacks guide


def table_lr(epoch: int) -> float:
    lr = 0.1
    for start, value in EPOCH_TABLE:
        if epoch >= start:
            lr = value
    return lr


def test_piecewise_in_epochs_is_an_epoch_table() -> None:
    schedule = parse('piecewise([5, 10, 15], [0.1, 0.1, 0.01, 0.001], unit="epoch")')
    assert repr(schedule) == "piecewise([5, 10, 15], [0.1, 0.1, 0.01, 0.001], unit=epoch)"
    bound = bind_epochs(schedule, 7)
    steps = np.arange(7 * 20)
    expected = np.float32([table_lr(s // 7) for s in steps])
    np.testing.assert_array_equal(values(bound, steps), expected)
    np.testing.assert_array_equal(values(parse(repr(bound)), steps), expected)
    parsed = parse('piecewise([5, 10, 15], [0.1, 0.1, 0.01, 0.001], unit="epoch")', 7)
    np.testing.assert_array_equal(values(parsed, steps), expected)
    hp = hs.Hyperparameter(schedule, clock=hs.Clock(steps_per_epoch=7))
    np.testing.assert_array_equal(np.float32(hp.at(steps)), expected)


def test_piecewise_unit_may_be_any_schedule_and_rejects_other_strings() -> None:
    s = piecewise([0.5], [1.0, 2.0], unit=Step() / 10)
    assert [float(v) for v in s([4, 5])] == [1.0, 2.0]
    with pytest.raises(ValueError, match=r"piecewise\(unit=...\).*Received: unit='epochs'"):
        piecewise([1], [1.0, 2.0], unit="epochs")


def test_the_operator_error_lists_the_new_operators() -> None:
    with pytest.raises(ValueError, match=r"only the operators \+ - \* / // % \*\* are allowed"):
        parse("step @ 2")
