"""The expression nodes (schedules/expressions.py), computed against NumPy and closed forms.

Every node runs in each backend's pass: its values on a vector of steps (negative ones too,
where ``//`` and ``%`` follow Python) are compared with NumPy's float32 results, constant
sub-expressions with Python's float64 arithmetic rounded once.
"""

import keras
import numpy as np
import pytest

from hyperstep import parse
from hyperstep.errors import InvalidArgumentError, InvalidTypeError
from hyperstep.schedules import base
from hyperstep.schedules.expressions import (
    BinaryOp,
    Chain,
    Constant,
    Epoch,
    Function,
    Negate,
    Step,
    as_schedule,
    bind_epochs,
    clip,
    folded,
    maximum,
    minimum,
    uses_epoch,
)
from hyperstep.schedules.families import Linear

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

STEPS = np.array([-7.0, -3.0, -1.0, 0.0, 1.0, 2.0, 3.0, 7.0, 10.0, 250.0], dtype=np.float32)


def values(schedule: base.Schedule, steps: np.ndarray = STEPS) -> np.ndarray:
    return np.asarray(keras.ops.convert_to_numpy(schedule(steps)))


NUMPY_BINARY = {
    "+": np.add,
    "-": np.subtract,
    "*": np.multiply,
    "/": np.divide,
    "//": np.floor_divide,  # Python's: floor(a / b)
    "%": np.mod,  # Python's: the sign of b
    "**": np.power,
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
}


@pytest.mark.parametrize("op", sorted(NUMPY_BINARY))
def test_binary_op_computes_numpys_float32_operator(op: str) -> None:
    right = 2.0 if op == "**" else 3.0
    expected = NUMPY_BINARY[op](STEPS, np.float32(right)).astype(np.float32)
    np.testing.assert_allclose(values(BinaryOp(op, Step(), right)), expected, rtol=1e-6)


