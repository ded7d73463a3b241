"""hyperstep.backends.keras_forms: each row of the table against Keras on every backend, the
row lookup, the form of a value (``keras_number``, ``in_dtype``, ``scalar_tensor``), and the
class Keras instantiates for an optimizer class and the name of its ``keras.optimizers``
base, checked against what Keras itself makes; ``trains_statelessly`` and ``after``."""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

import hyperstep as hs
from hyperstep.backends import keras_forms
from hyperstep.backends.fast_paths import native_variable
from hyperstep.backends.keras_forms import (
    ROWS,
    Request,
    Row,
    after,
    in_dtype,
    keras_base_name,
    keras_number,
    optimizer_class,
    row,
    scalar_tensor,
    trains_statelessly,
    with_tensor,
)
from hyperstep.optim import scheduled

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

K = keras.optimizers

#: per Keras class, arguments that put the names of its row to use (Keras's defaults else)
ARGUMENTS: dict[str, dict[str, float]] = {
    "Ftrl": {"l1_regularization_strength": 0.01, "l2_shrinkage_regularization_strength": 0.01},
    "RMSprop": {"momentum": 0.5},
    "SGD": {"momentum": 0.9},
}
#: a matrix (Muon's own update) and a vector (Muon's Adam), and three steps of gradients
START = [np.linspace(-1.0, 1.0, 12, dtype="float32").reshape(4, 3), np.ones(3, "float32")]
GRADIENTS = [
    [np.sin(np.arange(12, dtype="float32") + i).reshape(4, 3), np.full(3, 0.5 - i, "float32")]
    for i in range(3)
]


def _trained(optimizer: keras.optimizers.Optimizer) -> list[np.ndarray]:
    """Three ``stateless_apply`` steps (on torch the values cannot be Python floats there,
    as under ``torch.compile`` and with the clock on a GPU); on TensorFlow, which has no
    ``stateless_apply``, three ``apply`` steps."""
    variables = [keras.Variable(w) for w in START]
    optimizer.build(variables)
    if keras.backend.backend() == "tensorflow":
        for grads in GRADIENTS:
            optimizer.apply([ops.convert_to_tensor(g) for g in grads], variables)
        return [ops.convert_to_numpy(v) for v in variables]
    state = [v.value for v in optimizer.variables]
    values = [v.value for v in variables]
    for grads in GRADIENTS:
        tensors = [ops.convert_to_tensor(g) for g in grads]
        values, state = optimizer.stateless_apply(state, tensors, values)
    return [ops.convert_to_numpy(v) for v in values]


@pytest.mark.parametrize("name", sorted(ROWS))
def test_each_row_hands_keras_its_values_bitwise_as_its_python_floats(name: str) -> None:
    cls = getattr(K, name)
    arguments = ARGUMENTS.get(name, {})
    expected = _trained(cls(**arguments))
    got = _trained(hs.scheduled(cls(**arguments)))
    for want, found in zip(expected, got, strict=True):
        np.testing.assert_array_equal(found, want)
    assert max(float(np.max(np.abs(w - s))) for w, s in zip(expected, START, strict=True)) > 0


@pytest.mark.backend("torch")
@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("Adam", "beta_2"),
        ("AdamW", "beta_2"),
        ("Muon", "adam_beta_2"),
        ("Nadam", "beta_2"),
        ("RMSprop", "rho"),
    ],
)
def test_a_torch_row_name_is_needed(name: str, key: str, monkeypatch) -> None:
    # without it, `1 - beta_2` is float32's 1 - 0.99900001 = 0.00099998713, not 0.001
    cls = getattr(K, name)
    expected = _trained(cls(**ARGUMENTS.get(name, {})))
    less = ROWS[name]._replace(torch_numbers=ROWS[name].torch_numbers - {key})
    monkeypatch.setitem(ROWS, name, less)
    got = _trained(hs.scheduled(cls(**ARGUMENTS.get(name, {}))))
    assert any(not np.array_equal(w, g) for w, g in zip(expected, got, strict=True))


