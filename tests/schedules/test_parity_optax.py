"""Parity with optax's schedules, at every step from 0 to 3x past the end."""

import importlib.util
import pathlib

import numpy as np
import pytest

import hyperstep.schedules as hs

optax = pytest.importorskip("optax")
jax = pytest.importorskip("jax")
jnp = jax.numpy

_spec = importlib.util.spec_from_file_location(
    "schedule_reference", pathlib.Path(__file__).with_name("reference.py")
)
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)


def _case(optax_schedule, ours, end, *boundaries):
    return pytest.param(optax_schedule, ours, end, list(boundaries), id=repr(ours)[:60])


# Under jit, XLA turns optax's ``1 - count / steps`` into ``1 - count * (1 / steps)``,
# which is -6e-8 at the end, and ``** 0.5`` of it NaN; these few run eagerly instead.
EAGER = {"polynomial(1.0, 0.0, steps=40, power=0.5, begin=10)"}


CASES = [
    _case(optax.linear_schedule(1.0, 0.1, 100), hs.linear(1.0, 0.1, steps=100), 100, 100),
    _case(
        optax.linear_schedule(0.0, 2.0, 30, transition_begin=20),
        hs.linear(0.0, 2.0, steps=30, begin=20),
        50,
        20,
        50,
    ),
    _case(
        optax.polynomial_schedule(0.1, 0.01, 2.0, 100),
        hs.polynomial(0.1, 0.01, steps=100, power=2.0),
        100,
        100,
    ),
    _case(
        optax.polynomial_schedule(1.0, 0.0, 0.5, 40, transition_begin=10),
        hs.polynomial(1.0, 0.0, steps=40, power=0.5, begin=10),
        50,
        10,
        50,
    ),
    _case(optax.exponential_decay(0.1, 10, 0.5), hs.exponential(0.1, 0.5, every=10), 100, 10),
    _case(
        optax.exponential_decay(1.0, 5, 0.5, transition_begin=10, end_value=0.05),
        hs.exponential(1.0, 0.5, every=5, begin=10, end=0.05),
        30,
        10,
        15,
    ),
    _case(
        optax.exponential_decay(1.0, 4, 0.5, transition_begin=8, staircase=True, end_value=0.1),
        hs.exponential(1.0, 0.5, every=4, staircase=True, begin=8, end=0.1),
        24,
        8,
        12,
    ),
    _case(
        optax.exponential_decay(0.5, 3, 2.0, end_value=4.0),
        hs.exponential(0.5, 2.0, every=3, end=4.0),
        12,
        9,
    ),
    _case(optax.cosine_decay_schedule(1.0, 100), hs.cosine(1.0, steps=100), 100, 100),
    _case(
        optax.cosine_decay_schedule(2.0, 60, alpha=0.25, exponent=2.0),
        hs.cosine(2.0, steps=60, end=0.5, exponent=2.0),
        60,
        60,
    ),
    _case(
        optax.warmup_cosine_decay_schedule(0.0, 1.0, 10, 110, end_value=0.1),
        hs.warmup(hs.cosine(1.0, steps=100, end=0.1), steps=10),
        110,
        10,
        110,
    ),
    _case(
        optax.warmup_cosine_decay_schedule(0.1, 1e-3, 25, 75, end_value=1e-5, exponent=1.5),
        hs.warmup(hs.cosine(1e-3, steps=50, end=1e-5, exponent=1.5), steps=25, start=0.1),
        75,
        25,
        75,
    ),
    _case(
        optax.piecewise_constant_schedule(1.0, {10: 0.5, 20: 0.2}),
        hs.piecewise([10, 20], [1.0, 0.5, 0.1]),
        20,
        10,
        20,
    ),
    _case(
        optax.join_schedules(
            [optax.linear_schedule(0.0, 1.0, 10), optax.cosine_decay_schedule(1.0, 50)], [10]
        ),
        hs.join([hs.linear(0.0, 1.0, steps=10), hs.cosine(1.0, steps=50)], [10]),
        60,
        10,
        60,
    ),
    _case(
        optax.join_schedules(
            [
                optax.constant_schedule(0.3),
                optax.exponential_decay(1.0, 5, 0.5),
                optax.linear_schedule(0.2, 0.0, 10),
            ],
            [5, 25],
        ),
        hs.join([0.3, hs.exponential(1.0, 0.5, every=5), hs.linear(0.2, 0.0, steps=10)], [5, 25]),
        35,
        5,
        25,
    ),
    _case(
        optax.cosine_onecycle_schedule(100, 1.0),
        hs.one_cycle(1.0, steps=100, compat="optax"),
        100,
        30,
        100,
    ),
    _case(
        optax.cosine_onecycle_schedule(33, 0.5, pct_start=0.25, div_factor=10.0),
        hs.one_cycle(0.5, steps=33, pct_start=0.25, div_factor=10.0, compat="optax"),
        33,
        8,
        33,
    ),
]


@pytest.mark.parametrize(("optax_schedule", "ours", "end", "boundaries"), CASES)
def test_matches_optax_at_every_step(optax_schedule, ours, end, boundaries):
    steps = ref.grid(end, *boundaries)
    ref.assert_close(ours(steps), evaluate(optax_schedule, steps, eager=repr(ours) in EAGER))


def evaluate(optax_schedule, steps, eager=False):
    """The optax schedule at ``steps``: ``jit(vmap(schedule))``, or eagerly on the vector.

    vmap because optax's ``piecewise_interpolate`` (one-cycle) takes one step at a time;
    jit because eager jax compiles every primitive (seconds per schedule).
    """
    if eager:
        values = optax_schedule(jnp.asarray(steps))
    else:
        values = jax.jit(jax.vmap(optax_schedule))(jnp.asarray(steps))
    return np.broadcast_to(np.asarray(values, dtype=np.float64), steps.shape)


def test_optax_peaks_one_step_after_torch_compat():
    steps = np.arange(101)
    theirs = np.asarray(
        jax.jit(jax.vmap(optax.cosine_onecycle_schedule(100, 1.0)))(jnp.asarray(steps))
    )
    torch_like = np.asarray(hs.one_cycle(1.0, steps=100)(steps))
    assert int(np.argmax(theirs)) == 30
    assert int(np.argmax(torch_like)) == 29
