"""``total`` and ``progress``: the run's length in expressions and in every word's lengths.

The reference of each test is the schedule written by hand with the number: the test
computes the lengths in Python (``0.9 * 1237``) and writes the text itself.
"""

from __future__ import annotations

import json
import math
import warnings

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.schedules import bind_total, cosine, progress, total, warmup
from hyperstep.schedules.base import Schedule

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

#: each written with `total` (a function of N gives the text written by hand with N)
CASES = {
    "cosine(3e-4, steps=total, end=3e-5)": lambda n: f"cosine(3e-4, steps={n}, end=3e-5)",
    "warmup(cosine(1e-3, steps=0.9 * total), steps=0.1 * total)": lambda n: (
        f"warmup(cosine(1e-3, steps={0.9 * n!r}), steps={0.1 * n!r})"
    ),
    "1e-3 * (1 - progress) ** 2": lambda n: f"1e-3 * (1 - step / {n}) ** 2",
    "wsd(1e-3, 0.1 * total, 0.7 * total, 0.2 * total)": lambda n: (
        f"wsd(1e-3, {0.1 * n!r}, {0.7 * n!r}, {0.2 * n!r})"
    ),
    "wsd(1e-3, 0.05 * total, 0.75 * total, 0.2 * total, decay_type='1-sqrt')": lambda n: (
        f"wsd(1e-3, {0.05 * n!r}, {0.75 * n!r}, {0.2 * n!r}, decay_type='1-sqrt')"
    ),
    "linear(1.0, 0.1, steps=total - 200)": lambda n: f"linear(1.0, 0.1, steps={n - 200})",
    "polynomial(1.0, 0.0, steps=0.7 * total, power=2.0)": lambda n: (
        f"polynomial(1.0, 0.0, steps={0.7 * n!r}, power=2.0)"
    ),
    "exponential(1.0, 0.5, every=total / 3)": lambda n: f"exponential(1.0, 0.5, every={n / 3!r})",
    "cyclic(0.1, 1.0, steps_up=total / 7)": lambda n: f"cyclic(0.1, 1.0, steps_up={n / 7!r})",
    "cooldown(1.0, start=0.8 * total, steps=0.2 * total)": lambda n: (
        f"cooldown(1.0, start={0.8 * n!r}, steps={0.2 * n!r})"
    ),
    "inverse_sqrt(1.0, warmup=0.05 * total)": lambda n: f"inverse_sqrt(1.0, warmup={0.05 * n!r})",
    "cosine_restarts(1.0, steps=total / 5)": lambda n: f"cosine_restarts(1.0, steps={n / 5!r})",
    "one_cycle(1.0, steps=total)": lambda n: f"one_cycle(1.0, steps={n})",
    "one_cycle(1.0, steps=total, compat='optax')": lambda n: (
        f"one_cycle(1.0, steps={n}, compat='optax')"
    ),
    "min(1.0, step / (0.1 * total))": lambda n: f"min(1.0, step / {0.1 * n!r})",
    "step / (0.1 * total)": lambda n: f"step / {0.1 * n!r}",
    "progress": lambda n: f"step / {n}",
    "2e-3 * step / total + 1e-4 * progress * 3": lambda n: (
        f"2e-3 * step / {n} + 1e-4 * (step / {n}) * 3"
    ),
    "warmup(cosine(1e-3, steps=9 * total / 10), steps=total / 10)": lambda n: (
        f"warmup(cosine(1e-3, steps={9 * n / 10!r}), steps={n / 10!r})"
    ),
    "wsd(1e-3, total / 10, 7 * total / 10, total / 5)": lambda n: (
        f"wsd(1e-3, {n / 10!r}, {7 * n / 10!r}, {n / 5!r})"
    ),
    "where(step < floor(0.3 * total), 1.0, 0.5)": lambda n: (
        f"where(step < {float(int(0.3 * n))!r}, 1.0, 0.5)"
    ),
    "piecewise([0.3 * total, total / 2, total - 100], [1.0, 0.5, 0.1, 0.01])": lambda n: (
        f"piecewise([{0.3 * n!r}, {n / 2!r}, {n - 100}], [1.0, 0.5, 0.1, 0.01])"
    ),
    "piecewise([100, total / 2], [1.0, 0.5, 0.1], inclusive=True)": lambda n: (
        f"piecewise([100, {n / 2!r}], [1.0, 0.5, 0.1], inclusive=True)"
    ),
    "join([warmup(1.0, steps=50), cosine(1.0, steps=0.7 * total)], [0.3 * total])": lambda n: (
        f"join([warmup(1.0, steps=50), cosine(1.0, steps={0.7 * n!r})], [{0.3 * n!r}])"
    ),
    "join([1.0, linear(1.0, 0.0, steps=total / 2), 0.0], [total / 4, 3 * total / 4])": lambda n: (
        f"join([1.0, linear(1.0, 0.0, steps={n / 2!r}), 0.0], [{n / 4!r}, {3 * n / 4!r}])"
    ),
}
TOTALS = [1000, 1237, 98765]


