"""Tests for hyperstep.iteration: which optimizer advances a clock, and when."""

import gc

import keras
import pytest

import hyperstep as hs
from hyperstep.iteration import (
    Iteration,
    claim,
    claimed,
    conditional,
    live_optimizers,
    note_update,
    open_iteration,
    training_iteration,
)

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")


class _Owner:
    name = "owner"


def test_claim_gives_the_clock_to_the_first_claimant_only():
    clock = hs.Clock()
    first, second = _Owner(), _Owner()
    assert not claimed(clock)
    assert claim(clock, first, None) is True
    assert claim(clock, second, None) is False
    assert claim(clock, first, None) is True
    assert claimed(clock)
    with pytest.raises(ValueError, match=r"already advanced.*Received: advance=True"):
        claim(clock, second, True)


def test_a_dead_claimant_leaves_the_clock_to_the_next():
    clock = hs.Clock()
    first, second = _Owner(), _Owner()
    claim(clock, first, None)
    claim(clock, second, False)
    assert live_optimizers(clock) == [first, second]
    del first
    gc.collect()
    assert live_optimizers(clock) == [second]
    assert not claimed(clock)
    assert claim(clock, second, True) is True


def test_an_update_after_the_advancing_one_warns_once_naming_the_fix():
    clock = hs.Clock()
    owner, reader = _Owner(), _Owner()
    claim(clock, owner, None)
    note_update(clock, owner, True)
    with pytest.warns(UserWarning, match=r"updates after .* advanced the clock.*clock.iteration"):
        note_update(clock, reader, False)
    note_update(clock, reader, False)  # once: filterwarnings=error fails a second warning


def test_a_reader_updating_first_is_the_intended_order_and_never_warns():
    clock = hs.Clock()
    owner, reader = _Owner(), _Owner()
    claim(clock, owner, None)
    note_update(clock, reader, False)
    note_update(clock, owner, True)
    note_update(clock, reader, False)


def test_an_iteration_advances_each_clock_by_whether_an_update_applied():
    applied, skipped, free = hs.Clock(), hs.Clock(), hs.Clock()
    owner = _Owner()
    claim(applied, owner, None)
    claim(skipped, owner, None)
    with training_iteration([applied, skipped, free]) as iteration:
        assert open_iteration(applied) is iteration
        iteration.record(applied, owner)
        with conditional(keras.ops.convert_to_tensor(False)):
            iteration.record(skipped, owner)
    assert open_iteration(applied) is None
    assert [int(c.step) for c in (applied, skipped, free)] == [1, 0, 1]


def test_the_outermost_condition_decides_a_nested_conditional_update():
    clock = hs.Clock()
    owner = _Owner()
    iteration = Iteration([clock])
    outer, inner = keras.ops.convert_to_tensor(False), keras.ops.convert_to_tensor(True)
    with conditional(outer), conditional(inner):
        iteration.record(clock, owner)
    ((found, applied),) = iteration.advances()
    assert found is clock
    assert not bool(keras.ops.convert_to_numpy(applied))


def test_an_exception_inside_an_iteration_leaves_the_clock():
    clock = hs.Clock()
    with pytest.raises(RuntimeError, match="boom"), training_iteration([clock]):
        raise RuntimeError("boom")
    assert int(clock.step) == 0


def test_keras_loss_scale_optimizer_is_wrapped_once_keeping_keras_own():
    import hyperstep.iteration as iteration

    cls = keras.optimizers.LossScaleOptimizer
    before = (cls.apply, cls.stateless_apply)
    iteration._follow_loss_scaling()  # a second call changes nothing
    assert (cls.apply, cls.stateless_apply) == before
    assert all(method._hyperstep for method in before)
    assert cls.apply.__wrapped__.__qualname__ == "LossScaleOptimizer.apply"
