"""``hs.scheduled(..., fused=True)`` on torch: PyTorch's fused Adam kernel as the update.

This file is also the worker (``KERAS_BACKEND=torch python tests/backends/test_torch_fused.py``);
it prints one JSON object, checked here. Every case trains three variables (two decayed, one
excluded from weight decay) for 100 steps on fixed random gradients, with the learning rate
on a cosine schedule (a new value every step); in one case ``beta_1`` on a schedule too, in
another a :class:`~hyperstep.Group` with half the learning rate (``"0.5 * learning_rate"``);
``StepOptimizer-*``: ``hs.StepOptimizer(hs.rules.AdamWRule(), ..., fused=True)`` likewise (the
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
* ``fallback``: where the fused kernel is missing (``AdamW`` and ``StepOptimizer-AdamW``:
  its device taken off the list of devices with fused kernels, or ``torch._fused_adam_``
  deleted), the fused run against the default path (expected: 0, bitwise: ``hs.scheduled``
  falls back to Keras's ``_foreach`` code, ``hs.StepOptimizer`` to the rule's own update).

``fused=True`` under ``torch.compile`` is tested in ``tests/backends/test_torch_compile.py``.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
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

pytestmark = pytest.mark.backend("torch")  # its pass runs the worker in-process


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

    def train(fused: bool, steps: int = STEPS) -> tuple[list[Any], list[float], list[float]]:
        variables = [keras.Variable(a, name=f"w{i}") for i, a in enumerate(init)]
        if name.startswith("StepOptimizer"):
            return train_rule(variables, fused, steps)
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
        for g in grads[:steps]:
            lrs.append(float(opt.learning_rate.numpy()))
            betas.append(float(opt.beta_1.numpy()) if schedule_beta else 0.9)
            opt.apply([torch.from_numpy(x) for x in g], variables)
        return [v.numpy() for v in variables], lrs, betas

    def train_rule(
        variables: list[Any], fused: bool, steps: int
    ) -> tuple[list[Any], list[float], list[float]]:
        groups = []
        if name.endswith("group"):
            groups = [hs.Group("half", match=variables[2], learning_rate="0.5 * learning_rate")]
        opt = hs.StepOptimizer(
            getattr(hs.rules, f"{keras_name}Rule")(),
            learning_rate=hs.parse(f"cosine(2e-2, steps={STEPS})"),
            groups=groups,
            fused=fused,
            **kwargs,
        )
        opt.build(variables)
        lrs = []
        for g in grads[:steps]:
            lrs.append(float(opt.learning_rate))
            opt.apply([torch.from_numpy(x) for x in g], variables)
        return [v.numpy() for v in variables], lrs, [0.9] * STEPS

    fused, lrs, betas = train(True)
    default, _, _ = train(False)
    fallback = []
    if name in ("AdamW", "StepOptimizer-AdamW"):  # 10 steps each: Keras's code is slow
        default_10, _, _ = train(False, 10)
        for how in ("device", "kernel"):
            with _without_kernel(how):
                missing, _, _ = train(True, 10)
            pairs = zip(missing, default_10, strict=True)
            fallback += [float(np.max(np.abs(a - b))) for a, b in pairs]

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
        "fallback": fallback,
    }


@contextlib.contextmanager
def _without_kernel(how: str) -> Iterator[None]:
    """No fused kernel: ``device``, the CPU is not among the devices that have one;
    ``kernel``, this torch has no ``torch._fused_adam_``."""
    import torch

    from hyperstep.backends import torch as fused

    devices, kernel = fused._FUSED_DEVICES, torch._fused_adam_
    if how == "device":
        fused._FUSED_DEVICES = tuple(d for d in devices if d != "cpu")
    else:
        del torch._fused_adam_
    try:
        yield
    finally:
        fused._FUSED_DEVICES, torch._fused_adam_ = devices, kernel


def main() -> None:
    import keras

    result: dict[str, Any] = {"backend": keras.backend.backend()}
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


def test_without_a_fused_kernel_fused_falls_back_to_the_default_update_bitwise(
    results: dict[str, Any],
):
    """On a device without PyTorch's fused Adam kernel (or a torch without one), ``fused=True``
    runs the default update: ``hs.scheduled`` Keras's ``_foreach`` code, ``hs.StepOptimizer``
    the rule's own update (see docs/backends.md)."""
    for name in ("AdamW", "StepOptimizer-AdamW"):
        assert results[name]["fallback"] == [0.0] * 2 * len(SHAPES), name
    assert results["AdamW"]["keras"] > 0.0  # the kernel's update differs from the fallback's


if __name__ == "__main__":
    main()