def test_every_keras_optimizer_class_has_a_row_of_its_own_names() -> None:
    every = {
        name
        for name in dir(K)
        if isinstance(getattr(K, name), type)
        and issubclass(getattr(K, name), K.Optimizer)
        and name not in ("Optimizer", *scheduled.WRAPPERS)
    }
    assert every == set(ROWS)
    for name, found in ROWS.items():
        names = set(scheduled.numeric_names(getattr(K, name)))
        assert found.torch_numbers | found.jax_arrays <= names, name


def test_a_class_takes_the_row_of_its_nearest_keras_base() -> None:
    class MyAdam(K.AdamW):
        pass

    assert row(MyAdam) == ROWS["AdamW"] == Row(torch_numbers=frozenset({"beta_1", "beta_2"}))
    assert row(K.Optimizer) == Row()
    assert set(keras_forms.FORMS) == {"tensorflow", "jax", "torch"}


def _number(name: str, cls: type, value: float, constant: bool) -> object:
    hyperparameter = hs.Hyperparameter(value if constant else f"{value} + 0 * step", name=name)
    static = value if constant else None
    request = Request(
        name, cls, hyperparameter, ops.convert_to_tensor(0.0), False, static, (value,)
    )
    return keras_number(request)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_a_constant_rounds_once_to_the_dtype_it_meets(dtype: str) -> None:
    beta = _number("beta_2", K.Adam, 0.999, True)
    assert scalar_tensor(beta) is not None
    got = ops.convert_to_numpy(in_dtype(beta, dtype))
    if keras.backend.backend() == "jax":  # the float32 value, rounded again
        expected = np.asarray(np.float32(0.999), dtype)
    else:  # the float64 constant, rounded once
        expected = np.asarray(0.999, dtype)
    assert got.dtype == np.dtype(dtype) and got == expected


def test_python_checks_see_the_static_number() -> None:
    momentum = _number("momentum", K.SGD, 0.0, True)
    if keras.backend.backend() == "torch":  # a tensor: torch reads it
        assert float(ops.convert_to_numpy(momentum)) == 0.0
    else:
        assert not bool(momentum != 0)
        assert bool(_number("momentum", K.SGD, 0.5, False) != 0)  # a schedule


def test_the_learning_rate_is_the_float32_value() -> None:
    rate = _number("learning_rate", K.Adam, 0.1, True)
    tensor = ops.convert_to_numpy(scalar_tensor(rate))
    assert tensor.dtype == np.float32 and tensor == np.float32(0.1)


@pytest.mark.backend("torch")
def test_on_the_host_torch_gets_python_floats_and_a_float32_learning_rate() -> None:
    hyperparameter = hs.Hyperparameter(0.999, name="beta_2")
    request = Request("beta_2", K.Adam, hyperparameter, 0, True, 0.999, (0.999,))
    got = keras_forms.torch_number(request)
    assert isinstance(got, float) and got == 0.999
    rate = keras_forms.torch_number(request._replace(name="learning_rate"))
    assert ops.convert_to_numpy(rate).dtype == np.float32


def test_in_dtype_of_python_numbers_and_tensors() -> None:
    assert ops.convert_to_numpy(in_dtype(0.1, "float16")) == np.float16(0.1)
    x = ops.convert_to_tensor(np.float32(0.1))
    assert ops.convert_to_numpy(in_dtype(x, "float16")) == np.float16(np.float32(0.1))


@pytest.mark.parametrize("name", ["learning_rate", "beta_2"])
def test_with_tensor_keeps_the_form_and_its_static_numbers(name: str) -> None:
    # the form rebuilt around another tensor of the same dtype: the same type, the same
    # Python checks and rounding (as when one cond returns an update's values)
    value = _number(name, K.Adam, 0.999, True)
    tensor = scalar_tensor(value)
    other = ops.add(tensor, ops.zeros((), ops.dtype(tensor)))
    got = with_tensor(value, other)
    assert type(got) is type(value) and scalar_tensor(got) is other
    assert getattr(got, "static", None) == getattr(value, "static", None)
    if name == "beta_2" and keras.backend.backend() != "torch":  # 1 - beta_2 as Keras rounds it
        assert ops.convert_to_numpy(in_dtype(1 - got, "float32")) == np.float32(1 - 0.999)


