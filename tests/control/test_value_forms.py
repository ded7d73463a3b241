"""Units of hyperstep.control.value_forms: every form of the effective value agreeing on a
grid of states, the cooldown, the armed table, ``exact_value``, ``ClockEpoch`` and the host
and float64 forms of a hyperparameter's value (``host_float``, ``exact_at``)."""

from __future__ import annotations

import itertools
import math

import keras
import numpy as np
import pytest
from keras import ops

import hyperstep as hs
from hyperstep.backends import integer_dtype, wide_float_dtype
from hyperstep.clock import Clock
from hyperstep.control import value_forms
from hyperstep.control.value_forms import (
    FORM,
    START,
    ClockEpoch,
    ValueState,
    constant_pieces,
    cooled,
    dormant,
    exact_value,
    form_of,
    host_values,
)
from hyperstep.schedules.keras_compat import KerasSchedule
from hyperstep.schedules.language import parse
from hyperstep.schedules.wsd import DECAY_TYPES

EVERY_BACKEND = pytest.mark.backend("tensorflow", "jax", "torch")


# ---- all forms agree ---------------------------------------------------------------------------
#: the grid: scale, override, cooldown (start or dormant), armed table; the step's dtype
#: turns with the step (each state sees every dtype, each step every dtype across states)
GRID = list(itertools.product([1.0, 0.37], [math.nan, 0.123], [-1, 3], [False, True]))
DTYPES = ["python", "int32", "float32"]
#: values a compiler cannot round differently (a constant, binary fractions), so that the
#: traced form must agree bitwise on any CPU: a form that disagrees is the form's fault
SCHEDULES = ["0.9", "where(step < 5, 0.9, 0.25)", "linear(0.5, 0.25, steps=8)"]


def _traced(state: ValueState):
    """``value_forms.at(state, step)`` traced as a training step is: ``tf.function``,
    ``jax.jit``; eager torch (its compiled step: tests/backends/test_torch_compile.py)."""

    def value(step):
        return value_forms.at(state, step)

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(value)
    if backend == "jax":
        import jax

        return jax.jit(value)
    return value


@EVERY_BACKEND
@pytest.mark.parametrize("text", SCHEDULES)
def test_every_form_of_the_value_agrees_on_a_grid_of_states(text: str) -> None:
    for index, (scale, override, start, armed) in enumerate(GRID):
        hp = hs.Hyperparameter(text, name="beta")
        hp.scale.assign(scale)
        hp.override.assign(override)
        if start >= 0:
            hs.Cooldown(hp, steps=4, shape="linear").start(at=start)
        if armed:
            table, table_start = hp.arm(3)
            table.assign(np.array([0.2, 0.3, math.nan], "float32"))
            table_start.assign(4)
        state = hp._evaluated
        traced = _traced(state)
        for step in range(12):
            dtype = DTYPES[(step + index) % len(DTYPES)]
            case = (scale, override, start, armed, dtype, step)
            t = step if dtype == "python" else ops.convert_to_tensor(step, dtype)
            value = np.float32(ops.convert_to_numpy(hp.at(t)))
            form = np.float32(ops.convert_to_numpy(value_forms.at(state, t)))
            compiled = np.float32(
                ops.convert_to_numpy(traced(ops.convert_to_tensor(step, "float32")))
            )
            exact = np.float64(value)  # JAX without x64 has no float64 form (never used there)
            if wide_float_dtype() == "float64":
                exact = ops.convert_to_numpy(hp.exact_at(t))
                assert exact.dtype == np.float64, case
            host = hp.host_float(step)
            assert value == form == compiled == np.float32(exact), (case, value, form, exact)
            general = math.isnan(override) and (armed or start >= 0)
            assert (host is None) == general, case  # the general path, else the host
            assert host is None or np.float32(host) == value, (case, host, value)
            plain = math.isnan(override) and not armed and start < 0 and scale == 1.0
            if plain and wide_float_dtype() == "float64":
                # unscaled, a constant piece reaches both as its Python number
                assert float(exact) == host == float(exact_value(parse(text), float(step)))