def _bits(values) -> np.ndarray:
    return np.asarray(keras.ops.convert_to_numpy(values), dtype=np.float32).view(np.uint32)


def _steps(n: int, *more: float) -> np.ndarray:
    grid = np.linspace(0, 1.3 * n, 300).astype(np.int64)
    edges = [0, 1, n - 101, n - 100, n - 99, n - 1, n, n + 1, 10 * n]
    edges += [int(f * n) + d for f in (0.1, 0.25, 0.3, 0.5, 0.75) for d in (-1, 0, 1, 2)]
    steps = np.unique(np.concatenate([np.arange(40), grid, edges, more]).astype(np.float32))
    # one length for every n, the last step repeated: JAX compiles each eager op once per
    # shape (about a second a case otherwise)
    return np.pad(steps, (0, 380 - len(steps)), mode="edge")


@pytest.mark.parametrize("n", TOTALS)
@pytest.mark.parametrize("text", list(CASES))
def test_a_length_bound_to_n_is_the_schedule_written_with_n_bit_for_bit(text, n) -> None:
    by_hand = hs.parse(CASES[text](n))
    clock = hs.Clock(total=n)
    read = hs.Hyperparameter(text, clock=clock)  # reads the clock's variable
    steps = _steps(n)
    np.testing.assert_array_equal(_bits(read.at(steps)), _bits(by_hand(steps)))
    np.testing.assert_array_equal(
        _bits(bind_total(hs.parse(text), n)(steps)), _bits(by_hand(steps))
    )
    for step in steps[::29]:  # one step at a time: the scalar read path
        assert _bits(read.at(float(step))) == _bits(by_hand(float(step)))