# ---- optimizer classes: optimizer_class, keras_base_name ----------------------------------
#: the classes Keras's torch backend maps to its own subclasses (its ``OPTIMIZERS`` table)
BUILT_IN = ("Adadelta", "Adagrad", "Adam", "Adamax", "AdamW", "Lion", "Nadam", "RMSprop", "SGD")
#: built-in classes with no torch subclass
OTHERS = ("Adafactor", "Ftrl", "LossScaleOptimizer")


class MySGD(keras.optimizers.SGD):
    """A user's subclass of a built-in optimizer."""


class FromScratch(keras.optimizers.Optimizer):
    """A user's optimizer on Keras's base class."""


@pytest.mark.parametrize("name", (*BUILT_IN, "Adafactor", "Ftrl"))
def test_optimizer_class_is_the_class_of_what_keras_instantiates(name: str) -> None:
    cls = getattr(keras.optimizers, name)
    assert optimizer_class(cls) is type(cls())


def test_a_user_subclass_gets_the_class_keras_instantiates_for_it() -> None:
    assert optimizer_class(MySGD) is type(MySGD())
    assert issubclass(optimizer_class(MySGD), MySGD)


@pytest.mark.parametrize("name", BUILT_IN)
def test_only_torch_maps_a_built_in_class_to_a_subclass(name: str) -> None:
    cls = getattr(keras.optimizers, name)
    found = optimizer_class(cls)
    if keras.backend.backend() == "torch":
        assert found is not cls and issubclass(found, cls)
        assert hasattr(found, "_parallel_update_step")  # what Keras's torch classes add
    else:
        assert found is cls


@pytest.mark.parametrize("name", (*BUILT_IN, *OTHERS))
def test_keras_base_name_of_a_built_in_class_and_its_backend_class_is_its_name(
    name: str,
) -> None:
    cls = getattr(keras.optimizers, name)
    assert keras_base_name(cls) == name
    if name != "LossScaleOptimizer":  # wraps an inner optimizer: not built bare
        assert keras_base_name(optimizer_class(cls)) == name


def test_keras_base_name_is_the_nearest_keras_base() -> None:
    assert issubclass(keras.optimizers.AdamW, keras.optimizers.Adam)  # so nearest matters
    assert keras_base_name(keras.optimizers.AdamW) == "AdamW"
    assert keras_base_name(MySGD) == "SGD"
    assert keras_base_name(FromScratch) == "Optimizer"


def test_keras_base_name_is_none_for_a_class_outside_keras_optimizers() -> None:
    assert keras_base_name(int) is None
    assert keras_base_name(keras.layers.Dense) is None


# ---- an update: trains_statelessly, after -----------------------------------------------
def test_trains_statelessly_only_on_jax() -> None:
    assert trains_statelessly() is (keras.backend.backend() == "jax")


def test_after_and_native_variable_eagerly() -> None:
    tensors = [ops.ones((2,)), None]
    assert after([ops.ones(())], tensors) is tensors
    variable = keras.Variable(1.0)
    native = native_variable(variable)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        assert isinstance(native, tf.Variable) and native is variable.value
    else:
        assert native is variable


@pytest.mark.backend("tensorflow")
def test_after_gates_dense_tensors_on_the_scalars_in_a_graph() -> None:
    import tensorflow as tf

    @tf.function
    def step(x, s):
        scalar = s * 2.0
        (gated, sparse) = after([scalar, 1.0], [x + 1.0, None])
        assert sparse is None
        return gated, scalar

    graph = step.get_concrete_function(tf.TensorSpec((2,)), tf.TensorSpec(())).graph
    (identity,) = [op for op in graph.get_operations() if op.type == "IdentityN"]
    assert any(dep.type == "Mul" for dep in identity.control_inputs)
    out, _ = step(tf.ones((2,)), tf.constant(1.0))
    np.testing.assert_array_equal(out.numpy(), [2.0, 2.0])
