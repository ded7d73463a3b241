"""The Schedule base (schedules/base.py): arithmetic, repr precedence, config, epochs, errors."""

import json
import math
import types

import keras
import numpy as np
import pytest

import hyperstep.schedules as hs
from hyperstep import parse
from hyperstep.errors import InvalidArgumentError, InvalidTypeError
from hyperstep.schedules.base import check_number, check_positive_int, is_number
from hyperstep.schedules.expressions import (
    BinaryOp,
    Constant,
    Epoch,
    Function,
    Negate,
    Step,
    uses_epoch,
)

STEPS = np.arange(0, 50)
step = Step()
cos = hs.cosine(1.0, steps=40, end=0.25)


def test_every_schedule_is_a_keras_learning_rate_schedule():
    for s in (Constant(1.0), step, Epoch(3), step + 1, -step, hs.minimum(step, 1)):
        assert isinstance(s, keras.optimizers.schedules.LearningRateSchedule)


@pytest.mark.parametrize(
    ("schedule", "expected"),
    [
        (cos * 2 + 1, lambda c, t: c * 2 + 1),
        (1 - cos, lambda c, t: 1 - c),
        (2 / (cos + 1), lambda c, t: 2 / (c + 1)),
        (cos**2, lambda c, t: c**2),
        (0.5**cos, lambda c, t: 0.5**c),
        (-cos, lambda c, t: -c),
        (cos / 4 - step / 100, lambda c, t: c / 4 - t / 100),
        (cos.clip(0.5, 0.75), lambda c, t: np.clip(c, 0.5, 0.75)),
        (cos.clip(high=0.5), lambda c, t: np.minimum(c, 0.5)),
        (cos.clip(low=0.5), lambda c, t: np.maximum(c, 0.5)),
        (hs.maximum(cos, step / 40), lambda c, t: np.maximum(c, t / 40)),
        (hs.minimum(0.6, cos), lambda c, t: np.minimum(0.6, c)),
        (BinaryOp("<", step, 10), lambda c, t: (t < 10).astype(float)),
        (BinaryOp(">=", cos, 0.5) * cos, lambda c, t: (c >= 0.5) * c),
        (Function("where", [step - 20, cos, 0.0]), lambda c, t: np.where(t != 20, c, 0.0)),
        (Function("sqrt", [step]), lambda c, t: np.sqrt(t)),
        (Function("floor", [step / 7]), lambda c, t: np.floor(t / 7)),
    ],
    ids=lambda value: None if isinstance(value, types.FunctionType) else repr(value),
)
def test_arithmetic_matches_numpy_on_the_operands(schedule, expected):
    c = np.asarray(cos(STEPS), np.float64)
    np.testing.assert_allclose(schedule(STEPS), expected(c, STEPS), rtol=1e-6, atol=1e-7)


EXPRESSIONS = [
    ((step + 1.5) * 2.5, "(step + 1.5) * 2.5"),
    (step + 1.5 * step, "step + 1.5 * step"),
    (step - (step - 1.5), "step - (step - 1.5)"),
    ((step - 1.5) - step, "step - 1.5 - step"),
    (step / (step * 2.5), "step / (step * 2.5)"),
    (step / 2.5 * step, "step / 2.5 * step"),
    (-(step + 1.5), "-(step + 1.5)"),
    ((-step) ** 2.5, "(-step) ** 2.5"),
    (-(step**2.5), "-step ** 2.5"),
    (step ** (step**2.5), "step ** step ** 2.5"),
    ((step**step) ** 2.5, "(step ** step) ** 2.5"),
    (Constant(-2.5) ** step, "(-2.5) ** step"),
    (step**-2.5, "step ** (-2.5)"),
    (BinaryOp("<", step, 10.5) * 2.5, "(step < 10.5) * 2.5"),
    (cos * 0.5, "cosine(1.0, steps=40, end=0.25) * 0.5"),
    (hs.clip(step / 100.5, 0.5, 1.5), "clip(step / 100.5, 0.5, 1.5)"),
    (hs.minimum(step, cos), "min(step, cosine(1.0, steps=40, end=0.25))"),
]


@pytest.mark.parametrize(("schedule", "text"), EXPRESSIONS, ids=[t for _, t in EXPRESSIONS])
def test_repr_parenthesizes_by_precedence(schedule, text):
    assert repr(schedule) == text


# Schedules have no Python comparison operators, so comparisons are left to hs.parse's tests
PYTHON_EXPRESSIONS = [(s, t) for s, t in EXPRESSIONS if "<" not in t]


@pytest.mark.parametrize(
    ("schedule", "text"), PYTHON_EXPRESSIONS, ids=[t for _, t in PYTHON_EXPRESSIONS]
)
def test_repr_read_back_as_python_has_the_same_values(schedule, text):
    # the expression syntax is a subset of Python's: evaluating it with the vocabulary
    # bound checks that the parentheses keep the meaning (hs.parse is tested on its own)
    names = {"step": step, "cosine": hs.cosine, "min": hs.minimum, "clip": hs.clip}
    rebuilt = eval(repr(schedule), names)
    rebuilt = hs.as_schedule(rebuilt)
    np.testing.assert_allclose(rebuilt(STEPS + 1), schedule(STEPS + 1), rtol=1e-6)