def _compiled(function, variables, steps):
    """``function(steps)`` in this backend's compiled step: ``tf.function`` (without autograph,
    as in ``fit``, whose Keras code autograph leaves as written); ``jax.jit`` with
    ``variables`` mapped as a stateless step maps them; torch eagerly (as its ``fit``)."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(function, autograph=False)(steps)
    if backend == "torch":
        return function(steps)
    import jax

    def stateless(values, s):
        with keras.StatelessScope(state_mapping=list(zip(variables, values, strict=True))):
            return function(s)

    return jax.jit(stateless)([v.value for v in variables], steps)


#: expressions whose `**` and `+` compute in float32 as written: a compiler fuses them otherwise
#: than eagerly (as the float32 formula written by hand), whatever the length
FLOAT32_EXPRESSIONS = ["1e-3 * (1 - progress) ** 2", "2e-3 * step / total + 1e-4 * progress * 3"]


#: the compiled step's lengths: 1237 (every length a fraction, folded in float64) in the fast
#: pass, 1000 (whole lengths) and 98765 in the slow one; the fast pass keeps all three eagerly
#: (above) and compiled for the divisions by a length (below, whole and fractional)
SLOW = pytest.mark.slow
COMPILED_TOTALS = [pytest.param(1000, marks=SLOW), 1237, pytest.param(98765, marks=SLOW)]


@pytest.mark.parametrize("n", COMPILED_TOTALS)
@pytest.mark.parametrize("text", list(CASES))
def test_a_length_in_a_compiled_step_is_the_number_written_by_hand(text, n) -> None:
    # Grappler and XLA rewrite a division by a constant (XLA: by any scalar of a vector), not
    # by a tensor read at run time: the expressions round `/` once from float64; a word's
    # numbers of steps, lengths and numbers alike, enter as `number * one` (JAX without x64
    # too: the words compute in float64 there)
    by_hand = hs.parse(CASES[text](n))
    read = hs.Hyperparameter(text, clock=hs.Clock(total=n))
    steps = _steps(n)
    compiled = _compiled(read.at, read.variables, steps)
    np.testing.assert_array_equal(_bits(compiled), _bits(_compiled(by_hand, [], steps)))
    if text not in FLOAT32_EXPRESSIONS:  # and as eagerly
        np.testing.assert_array_equal(_bits(compiled), _bits(by_hand(steps)))


@pytest.mark.parametrize("n", [*TOTALS, 3, 4096, 999_999_937])
def test_progress_and_a_division_by_a_length_are_numpy_s_float32_quotients_compiled(n) -> None:
    # NumPy's float32 division is IEEE's correctly rounded quotient on any CPU
    steps = _steps(n, 2**24, 3 * n, 16777215)
    expected = {
        "progress": steps / np.float32(n),
        "step / (0.1 * total)": steps / np.float32(0.1 * n),
        "min(1.0, step / (0.1 * total))": np.minimum(np.float32(1), steps / np.float32(0.1 * n)),
    }
    for text, values in expected.items():
        read = hs.Hyperparameter(text, clock=hs.Clock(total=n))
        by_hand = hs.parse(CASES[text](n))
        for found in (
            read.at(steps),
            _compiled(read.at, read.variables, steps),
            _compiled(by_hand, [], steps),
            _torch_compiled(by_hand, steps),
            _torch_compiled(read.at, steps),
        ):
            np.testing.assert_array_equal(_bits(found), values.view(np.uint32))


def _torch_compiled(function, steps):
    """``function(steps)`` under ``torch.compile`` on torch (Inductor rewrites a division by
    a constant as a multiply too), else eagerly."""
    if keras.backend.backend() != "torch":
        return function(steps)
    import torch

    with warnings.catch_warnings():  # torch.compile's own import of a deprecated name
        warnings.filterwarnings("ignore", "`torch.jit.script_method` is deprecated")
        return torch.compile(function)(keras.ops.convert_to_tensor(steps))


def test_boundaries_of_total_are_ordered_where_the_length_is_bound() -> None:
    s = hs.parse("piecewise([500, total / 2], [1.0, 0.5, 0.1])")
    assert repr(bind_total(s, 2000)) == "piecewise([500, 1000], [1.0, 0.5, 0.1])"
    with pytest.raises(ValueError, match=r"found 500 before 300.*boundaries=\[500, 600.0 / 2.0\]"):
        bind_total(s, 600)
    with pytest.raises(ValueError, match=r"join\(boundaries=...\)` must be a number of steps"):
        hs.parse("join([1.0, 0.5], [step / 2])")
    with pytest.raises(ValueError, match=r"non-negative number of steps.*boundaries=-10"):
        hs.parse("piecewise([-10, total], [1.0, 0.5, 0.1])")


@pytest.mark.parametrize("n", [1237, 98765, 16777217, 2**31 - 1])
def test_a_length_of_several_operations_is_python_s_float64_number_rounded_once(n) -> None:
    # on JAX without x64 too: computed in float64 (within `jax.enable_x64`), then rounded
    text = "min(0.9 * total - 200, floor(total / 3) + 0.1)"
    expected = np.float32(min(0.9 * n - 200, math.floor(n / 3) + 0.1))
    assert expected != np.float32(np.float32(0.9) * np.float32(n) - np.float32(200))
    hp = hs.Hyperparameter(text, clock=hs.Clock(total=n))  # the length as a value
    steps = np.array([0.0, 7.0], np.float32)
    assert list(_bits(hp.at(steps))) == [expected.view(np.uint32)] * 2
    compiled = _compiled(hp.at, hp.variables, steps)
    assert list(_bits(compiled)) == [expected.view(np.uint32)] * 2


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("inverse_time(0.1, 0.5, every=0.1 * total)", "every"),
        ("exponential_decay(0.1, total, 0.5)", "decay_steps"),
        ("polynomial_decay(0.1, total - 100)", "decay_steps"),
        ("cosine_decay(0.1, 1000, warmup_target=1.0, warmup_steps=0.1 * total)", "warmup_steps"),
        ("cosine_decay_restarts(0.1, total / 5)", "first_decay_steps"),
    ],
)
def test_keras_s_float32_formulas_refuse_a_length_naming_the_number_and_the_word(
    text, name
) -> None:
    # their promise is Keras's traced bits, which a graph compiler gives a constant number of
    # steps (TensorFlow's x / n into x * (1 / n)) and not a length read at run time
    with pytest.raises(
        ValueError, match=rf"{name}=...\)` takes a number.*cosine\(1e-3, steps=total\).*{name}="
    ):
        hs.parse(text)
    assert hs.parse(text.replace("total", "1000")) is not None  # the number written by hand


def test_total_keeps_its_symbol_in_repr_and_config() -> None:
    s = hs.parse("warmup(cosine(1e-3, steps=0.9 * total), steps=0.1 * total)")
    assert repr(s) == "warmup(cosine(0.001, steps=0.9 * total), steps=0.1 * total)"
    config = json.loads(json.dumps(keras.saving.serialize_keras_object(s)))
    loaded = keras.saving.deserialize_keras_object(config)
    assert repr(loaded) == repr(s)
    assert repr(hs.parse(repr(s))) == repr(s)
    assert repr(bind_total(loaded, 2000)) == "warmup(cosine(0.001, steps=1800), steps=200)"


def test_python_symbols_build_the_same_schedules_as_the_text() -> None:
    built = warmup(cosine(1e-3, steps=0.9 * total), steps=0.1 * total)
    assert repr(built) == repr(
        hs.parse("warmup(cosine(1e-3, steps=0.9 * total), steps=0.1 * total)")
    )
    assert repr(1e-3 * (1 - progress) ** 2) == repr(hs.parse("1e-3 * (1 - progress) ** 2"))
    assert isinstance(total, Schedule) and repr(total) == "total"


def test_an_unbound_total_refuses_naming_the_fixes() -> None:
    with pytest.raises(
        ValueError, match=r"reads `total`.*steps_per_epoch.*clock.total = n.*total=None"
    ):
        hs.parse("cosine(1.0, steps=total)")(5)
    hp = hs.Hyperparameter("1 - progress", clock=hs.Clock())
    with pytest.raises(ValueError, match=r"reads `total`.*Received: total=None"):
        hp.at(3)


def test_a_length_refuses_the_step_and_inexact_operators() -> None:
    with pytest.raises(
        ValueError,
        match=r"cosine\(steps=...\)` must be a number of steps.*steps=total \* step / step",
    ):
        hs.parse("cosine(1.0, steps=total * step / step)")
    with pytest.raises(
        ValueError, match=r"must be a number of steps.*Received: steps=total \*\* 0.5"
    ):
        cosine(1.0, steps=total**0.5)


def test_bind_total_folds_each_length_as_python_does() -> None:
    bound = bind_total(hs.parse("wsd(1e-3, 0.1 * total, 0.7 * total, 0.2 * total)"), 1237)
    assert (bound.warmup, bound.stable, bound.decay) == (0.1 * 1237, 0.7 * 1237, 0.2 * 1237)
    with pytest.raises(
        ValueError, match=r"bind_total\(total=...\)` must be a positive integer.*total=0"
    ):
        bind_total(total, 0)


def test_a_total_that_makes_a_length_its_word_refuses_is_refused_naming_both() -> None:
    # `total - 200` at 100 is -100 steps: refused where it is set, not read as 0
    clock = hs.Clock(total=1000)
    hp = hs.Hyperparameter("cosine(1e-3, steps=total - 200)", clock=clock)
    by_hand = hs.parse("cosine(1e-3, steps=800)")
    assert _bits(hp.at(5.0)) == _bits(by_hand(5.0))
    refusal = (
        r"`cosine\(0.001, steps=total - 200.0\)` with the run's length `total` = 100: "
        r"`cosine\(steps=...\)` must be a positive number of steps. Received: steps=-100.0. "
        r"Bind a longer run \(`clock.total = n`.*max\(total - 200, 1\).*Received: total=100"
    )
    with pytest.raises(ValueError, match=refusal):
        clock.total = 100
    assert clock.total == 1000 and _bits(hp.at(5.0)) == _bits(by_hand(5.0))  # unchanged
    with pytest.raises(ValueError, match=refusal):  # a clock bound before: at the first read
        hs.Hyperparameter("cosine(1e-3, steps=total - 200)", clock=hs.Clock(total=100)).at(3)
    with pytest.raises(ValueError, match=refusal):
        bind_total(hs.parse("cosine(1e-3, steps=total - 200)"), 100)


def test_changing_total_changes_the_values_read_without_a_new_schedule() -> None:
    clock = hs.Clock(total=100)
    hp = hs.Hyperparameter("cosine(1.0, steps=total)", clock=clock)
    before = float(hp.at(50))
    clock.total = 200
    assert before == float(hs.parse("cosine(1.0, steps=100)")(50))
    assert float(hp.at(50)) == float(hs.parse("cosine(1.0, steps=200)")(50))


HF = [
    ("linear", {}),
    ("cosine", {}),
    ("polynomial", {"power": 2.0}),
    ("cosine_with_min_lr", {"min_lr_rate": 0.1}),
    ("cosine_warmup_with_min_lr", {"min_lr_rate": 0.1}),
    ("warmup_stable_decay", {"num_decay_steps": 300}),
]


@pytest.mark.parametrize(("name", "kwargs"), HF)
def test_from_hf_without_num_training_steps_reads_total(name, kwargs) -> None:
    n = 1237
    given = hs.schedules.from_hf(name, 1e-3, num_warmup_steps=50, num_training_steps=n, **kwargs)
    read = hs.Hyperparameter(
        hs.schedules.from_hf(name, 1e-3, num_warmup_steps=50, **kwargs), clock=hs.Clock(total=n)
    )
    steps = _steps(n)
    np.testing.assert_array_equal(_bits(read.at(steps)), _bits(given(steps)))