# ---- the cooldown --------------------------------------------------------------------------
def _state(start: int, steps: float = 10.0, end: float = 0.0, shape: str = "linear"):
    return ValueState(
        parse("1 - step / 100"),
        keras.Variable(1.0, trainable=False),
        keras.Variable(math.nan, trainable=False),
        keras.Variable(start, dtype=integer_dtype(), trainable=False),
        keras.Variable(form_of(steps, end, shape), dtype="float32", trainable=False),
    )


@pytest.mark.backend("tensorflow", "jax")
@pytest.mark.parametrize(
    ("start", "which", "steer"),
    [
        *[(-1, 1, None), (3, 0, None), (3, 1, None), (3, 2, None)],
        *[(-1, 1, "scale"), (-1, 2, "override"), (3, 0, "scale"), (3, 2, "override")],
    ],
)
def test_checked_once_gives_each_value_with_one_cond_for_all(
    start: int, which: int, steer: str | None
) -> None:
    # an update's values traced with one cond for every cooldown, scale and override: each
    # the value its own form gives eagerly, dormant or started, steered or not (a cooldown
    # of schedule `which` only, a scale or an override of the last, found by the one check)
    hps = [hs.Hyperparameter(parse(text), name=f"h{i}") for i, text in enumerate(SCHEDULES)]
    hps[which].cooldown_form.assign(form_of(4, 0.0, "linear"))
    hps[which].cooldown_start.assign(start)
    if steer == "scale":
        hps[-1].scale.assign(0.3)
    elif steer == "override":
        hps[-1].set(0.7)

    variables = [v for hp in hps for v in hp._step_state()]

    def values(step, state):  # the state traced as a training step's is
        with keras.StatelessScope(state_mapping=list(zip(variables, state, strict=True))):
            found = value_forms.checked_once(
                lambda: {hp.name: value_forms.at(hp._evaluated, step) for hp in hps}
            )
            return [found[hp.name] for hp in hps]

    step, state = ops.convert_to_tensor(6.0), [v.value for v in variables]
    expected = [float(value_forms.at(hp._evaluated, step)) for hp in hps]
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        traced = tf.function(values)
        graph = traced.get_concrete_function(step, state).graph
        conds = [op for op in graph.get_operations() if op.type in ("If", "StatelessIf")]
    else:
        import jax

        traced = jax.jit(values)
        jaxpr = jax.make_jaxpr(values)(step, state)
        conds = [e for e in jaxpr.eqns if e.primitive.name == "cond"]
    assert len(conds) == 1  # one for all three (the test fails with one per hyperparameter)
    assert [float(v) for v in traced(step, state)] == expected
    if steer is not None:
        return
    # started at 3 from the schedule there: a quarter of it left at step 6; dormant: the
    # schedule's 0.25
    at_start = [0.9, 0.9, 0.40625][which]
    assert expected[which] == (float(np.float32(at_start / 4)) if start == 3 else 0.25)


def test_names_are_the_saved_state_names() -> None:
    assert (START, FORM) == ("cooldown_start", "cooldown_form")


@pytest.mark.parametrize("shape", DECAY_TYPES)
def test_form_of_is_steps_end_and_the_shape_index(shape: str) -> None:
    form = form_of(20, 0.5, shape)
    assert form == [20.0, 0.5, float(DECAY_TYPES.index(shape))]
    assert all(type(v) is float for v in form)


@pytest.mark.parametrize(("start", "expected"), [(-1, True), (0, False), (7, False)])
def test_dormant_reads_the_start_eagerly(start: int, expected: bool) -> None:
    assert dormant(_state(start).cooldown_start) is expected


def test_a_dormant_cooldown_returns_base_itself() -> None:
    base = object()  # returned untouched: no arithmetic at all
    assert cooled(_state(-1), base, 5) is base


def _reference(shape: str, v0: float, end: float, done: float, steps: float) -> float:
    p = min(max(done, 0.0), steps) / steps
    factor = {
        "linear": 1 - p,
        "cosine": (1 + math.cos(math.pi * p)) / 2,
        "1-sqrt": 1 - math.sqrt(p),
        "minus_sqrt": 1 - math.sqrt(p),
        "exponential": 2 * 0.5**p - 1,
    }[shape]
    return end + (v0 - end) * factor


