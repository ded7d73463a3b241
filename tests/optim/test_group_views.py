"""A group's update runs Keras's own code on the group's view of the optimizer: an
``hs.scheduled`` optimizer with a group is, bitwise, two plain Keras optimizers, one per
set of variables (the group's values given to the second), on every backend eagerly
(torch's all-variables update once per group, weight decay per variable)."""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.optim.scheduled import group_view

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

CASES = {
    "AdamW": (
        keras.optimizers.AdamW,
        {"learning_rate": 0.01, "weight_decay": 0.1},
        {"learning_rate": 0.1, "weight_decay": 0.0, "beta_1": 0.5},
    ),
    "SGD": (
        keras.optimizers.SGD,
        {"learning_rate": 0.01, "momentum": 0.9},
        {"learning_rate": 0.1, "momentum": 0.5},
    ),
    "RMSprop": (keras.optimizers.RMSprop, {"learning_rate": 0.01}, {"rho": 0.5}),
}


def _variables() -> list[Any]:
    rng = np.random.default_rng(0)
    return [
        keras.Variable(rng.normal(size=(3, 4)).astype("float32"), name="kernel"),
        keras.Variable(rng.normal(size=(4,)).astype("float32"), name="bias"),
    ]


def _gradients(steps: int) -> list[list[Any]]:
    rng = np.random.default_rng(1)
    shapes = [(3, 4), (4,)]
    return [
        [keras.ops.convert_to_tensor(rng.normal(size=s).astype("float32")) for s in shapes]
        for _ in range(steps)
    ]


@pytest.mark.parametrize("name", list(CASES))
def test_a_group_updates_as_a_plain_optimizer_with_its_values(name: str) -> None:
    cls, main, group = CASES[name]
    ours, plain = _variables(), _variables()
    opt = hs.scheduled(cls(**main), groups=[hs.Group("bias", match=ours[1], **group)])
    first, second = cls(**main), cls(**{**main, **group})
    for grads in _gradients(5):
        opt.apply(grads, ours)
        first.apply(grads[:1], plain[:1])
        second.apply(grads[1:], plain[1:])
    for mine, theirs in zip(ours, plain, strict=True):
        np.testing.assert_array_equal(_numpy(mine), _numpy(theirs))
    start = _variables()
    assert all(np.abs(_numpy(v) - _numpy(s)).max() > 1e-3 for v, s in zip(ours, start, strict=True))


def test_a_group_view_is_the_optimizer_with_the_group_values() -> None:
    opt = hs.scheduled(
        keras.optimizers.SGD(learning_rate=0.01, momentum=0.9),
        groups=[hs.Group("bias", match="*bias*", momentum=0.5)],
    )
    view = group_view(opt, "bias")
    assert group_view(opt, "bias") is view and group_view(opt, None) is opt
    assert type(view) is type(opt) and vars(view) is vars(opt)  # one object's attributes
    assert view.iterations is opt.iterations
    # outside an update both read the optimizer's current values
    assert _numpy(view.momentum) == _numpy(opt.momentum) == np.float32(0.9)


def _numpy(value: Any) -> np.ndarray:
    return np.asarray(keras.ops.convert_to_numpy(keras.ops.stop_gradient(value)))
