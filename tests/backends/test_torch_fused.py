"""``hs.scheduled(..., fused=True)`` on torch: PyTorch's fused Adam kernel as the update.

This file is also the worker (``KERAS_BACKEND=torch python tests/backends/test_torch_fused.py``);
it prints one JSON object, checked here. Every case trains three variables (two decayed, one
excluded from weight decay) for 100 steps on fixed random gradients, with the learning rate
on a cosine schedule (a new value every step); in one case ``beta_1`` on a schedule too, in
another a :class:`~hyperstep.Group` with half the learning rate (``"0.5 * learning_rate"``);
``StepOptimizer-*``: ``hs.StepOptimizer(hs.rules.AdamW(), ..., fused=True)`` likewise (the
"keras" figure then compares with the rule's own update):

* ``oracle``: hyperstep's fused update against ``torch.optim.AdamW(fused=True)`` /
  ``torch.optim.Adam(fused=True)`` (the same kernel) whose ``lr``, ``betas`` and ``eps`` are
  set before each step to the schedule's value and ``epsilon / sqrt(1 - beta_2^t)`` (Keras's
  ``epsilon`` outside the bias correction, see :mod:`hyperstep.backends.torch`): the largest
  weight difference (expected: 0, bitwise, as both call one kernel with equal arguments);
* ``keras``: the fused update against hyperstep's default path (Keras's own code, bitwise
  the plain optimizer): equal to float32 rounding (the kernel keeps its scalars in float64
  and orders the arithmetic differently), so within 1e-5 on weights of size ~1 after 100
  steps of at most 2e-2;
* ``lr``: the learning rates used against the cosine's closed form (float64), relative;
* ``compiled`` (``HYPERSTEP_FUSED_CHECK=compiled``, a slow test): ``fit`` with
  ``jit_compile=True`` and ``fused=True`` against the eager default.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

STEPS = 100
SHAPES = [(16, 8), (8,), (4, 4)]
CASES = {  # name: (Keras optimizer, torch optimizer, keyword arguments, beta_1 scheduled)
    "AdamW": ("AdamW", "AdamW", {"weight_decay": 0.1}, False),
    "Adam": ("Adam", "Adam", {}, False),
    "AdamW-amsgrad": ("AdamW", "AdamW", {"weight_decay": 0.05, "amsgrad": True}, False),
    "AdamW-beta_1": ("AdamW", "AdamW", {"weight_decay": 0.1}, True),
    "AdamW-group": ("AdamW", "AdamW", {"weight_decay": 0.1}, False),  # w2: half the lr
    # hs.StepOptimizer with the rules of the same names (the rule decays every variable)
    "StepOptimizer-AdamW": ("AdamW", "AdamW", {"weight_decay": 0.1}, False),
    "StepOptimizer-Adam": ("Adam", "Adam", {}, False),
    "StepOptimizer-group": ("AdamW", "AdamW", {"weight_decay": 0.1}, False),
}
EPSILON = 1e-7  # Keras's default


def _lr(step: int) -> float:
    return 2e-2 * 0.5 * (1.0 + math.cos(math.pi * step / STEPS))


def _beta_1(step: int) -> float:
    return float(np.float32(0.9 - 0.001 * step))


# ---- the worker (run under KERAS_BACKEND=torch) ---------------------------------------------
def _case(name: str) -> dict[str, Any]:
    import keras
    import torch

    import hyperstep as hs

    keras_name, torch_name, kwargs, schedule_beta = CASES[name]
    rng = np.random.default_rng(0)
    init = [rng.normal(size=s).astype("float32") for s in SHAPES]
    grads = [[rng.normal(size=s).astype("float32") for s in SHAPES] for _ in range(STEPS)]

    def train(fused: bool) -> tuple[list[Any], list[float], list[float]]:
        variables = [keras.Variable(a, name=f"w{i}") for i, a in enumerate(init)]
        if name.startswith("StepOptimizer"):
            return train_rule(variables, fused)
        base = getattr(keras.optimizers, keras_name)(**kwargs)
        extra = {"beta_1": hs.parse("0.9 - 0.001 * step")} if schedule_beta else {}
        if name.endswith("group"):
            extra["groups"] = [
                hs.Group("half", match=variables[2], learning_rate="0.5 * learning_rate")
            ]
        opt = hs.scheduled(
            base, learning_rate=hs.parse(f"cosine(2e-2, steps={STEPS})"), fused=fused, **extra
        )
        if "weight_decay" in kwargs:
            opt.exclude_from_weight_decay(var_names=["w1"])
        opt.build(variables)
        lrs, betas = [], []
        for g in grads:
            lrs.append(float(opt.learning_rate.numpy()))
            betas.append(float(opt.beta_1.numpy()) if schedule_beta else 0.9)
            opt.apply([torch.from_numpy(x) for x in g], variables)
        return [v.numpy() for v in variables], lrs, betas

    def train_rule(variables: list[Any], fused: bool) -> tuple[list[Any], list[float], list[float]]:
        groups = []
        if name.endswith("group"):
            groups = [hs.Group("half", match=variables[2], learning_rate="0.5 * learning_rate")]
        opt = hs.StepOptimizer(
            getattr(hs.rules, keras_name)(),
            learning_rate=hs.parse(f"cosine(2e-2, steps={STEPS})"),
            groups=groups,
            fused=fused,
            **kwargs,
        )
        opt.build(variables)
        lrs = []
        for g in grads:
            lrs.append(float(opt.learning_rate))
            opt.apply([torch.from_numpy(x) for x in g], variables)
        return [v.numpy() for v in variables], lrs, [0.9] * STEPS

    fused, lrs, betas = train(True)
    default, _, _ = train(False)

    params = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in init]
    decay = kwargs.get("weight_decay", 0.0)
    groups = [{"params": [params[0]], "weight_decay": decay}]
    groups.append({"params": [params[1]], "weight_decay": 0.0 if "Step" not in name else decay})
    groups.append({"params": [params[2]], "weight_decay": decay})
    amsgrad = bool(kwargs.get("amsgrad", False))
    reference = getattr(torch.optim, torch_name)(groups, fused=True, amsgrad=amsgrad)
    for t, (g, lr, beta_1) in enumerate(zip(grads, lrs, betas, strict=True)):
        for p, x in zip(params, g, strict=True):
            p.grad = torch.from_numpy(x)
        for index, group in enumerate(reference.param_groups):
            group["lr"] = 0.5 * lr if name.endswith("group") and index == 2 else lr
            group["betas"] = (beta_1, 0.999)
            group["eps"] = EPSILON / (1.0 - 0.999 ** (t + 1)) ** 0.5
        reference.step()
    expected = [p.detach().numpy() for p in params]
    return {
        "oracle": max(float(np.max(np.abs(a - b))) for a, b in zip(fused, expected, strict=True)),
        "keras": max(float(np.max(np.abs(a - b))) for a, b in zip(fused, default, strict=True)),
        "lr": max(abs(lr - _lr(t)) / max(_lr(t), 1e-12) for t, lr in enumerate(lrs)),
        "beta_1": max(abs(b - _beta_1(t)) for t, b in enumerate(betas)) if schedule_beta else 0.0,
    }


def _fit(fused: bool, compiled: bool) -> list[Any]:
    """``model.fit`` of a ``Dense`` layer for 4 steps, ``jit_compile`` with dynamo's ``eager``
    backend (tracing, guards and graph breaks as with inductor, without code generation)."""
    import keras
    import torch

    import hyperstep as hs

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    optimizer = hs.scheduled(
        keras.optimizers.AdamW(weight_decay=0.1),
        learning_rate=hs.parse("cosine(1e-2, steps=10)"),
        fused=fused,
    )
    original = torch.compile
    torch.compile = lambda fn, **kw: original(fn, **{"backend": "eager", **kw})  # type: ignore[assignment]
    try:
        model.compile(optimizer=optimizer, loss="mse", jit_compile=compiled)
        rng = np.random.default_rng(0)
        x = rng.normal(size=(32, 4)).astype("float32")
        y = rng.normal(size=(32, 3)).astype("float32")
        model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)
    finally:
        torch.compile = original  # type: ignore[assignment]
    return [v.numpy() for v in model.trainable_variables]


def main() -> None:
    import os
    import warnings

    import keras

    result: dict[str, Any] = {"backend": keras.backend.backend()}
    if os.environ.get("HYPERSTEP_FUSED_CHECK") == "compiled":
        warnings.simplefilter("ignore")  # dynamo's notes on Keras's graph breaks
        compiled, eager = _fit(True, True), _fit(False, False)
        result["compiled"] = max(
            float(np.max(np.abs(a - b))) for a, b in zip(compiled, eager, strict=True)
        )
    else:
        result.update({name: _case(name) for name in CASES})
    print("RESULT " + json.dumps(result))


# ---- the tests (any backend: the worker runs in its own process) ----------------------------
@pytest.fixture(scope="module")
def results(workers: Any) -> dict[str, Any]:
    found: dict[str, Any] = workers(Path(__file__), ["torch"])["torch"]
    assert found["backend"] == "torch"
    return found


@pytest.mark.parametrize("name", list(CASES))
def test_fused_equals_torch_fused_optimizer_bitwise(results: dict[str, Any], name: str):
    assert results[name]["oracle"] == 0.0


@pytest.mark.parametrize("name", list(CASES))
def test_fused_equals_keras_update_to_float32_rounding(results: dict[str, Any], name: str):
    assert 0.0 <= results[name]["keras"] < 1e-5


@pytest.mark.parametrize("name", list(CASES))
def test_the_schedule_changed_every_step_as_its_closed_form(results: dict[str, Any], name: str):
    assert results[name]["lr"] < 1e-6  # float32 rounding of the cosine
    assert results[name]["beta_1"] < 2e-7  # float32 arithmetic vs float64, rounded


@pytest.mark.slow
def test_fused_trains_under_torch_compile_as_the_eager_default(workers: Any, monkeypatch: Any):
    """Under ``torch.compile`` the update falls back to Keras's code (decay included): ``fit``
    with ``jit_compile=True`` and ``fused=True`` equals the eager default to the last bits
    compiled code rounds differently in (see docs/backends.md)."""
    monkeypatch.setenv("HYPERSTEP_FUSED_CHECK", "compiled")
    found = workers(Path(__file__), ["torch"])["torch"]
    assert 0.0 <= found["compiled"] < 1e-5


if __name__ == "__main__":
    main()