@pytest.mark.parametrize("shape", DECAY_TYPES)
def test_a_started_cooldown_follows_the_closed_form(shape: str) -> None:
    state = _state(20, steps=10.0, end=0.1, shape=shape)
    v0 = 1 - 20 / 100
    for step in (0.0, 19.0, 20.0, 23.0, 30.0, 45.0):
        got = float(cooled(state, state.schedule(step), step))
        if step < 20:
            expected = 1 - step / 100  # before its start: the schedule's value
        else:
            expected = _reference(shape, v0, 0.1, step - 20, 10.0)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7, err_msg=f"{step=}")


def test_cooled_follows_an_assigned_start_and_form() -> None:
    state = _state(-1)._replace(schedule=parse("0.5"))
    assert float(cooled(state, state.schedule(8.0), 8.0)) == 0.5
    state.cooldown_start.assign(4)
    state.cooldown_form.assign(form_of(8, 0.0, "linear"))
    np.testing.assert_allclose(
        float(cooled(state, state.schedule(8.0), 8.0)), 0.5 * (1 - 4 / 8), rtol=1e-6
    )


@pytest.mark.parametrize("shape", DECAY_TYPES)
def test_a_started_cooldown_is_bitwise_the_cooldown_word_eagerly_and_in_a_graph(
    shape: str,
) -> None:
    # the run reads steps and end from variables, the replayed word has them as constants:
    # in a tf.function (Grappler folds `x / 13` and `(x * a) * b` with constants) and
    # eagerly they must give the same float32 and float64 values
    import tensorflow as tf

    schedule = parse("linear(0.85, 0.95, steps=100)")
    state = _state(8, steps=13.0, end=0.001, shape=shape)._replace(schedule=schedule)
    v0 = float(np.float32(schedule(8.0)))
    word = hs.schedules.cooldown(v0, 8, 13, shape, end=float(np.float32(0.001)))
    steps = np.arange(8, 24, dtype=np.float32)

    def both(step):
        base = schedule(step)
        run32 = cooled(state, base, step)
        run64 = cooled(state, keras.ops.cast(base, "float64"), step)
        return run32, run64, word(step)

    graph = tf.function(both)
    for step in steps:
        for run32, run64, replayed in (both(step), graph(tf.constant(step))):
            assert np.float32(run32) == np.float32(replayed), (shape, step)
            assert np.float64(run64) == np.float64(np.float32(replayed)), (shape, step)


# ---- the armed table -------------------------------------------------------------------------
def _table_reference(override: float, table: np.ndarray, start: int, step: int) -> float:
    """``override if set else table[step - start] if 0 <= step - start < N else nan``."""
    if not math.isnan(override):
        return override
    index = step - start
    return float(table[index]) if 0 <= index < len(table) else math.nan


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def _armed(override: float, size: int) -> ValueState:
    table, start = hs.Hyperparameter(0.1, name="lr").arm(size)
    state = _state(-1)
    state.override.assign(override)
    return state._replace(table=table, table_start=start)


@EVERY_BACKEND
def test_a_new_table_is_nan_from_no_step_and_not_trainable() -> None:
    state = _armed(math.nan, 4)
    table, start = state.table, state.table_start
    assert tuple(table.shape) == (4,) and str(table.dtype) == "float32"
    assert np.isnan(ops.convert_to_numpy(table)).all()
    assert int(ops.convert_to_numpy(start)) == -1
    assert not table.trainable and not start.trainable
    assert {table.name, start.name} == {"driven_table", "driven_start"}


@EVERY_BACKEND
@pytest.mark.parametrize("override", [math.nan, 0.25])
def test_override_at_reads_the_table_inside_its_steps_only(override: float) -> None:
    state = _armed(override, 3)
    values = np.array([0.1, 0.2, 0.3], dtype="float32")
    state.table.assign(values)
    state.table_start.assign(5)
    for step in range(2, 11):
        got = value_forms.override_at(state, ops.convert_to_tensor(step, "int32"))
        got = float(ops.convert_to_numpy(got))
        assert _same(got, _table_reference(np.float32(override), values, 5, step)), (step, got)