def test_floor_division_and_modulo_follow_python_for_negative_operands() -> None:
    steps = [-7.0, -1.0, 5.0]
    floor_div, mod = BinaryOp("//", Step(), 3), BinaryOp("%", Step(), 3)
    assert list(values(floor_div, np.array(steps))) == [a // 3 for a in steps]
    assert list(values(mod, np.array(steps))) == [a % 3 for a in steps]
    assert list(values(BinaryOp("%", Step(), -3), np.array(steps))) == [a % -3 for a in steps]


def test_operators_on_schedules_build_the_nodes() -> None:
    s = Step()
    assert isinstance(s + 1, BinaryOp) and (s + 1).op == "+"
    assert isinstance(2**s, BinaryOp) and isinstance((2**s).left, Constant)
    assert isinstance(-s, Negate)
    assert base.CLASSES["binary"] is BinaryOp and base.CLASSES["negate"] is Negate
    np.testing.assert_array_equal(values(10 - s * 2), (10 - STEPS * 2).astype(np.float32))
    np.testing.assert_array_equal(values(-s), -STEPS)


def test_a_chain_is_the_product_of_its_comparisons() -> None:
    s = Chain(["<", "<="], [0, Step(), 7])
    expected = ((0 < STEPS) & (STEPS <= 7)).astype(np.float32)
    np.testing.assert_array_equal(values(s), expected)
    assert repr(s) == "0.0 < step <= 7.0"
    with pytest.raises(InvalidArgumentError, match="one operand more"):
        Chain(["<"], [0, Step(), 7])


NUMPY_FUNCTIONS = {
    "floor": lambda x: np.floor(x / 4),
    "ceil": lambda x: np.ceil(x / 4),
    "exp": lambda x: np.exp(x / 100),
    "log": lambda x: np.log(np.abs(x) + 1),
    "sqrt": lambda x: np.sqrt(np.abs(x)),
    "cos": lambda x: np.cos(x / 4),
    "sin": lambda x: np.sin(x / 4),
    "abs": np.abs,
}
ARGUMENTS = {
    "floor": lambda s: s / 4,
    "ceil": lambda s: s / 4,
    "exp": lambda s: s / 100,
    "log": lambda s: Function("abs", [s]) + 1,
    "sqrt": lambda s: Function("abs", [s]),
    "cos": lambda s: s / 4,
    "sin": lambda s: s / 4,
    "abs": lambda s: s,
}


@pytest.mark.parametrize("name", sorted(NUMPY_FUNCTIONS))
def test_one_argument_functions_match_numpy(name: str) -> None:
    s = Function(name, [ARGUMENTS[name](Step())])
    expected = NUMPY_FUNCTIONS[name](STEPS.astype(np.float32)).astype(np.float32)
    np.testing.assert_allclose(values(s), expected, rtol=2e-6, atol=1e-7)


def test_min_max_where_and_clip_match_numpy() -> None:
    np.testing.assert_array_equal(values(minimum(Step(), 2)), np.minimum(STEPS, 2))
    np.testing.assert_array_equal(values(maximum(Step(), 2)), np.maximum(STEPS, 2))
    where = Function("where", [BinaryOp(">", Step(), 2), Step() * 10, -1.0])
    np.testing.assert_array_equal(values(where), np.where(STEPS > 2, STEPS * 10, -1.0))
    np.testing.assert_array_equal(values(clip(Step(), -1, 3)), np.clip(STEPS, -1, 3))
    np.testing.assert_array_equal(values(clip(Step(), high=3)), np.minimum(STEPS, 3))
    np.testing.assert_array_equal(values(Step().clip(low=2)), np.maximum(STEPS, 2))
    with pytest.raises(InvalidArgumentError, match="needs `low`, `high` or both"):
        clip(Step())
    with pytest.raises(InvalidArgumentError, match="takes 3 arguments"):
        Function("where", [Step(), 1.0])


def test_constant_sub_expressions_fold_in_float64_and_round_once() -> None:
    s = (Constant(0.001) - 1e-05) / (15 - 1) * Epoch(10)
    assert folded(s.left) == (0.001 - 1e-05) / 14  # float64, as Python computes it
    steps = np.array([0.0, 10.0, 140.0])
    expected = np.float32((0.001 - 1e-05) / 14) * np.floor(steps / 10).astype(np.float32)
    np.testing.assert_array_equal(values(s, steps), expected)
    assert folded(Step() + 1) is None
    assert folded(Function("sqrt", [Constant(16.0)])) == 4.0
    with pytest.raises(InvalidArgumentError, match="no finite value"):
        BinaryOp("/", 1.0, 0.0)


def test_epoch_is_floor_of_step_over_steps_per_epoch_once_bound() -> None:
    s = 0.1 * 0.5 ** Epoch()
    assert uses_epoch(s)
    with pytest.raises(InvalidArgumentError, match="steps_per_epoch"):
        s(0)
    bound = bind_epochs(s, 4)
    assert not uses_epoch(bound)
    steps = np.arange(0.0, 20.0)
    expected = np.float32(0.1) * np.float32(0.5) ** np.floor(steps / 4).astype(np.float32)
    np.testing.assert_allclose(values(bound, steps), expected, rtol=1e-7)


def test_repr_is_an_expression_parse_reads_back() -> None:
    floor_div, mod = BinaryOp("//", Step(), 3), BinaryOp("%", Step(), 5)
    s = -(Step() ** 2) + Function("max", [floor_div, -2.0]) * BinaryOp(">=", mod, 1)
    assert repr(s) == "-step ** 2.0 + max(step // 3.0, -2.0) * (step % 5.0 >= 1.0)"
    np.testing.assert_array_equal(values(parse(repr(s))), values(s))
    assert repr(Negate(Constant(-2.0)) ** 2) == "(-(-2.0)) ** 2.0"


def test_as_schedule_reads_numbers_schedules_text_and_keras_schedules() -> None:
    assert isinstance(as_schedule(np.float32(0.5)), Constant)
    step = Step()
    assert as_schedule(step) is step
    np.testing.assert_array_equal(values(as_schedule("step / 2")), STEPS / 2)
    keras_schedule = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    converted = as_schedule(keras_schedule)
    steps = np.array([0.0, 5.0, 10.0, 30.0], dtype=np.float32)
    expected = [float(keras.ops.convert_to_numpy(keras_schedule(s))) for s in steps]
    assert list(values(converted, steps)) == expected
    # the readers serve the operands of the nodes too
    np.testing.assert_array_equal(values(Step() + "step"), STEPS * 2)
    with pytest.raises(InvalidTypeError, match="not a bool"):
        as_schedule(True)
    with pytest.raises(InvalidTypeError, match="expression string"):
        as_schedule([1.0])


def test_configs_saved_when_the_nodes_lived_in_base_still_load() -> None:
    s = BinaryOp("*", Linear(1.0, 0.0, steps=100), Function("cos", [Step() / 50]))
    saved = keras.saving.serialize_keras_object(s)
    assert saved["registered_name"] == "hyperstep>BinaryOp"

    def to_base(config: object) -> object:  # as a file saved before the split names them
        if isinstance(config, dict):
            moved = {k: to_base(v) for k, v in config.items()}
            if moved.get("module") == "hyperstep.schedules.expressions":
                moved["module"] = "hyperstep.schedules.base"
            return moved
        if isinstance(config, list):
            return [to_base(v) for v in config]
        return config

    old = to_base(saved)
    assert "hyperstep.schedules.base" in repr(old)
    loaded = keras.saving.deserialize_keras_object(old)
    assert type(loaded) is BinaryOp and repr(loaded) == repr(s)
    steps = np.arange(0.0, 120.0, 7.0, dtype=np.float32)
    expected = (np.maximum(100 - steps, 0) / 100) * np.cos(steps / 50)
    np.testing.assert_allclose(values(loaded, steps), expected.astype(np.float32), rtol=2e-6)