@pytest.mark.parametrize(
    "schedule",
    [
        cos * 2 + 1,
        -(step / 1000) + hs.clip(cos, 0.3, 0.9),
        hs.maximum(Epoch(10), 2) * 0.5,
        0.1 * 0.9 ** Function("floor", [Epoch(5)]),
        Constant(3.0),
        Function("where", [BinaryOp("<", step, 5), 1.0, cos]),
    ],
    ids=repr,
)
def test_config_json_round_trip_is_equal_by_value(schedule):
    text = json.dumps(keras.saving.serialize_keras_object(schedule))
    back = keras.saving.deserialize_keras_object(json.loads(text))
    assert type(back) is type(schedule)
    assert repr(back) == repr(schedule)
    np.testing.assert_array_equal(back(STEPS), schedule(STEPS))


def test_constant_keeps_the_shape_of_the_steps():
    assert tuple(Constant(0.5)(np.zeros((2, 3))).shape) == (2, 3)
    assert Constant(0.5)(7).dtype == "float32"


def test_bind_epochs_binds_every_unbound_epoch_in_the_tree():
    s = 0.1 * 0.5 ** Epoch() + hs.minimum(Epoch(), 3) * 0.0
    assert uses_epoch(s)
    bound = hs.bind_epochs(s, 10)
    assert not uses_epoch(bound)
    expected = 0.1 * 0.5 ** np.floor(STEPS / 10)
    np.testing.assert_allclose(bound(STEPS), expected, rtol=1e-6)


def test_bind_epochs_leaves_bound_epochs_alone():
    s = Epoch(4) + Epoch()
    bound = hs.bind_epochs(s, 10)
    np.testing.assert_array_equal(bound(STEPS), np.floor(STEPS / 4) + np.floor(STEPS / 10))


def test_unbound_epoch_raises_naming_steps_per_epoch_when_evaluated():
    with pytest.raises(InvalidArgumentError, match="Received: steps_per_epoch=None"):
        (Epoch() * 2)(5)


def test_replace_rebuilds_only_the_replaced_nodes():
    s = cos * 2 + step
    out = s.replace(lambda n: Constant(1.0) if isinstance(n, Step) else None)
    assert repr(out) == "cosine(1.0, steps=40, end=0.25) * 2.0 + 1.0"
    assert repr(s) == "cosine(1.0, steps=40, end=0.25) * 2.0 + step"


@pytest.mark.parametrize(
    ("build", "error", "pattern"),
    [
        (lambda: BinaryOp("@", step, 2), InvalidArgumentError, "Received: op='@'"),
        (lambda: Function("tanh", [step]), InvalidArgumentError, "Received: name='tanh'"),
        (lambda: Function("min", [step]), InvalidArgumentError, "takes 2 arguments"),
        (lambda: Function("exp", "step"), InvalidArgumentError, "Received: args='step'"),
        (lambda: hs.clip(step), InvalidArgumentError, "Received: low=None, high=None"),
        (lambda: step + True, InvalidTypeError, "not a bool. Received: right=True"),
        (lambda: Negate([1]), InvalidTypeError, r"Received: operand=\[1\]"),
        (lambda: hs.as_schedule(object(), name="beta_1"), InvalidTypeError, "beta_1=<object"),
        (lambda: Constant(math.nan), InvalidArgumentError, "Received: value=nan"),
        (lambda: Constant("0.1"), InvalidTypeError, "Received: value='0.1'"),
        (lambda: Epoch(0), InvalidArgumentError, "Received: steps_per_epoch=0"),
        (lambda: Epoch(2.5), InvalidArgumentError, "Received: steps_per_epoch=2.5"),
        (lambda: hs.bind_epochs(step, -1), InvalidArgumentError, "steps_per_epoch=-1"),
    ],
)
def test_base_errors_name_the_argument_and_received_value(build, error, pattern):
    with pytest.raises(error, match=pattern):
        build()


def test_check_helpers_accept_numpy_scalars_and_reject_bools():
    assert check_number("f", "x", np.float32(0.5)) == 0.5
    assert check_positive_int("f", "n", np.int64(3)) == 3
    assert check_positive_int("f", "n", 4.0) == 4
    with pytest.raises(InvalidTypeError, match="Received: n=True"):
        check_positive_int("f", "n", True)
    with pytest.raises(InvalidArgumentError, match=r"`f\(x=...\)` must be a finite number"):
        check_number("f", "x", float("inf"))


def test_negative_zero_base_of_a_power_keeps_its_parentheses() -> None:
    # found by the parse round-trip fuzz: `-0.0 ** step` reads back as -(0.0 ** step)
    s = BinaryOp("**", Constant(-0.0), Step())
    assert repr(s) == "(-0.0) ** step"
    np.testing.assert_array_equal(parse(repr(s))([0, 1, 2]), s([0, 1, 2]))


class Shifted(hs.Schedule):
    """A family without an ``arguments`` of its own: the base reads its attributes."""

    keyword = "shifted"
    positional = 1

    def __init__(self, schedule: hs.Schedule, shift: float = 0.0) -> None:
        self.schedule, self.shift = schedule, shift

    def value(self, step):  # type: ignore[no-untyped-def]
        return self.schedule.value(step) + self.shift


def test_arguments_default_to_the_attributes_named_by_the_signature() -> None:
    s = Shifted(cos, shift=0.5)
    assert s.arguments() == {"schedule": cos, "shift": 0.5}
    assert s.children() == [cos]
    assert repr(s) == f"shifted({cos!r}, shift=0.5)"
    assert repr(Shifted(cos)) == f"shifted({cos!r})"
    copy = Shifted.from_config(json.loads(json.dumps(s.get_config())))
    assert repr(copy) == repr(s)


def test_is_number_takes_python_and_numpy_numbers_and_refuses_bools() -> None:
    assert is_number(3) and is_number(2.5) and is_number(np.float32(0.5)) and is_number(np.int64(7))
    assert not any(is_number(v) for v in (True, np.bool_(True), "3", None, np.array(1.0)))