@EVERY_BACKEND
def test_override_at_takes_an_array_of_steps() -> None:
    state = _armed(math.nan, 2)
    state.table.assign(np.array([1.5, 2.5], dtype="float32"))
    state.table_start.assign(1)
    steps = np.arange(5, dtype="int32")
    got = ops.convert_to_numpy(value_forms.override_at(state, steps))
    expected = [_table_reference(math.nan, np.array([1.5, 2.5]), 1, int(s)) for s in steps]
    assert all(_same(float(a), b) for a, b in zip(got, expected, strict=True)), got


@EVERY_BACKEND
def test_an_armed_hyperparameter_reads_the_table_and_a_set_value_wins() -> None:
    hp = hs.Hyperparameter(0.5, name="lr")
    table, start = hp.arm(4)
    assert hp.arm(2) == (table, start)  # the table made before holds enough steps
    assert hp.value_state.table is table and hp.value_state.table_start is start
    table.assign(np.array([0.1, 0.2, 0.3, 0.4], dtype="float32"))
    start.assign(3)
    assert float(ops.convert_to_numpy(hp.override_at(4))) == np.float32(0.2)
    assert math.isnan(float(ops.convert_to_numpy(hp.override_at(7))))
    hp.set(0.05)
    assert float(ops.convert_to_numpy(hp.override_at(4))) == np.float32(0.05)


def test_the_value_state_is_the_schedule_as_given_and_the_variables() -> None:
    hp = hs.Hyperparameter("0.5 ** epoch", name="x", clock=Clock(steps_per_epoch=3))
    state = hp.value_state
    assert repr(state.schedule) == "0.5 ** epoch"
    assert state[1:5] == (hp.scale, hp.override, hp.cooldown_start, hp.cooldown_form)
    assert state.table is None and state.table_start is None


# ---- the schedule's exact and host values ----------------------------------------------------


def _f64(x) -> float:
    value = np.asarray(x)
    assert value.dtype == np.float64
    return float(value)


def test_exact_value_keeps_constants_exact() -> None:
    assert _f64(exact_value(parse("0.9"), 3.0)) == 0.9  # not float32(0.9) widened
    where = parse("where(step < 5, 0.9, 0.8)")
    assert [_f64(exact_value(where, s)) for s in (0.0, 4.0, 5.0)] == [0.9, 0.9, 0.8]


def test_exact_value_multiplies_by_a_right_constant_in_float64() -> None:
    schedule = parse("where(step < 1, 0.9, 0.8) * 0.1")
    assert _f64(exact_value(schedule, 0.0)) == 0.9 * 0.1
    assert _f64(exact_value(schedule, 2.0)) == 0.8 * 0.1


def test_exact_value_elsewhere_is_the_float32_value_widened() -> None:
    schedule = parse("1 - step / 3")
    expected = float(np.float32(1) - np.float32(1) / np.float32(3))
    assert _f64(exact_value(schedule, 1.0)) == expected
    left = parse("0.1 * where(step < 1, 0.9, 0.8)")  # a constant on the left: float32
    assert _f64(exact_value(left, 0.0)) == float(np.float32(np.float32(0.1) * np.float32(0.9)))


def test_clock_epoch_reads_the_clock() -> None:
    clock = Clock(steps_per_epoch=4)
    epoch = ClockEpoch(clock)
    assert repr(epoch) == "epoch" and epoch.arguments() == {}
    steps = np.arange(10, dtype="float32")
    np.testing.assert_array_equal(np.asarray(epoch(steps)), np.floor(steps / 4))


def test_an_unbound_epoch_in_a_hyperparameter_follows_its_clock() -> None:
    hp = hs.Hyperparameter("0.5 ** epoch", name="x", clock=Clock(steps_per_epoch=3))
    np.testing.assert_allclose(np.asarray(hp.at([0, 2, 3, 7])), [1, 1, 0.5, 0.25], rtol=1e-6)


