"""``hs.scheduled`` on eager torch: values as Python numbers computed on the host.

On eager torch with the clock on the CPU, ``hs.scheduled`` hands Keras's torch optimizers
Python numbers (``Hyperparameter.host_float``: a table of schedule values, the state read as
Python numbers), as a plain Keras optimizer has. This file is also the worker
(``KERAS_BACKEND=torch python tests/backends/test_torch_eager.py``); it prints one JSON
object, checked here:

* ``constant``: every Keras optimizer with a torch implementation, wrapped with constant
  values, against the plain optimizer: the largest weight difference after 6 steps;
* ``scheduled``: ``AdamW`` with three schedules against the plain optimizer set before each
  step to the schedules' values (``float(schedule(step))``);
* ``host``: ``host_float`` against ``at`` over 2,500 steps (two table refills, a jump back),
  with a scale, an override and a cleared override: the steps where they differ, in ulps;
* ``decay``: ``SGD`` with scheduled learning rate and weight decay (0.29-0.33, 0.30-0.27)
  and zero gradients against the plain optimizer set before each step, 300 steps: Keras's
  torch weight decay ``1 - weight_decay * lr`` (the learning rate a float32 variable);
* ``stateless_apply``: ``AdamW`` with scheduled learning rate, ``beta_1`` and weight decay and
  Keras's ``beta_2 = 0.999`` through ``stateless_apply`` (values are tensors inside
  ``keras.StatelessScope``), 20 steps, against the plain optimizer set before each step;
* ``stateless``: the clock's advance inside ``keras.StatelessScope`` is recorded by the
  scope, not made in place (the in-place add is for eager training only).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

#: Keras optimizers with a torch implementation (keras/src/backend/torch/optimizers)
CONSTANT = {
    "SGD": "SGD(0.1, momentum=0.9, nesterov=True)",
    "RMSprop": "RMSprop(momentum=0.5, centered=True)",
    "Adam": "Adam()",
    "AdamW": "AdamW()",
    "Adamax": "Adamax()",
    "Nadam": "Nadam()",
    "Adagrad": "Adagrad()",
    "Adadelta": "Adadelta()",
    "Lion": "Lion()",
}
SCHEDULES = {
    "exponential": "exponential(1e-3, 0.5, every=100)",
    "cosine": "warmup(cosine(1e-3, steps=2000, end=1e-5), steps=50)",
    "expression": "0.95 - 0.1 * min(step / 1000, 1)",
    "linear": "linear(0.0, 1e-4, steps=2000)",
    "constant": "0.9",
}

pytestmark = pytest.mark.backend("torch")  # its pass runs the worker in-process


# ---- the worker (run under KERAS_BACKEND=torch) ---------------------------------------------
def _train(optimizer: Any, before_step: Any = None, steps: int = 6) -> list[Any]:
    import keras
    import torch

    sys.path.insert(0, str(Path(__file__).parent))
    from worker import torch_step

    rng = np.random.default_rng(0)
    x = torch.from_numpy(rng.normal(size=(16, 4)).astype("float32"))
    y = torch.from_numpy(rng.normal(size=(16, 2)).astype("float32"))
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(2)]
    )
    optimizer.build(model.trainable_variables)
    for step in range(steps):
        if before_step is not None:
            before_step(step)
        torch_step(model, optimizer, x, y)
    return [v.numpy() for v in model.trainable_variables]


def _largest_difference(a: list[Any], b: list[Any]) -> float:
    return max(float(np.max(np.abs(u - v))) for u, v in zip(a, b, strict=True))


def _check_constant() -> dict[str, float]:
    import keras

    import hyperstep as hs

    found = {}
    for name, text in CONSTANT.items():
        make = lambda text=text: eval(f"keras.optimizers.{text}", {"keras": keras})  # noqa: E731
        found[name] = _largest_difference(_train(hs.scheduled(make())), _train(make()))
    return found


def _check_scheduled() -> float:
    import keras

    import hyperstep as hs

    schedules = {
        "learning_rate": hs.parse("exponential(1e-2, 0.5, every=3)"),
        "beta_1": hs.parse("0.9 - 0.05 * step"),
        "weight_decay": hs.parse("linear(0.01, 0.1, steps=6)"),
    }
    reference = keras.optimizers.AdamW()

    def set_values(step: int) -> None:
        for key, schedule in schedules.items():
            setattr(reference, key, float(schedule(step)))

    expected = _train(reference, set_values)
    actual = _train(hs.scheduled(keras.optimizers.AdamW(), **schedules))
    return _largest_difference(actual, expected)


def _check_decay() -> dict[str, float]:
    import keras

    import hyperstep as hs

    schedules = {"learning_rate": "0.3 * (1 + step / 1000)", "weight_decay": "0.29 - step / 10000"}
    parsed = {key: hs.parse(text) for key, text in schedules.items()}
    start = np.linspace(0.5, 2.0, 64).astype("float32")
    found = []
    for optimizer in (keras.optimizers.SGD(), hs.scheduled(keras.optimizers.SGD(), **schedules)):
        w = keras.Variable(start)
        optimizer.build([w])
        for step in range(300):
            if not hasattr(optimizer, "hyperparameters"):
                for key, schedule in parsed.items():
                    setattr(optimizer, key, float(schedule(np.float32(step))))
            optimizer.apply([keras.ops.zeros((64,))], [w])
        found.append(keras.ops.convert_to_numpy(w.value))
    return {"differ": int(np.sum(found[0] != found[1])), "moved": float(np.min(start / found[0]))}


def _check_stateless_apply() -> dict[str, float]:
    import keras

    import hyperstep as hs

    schedules = {
        "learning_rate": "0.01 / (1 + 0.25 * step)",
        "beta_1": "0.9 - 0.01 * step",
        "weight_decay": "0.01 * (1 + step / 4)",
    }
    parsed = {key: hs.parse(text) for key, text in schedules.items()}
    target = np.linspace(-1.0, 1.0, 6).astype("float32")
    start = np.linspace(0.5, -0.7, 6).astype("float32")
    found = []
    for optimizer in (
        keras.optimizers.AdamW(),
        hs.scheduled(keras.optimizers.AdamW(), **schedules),
    ):
        plain = not hasattr(optimizer, "clock")
        w = keras.Variable(start)
        optimizer.build([w])
        for step in range(20):
            if plain:
                for key, schedule in parsed.items():
                    setattr(optimizer, key, float(schedule(np.float32(step))))
            gradient = keras.ops.convert_to_tensor(keras.ops.convert_to_numpy(w.value) - target)
            state = [v.value for v in optimizer.variables]
            new, state = optimizer.stateless_apply(state, [gradient], [w.value])
            w.assign(new[0])
            for variable, value in zip(optimizer.variables, state, strict=True):
                variable.assign(value)
            if not plain:  # (the clock is not among torch's optimizer variables)
                optimizer.clock.step.assign(step + 1)
        found.append(keras.ops.convert_to_numpy(w.value))
    return {
        "difference": float(np.max(np.abs(found[0] - found[1]))),
        "moved": float(np.max(np.abs(found[0] - start))),
    }


def _check_host() -> dict[str, list[list[float]]]:
    import hyperstep as hs

    steps = [*range(0, 2500, 3), 7, 5, 1500, 3]  # forward over two refills, then back
    found = {}
    for key, text in SCHEDULES.items():
        hp = hs.Hyperparameter(hs.parse(text), name=key)
        differ = []
        for phase in ("plain", "scaled", "set", "cleared"):
            if phase == "scaled":
                hp.scale.assign(0.5)
            elif phase == "set":
                hp.set(0.3)
            elif phase == "cleared":
                hp.clear()
            for step in steps:
                host = np.float32(hp.host_float(step))
                at = np.float32(hp.at(np.float32(step)))
                if host != at:
                    differ.append([step, float(abs(host - at) / np.spacing(at))])
        found[key] = differ
    return found


def _check_stateless() -> dict[str, int]:
    """Inside ``keras.StatelessScope`` the clock's in-place fast advance must not run."""
    import keras

    import hyperstep as hs

    clock = hs.Clock()
    with keras.StatelessScope() as scope:
        clock.advance()
        recorded = int(scope.get_current_value(clock.step))
    clock.advance()
    return {"recorded": recorded, "after": int(clock.step.numpy())}