def test_host_float_matches_at_and_reads_state() -> None:
    hp = hs.Hyperparameter("0.1 * (1 - step / 3000)", name="lr")
    for step in (0, 1, 1023, 1024, 2000, 5):  # table refills and a jump back
        assert np.float32(hp.host_float(step)) == np.float32(hp.at(step)), step
    hp.scale.assign(0.5)
    assert np.float32(hp.host_float(10)) == np.float32(hp.at(10))
    hp.override.assign(0.03)
    assert hp.host_float(10) == float(np.float32(0.03))


def test_host_float_of_a_constant_is_its_python_number() -> None:
    assert hs.Hyperparameter(0.1, name="lr").host_float(99) == 0.1


def test_host_float_is_none_where_the_general_path_is_needed() -> None:
    hp = hs.Hyperparameter("0.1", name="lr")
    hp.cooldown_start.assign(0)  # a started cooldown
    assert hp.host_float(3) is None


def test_exact_at_is_float64_with_scale_and_override() -> None:
    hp = hs.Hyperparameter(0.9, name="beta")
    assert _f64(hp.exact_at(0.0)) == 0.9
    hp.scale.assign(0.5)
    assert _f64(hp.exact_at(0.0)) == 0.9 * float(np.float32(0.5))
    hp.override.assign(0.25)
    assert _f64(hp.exact_at(0.0)) == 0.25


@pytest.mark.parametrize("text", ["0.9", "where(step < 2, 0.9, 0.99)"])
def test_exact_at_rounds_to_at(text: str) -> None:
    hp = hs.Hyperparameter(text, name="beta")
    for step in (0.0, 3.0):
        assert np.float32(hp.exact_at(step)) == np.float32(hp.at(step))


def test_constant_pieces_are_a_constant_and_the_constant_branches_of_wheres() -> None:
    assert constant_pieces(parse("0.9")) == (0.9,)
    text = "where(step < 5, 0.9, where(step < 9, 0.8 * step, 0.7))"
    assert constant_pieces(parse(text)) == (0.9, 0.7)
    assert constant_pieces(parse("0.9 * (1 - step / 100)")) == ()
    # a folded `where` is its float32 value, as in exact_value: no piece
    assert constant_pieces(parse("where(1 < 2, 0.9, 0.8)")) == ()


def test_host_values_give_a_constant_piece_its_python_number() -> None:
    steps = np.arange(0, 12, dtype="float32")
    got = host_values(parse("where(step < 5, 0.9, where(step < 9, 0.5 + step / 10, 0.7))"), steps)
    assert got.dtype == np.float64
    assert got[:5].tolist() == [0.9] * 5  # exact, not float32(0.9)
    assert got[9:].tolist() == [0.7] * 3
    ramp = np.asarray(parse("0.5 + step / 10")(steps[5:9]))
    assert got[5:9].tolist() == ramp.astype(np.float64).tolist()  # the float32 values


@EVERY_BACKEND
def test_a_keras_piecewise_schedule_trains_under_scheduled_as_under_keras() -> None:
    # a wrapped Keras schedule has no host table (PiecewiseConstantDecay refuses a vector of
    # steps on torch): fit gives Keras's own weights
    schedule = keras.optimizers.schedules.PiecewiseConstantDecay([2, 4], [0.1, 0.05, 0.01])
    assert host_values(KerasSchedule(schedule), np.arange(4, dtype="float32")) is None
    x = np.linspace(-1, 1, 24, dtype="float32").reshape(8, 3)
    y = x.sum(axis=1, keepdims=True)
    weights = []
    for optimizer in (
        keras.optimizers.SGD(learning_rate=schedule),
        hs.scheduled(keras.optimizers.SGD(learning_rate=schedule)),
    ):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile(optimizer, "mse")
        model.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
        weights.append([np.asarray(w) for w in model.get_weights()])
    for ours, theirs in zip(weights[1], weights[0], strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_host_float_gives_a_where_piece_the_constant_python_number() -> None:
    clock = Clock()
    hp = hs.Hyperparameter(parse("where(step < 3, 0.9, 0.5 * (1 - step / 100))"), clock=clock)
    assert hp.host_float(0) == 0.9
    assert hp.host_float(2) == 0.9
    assert hp.host_float(3) == float(np.float32(0.5 * (1 - np.float32(3) / 100)))