def main() -> None:
    import keras

    result = {
        "backend": keras.backend.backend(),
        "constant": _check_constant(),
        "scheduled": _check_scheduled(),
        "decay": _check_decay(),
        "stateless_apply": _check_stateless_apply(),
        "host": _check_host(),
        "stateless": _check_stateless(),
    }
    print("RESULT " + json.dumps(result))


# ---- the tests (any backend: the worker runs in its own process) ----------------------------
@pytest.fixture(scope="module")
def results(workers: Any) -> dict[str, Any]:
    found: dict[str, Any] = workers(Path(__file__), ["torch"])["torch"]
    assert found["backend"] == "torch"
    return found


@pytest.mark.parametrize("name", list(CONSTANT))
def test_constant_values_give_bit_identical_weights_on_torch(results: dict[str, Any], name: str):
    assert results["constant"][name] == 0.0


def test_schedules_match_the_plain_optimizer_set_before_each_step(results: dict[str, Any]):
    assert results["scheduled"] < 1e-6


def test_weight_decay_is_bitwise_the_plain_optimizer_set_before_each_step(results: dict[str, Any]):
    """Keras computes ``1 - weight_decay * lr`` with its float32 learning-rate variable, in
    float32: ``hs.scheduled`` hands the learning rate as a float32 number, whose arithmetic
    with the Python float rounds the same (as a Python float, computed in double, 57 of the
    64 weights ended a last bit apart)."""
    assert results["decay"]["differ"] == 0
    assert results["decay"]["moved"] > 10  # the decay shrank every weight


def test_stateless_apply_is_bitwise_the_plain_optimizer_set_before_each_step(
    results: dict[str, Any],
):
    """Inside ``keras.StatelessScope`` values are tensors; Keras's ``1 - beta_2`` still gets
    the Python float's 0.001 (float64, exact: ``backends.torch.exact_scalar``; from a float32
    tensor the weights ended 5.4e-7 apart)."""
    assert results["stateless_apply"]["difference"] == 0.0
    assert results["stateless_apply"]["moved"] > 0.01


def test_advance_in_a_stateless_scope_is_recorded_not_made(results: dict[str, Any]):
    assert results["stateless"] == {"recorded": 1, "after": 1}


@pytest.mark.parametrize("key", list(SCHEDULES))
def test_host_values_equal_at_but_for_vectorized_pow_bits(results: dict[str, Any], key: str):
    differ = results["host"][key]
    if key == "exponential":  # torch's vectorized pow may round a bit off a scalar pow
        assert all(ulps <= 2 for _, ulps in differ)
        assert len(differ) < 0.05 * 4 * 838
    else:
        assert differ == []


if __name__ == "__main__":
    main()
