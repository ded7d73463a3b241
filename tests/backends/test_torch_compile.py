"""``hs.scheduled`` under ``torch.compile``: Keras's ``jit_compile=True`` on the torch backend.

This file is also the worker: ``KERAS_BACKEND=torch python tests/backends/test_torch_compile.py
[--inductor]`` trains ``Dense(8 -> 4)`` with a scheduled ``AdamW`` (learning rate,
``beta_1`` and weight decay on schedules, Keras's constant ``beta_2 = 0.999``) by
``train_on_batch`` for 8 steps, making run-time changes before steps 3 (a learning-rate
override), 5 (override cleared, ``beta_1`` scaled by 0.5) and 6 (a ``weight_decay``
override), and prints one JSON object: per-step losses, final weights, dynamo's graph and
frame counts after each step and the graph-break reasons, for

* ``plain``: plain Keras ``AdamW``, eager, its values set before each step to those
  ``hs.scheduled`` has then (:func:`_plain_values`);
* ``eager``: ``jit_compile=False``, the reference;
* ``unchanged``: eager without the run-time changes (they must matter);
* ``compiled``: ``jit_compile=True`` with dynamo's default settings;
* ``captured``: the same with ``torch._dynamo.config.capture_scalar_outputs = True``;
* ``loop`` and ``loop-compiled``: a hand-written step (``loss.backward()`` and
  ``optimizer.apply``), eager and under ``torch.compile``;
* ``fused-eager`` and ``fused-compiled``: ``fused=True`` (PyTorch's fused Adam kernel,
  :mod:`hyperstep.backends.torch`), eager and under ``torch.compile``, with Keras's
  ``beta_2 = 0.999``, ``epsilon`` and ``weight_decay`` that are float32 numbers and the bias
  excluded from weight decay (``launches``: the fused kernel calls per step);
* ``step-eager``/``step-compiled`` and ``step-adam-eager``/``step-adam-compiled``: the same
  with ``hs.StepOptimizer(..., fused=True)`` and its ``AdamWRule`` rule (Keras's default
  ``beta_2`` and ``epsilon``, the bias in a group without weight decay) or its
  ``AdamRule(amsgrad=True)`` rule;
* ``<name>-plain``/``<name>-eager``/``<name>-compiled`` for the other eight Keras
  optimizers with a torch implementation: Keras's step with ``SGD(momentum=0.9,
  nesterov=True)`` (``momentum`` on a schedule, scaled at step 5), ``RMSprop(momentum=0.5)``
  (``rho`` scaled), ``Adam``, ``Adamax``, ``Nadam``, ``Lion`` (``beta_1`` on a schedule,
  scaled), ``Adadelta`` (``rho`` scaled) and ``Adagrad`` (``epsilon`` scaled).

Tracing Keras's train step takes dynamo 10-30 s on a loaded 2-core machine, and inductor
(Keras's backend for ``torch.compile``) then 10 s to minutes more to generate code, so the
test compiles with dynamo's ``eager`` backend: tracing, graph breaks, guards and therefore
recompiles are dynamo's and the same for every backend; only code generation is skipped.
``--inductor`` runs the same check with Keras's default backend (``seconds`` has the time of
each step, the first one compiling).

The worker also checks, eagerly, that ``hs.scheduled``'s torch evaluation of a value (torch
calls instead of ``keras.ops``, ``Hyperparameter._torch_at``) gives the bits of the general
``keras.ops`` form (:func:`hyperstep.control.value_forms.at`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

STEPS = 8
#: the modes also run for the other optimizers
MORE = ("plain", "eager", "compiled")


# ---- the worker (run under KERAS_BACKEND=torch) ---------------------------------------------
#: optimizer -> (its Keras class and arguments, the hyperparameter scaled at step 5)
OPTIMIZERS = {
    "AdamW": ("AdamW()", "beta_1"),
    "SGD": ("SGD(momentum=0.9, nesterov=True)", "momentum"),
    "RMSprop": ("RMSprop(momentum=0.5)", "rho"),
    "Adam": ("Adam()", "beta_1"),
    "Adamax": ("Adamax()", "beta_1"),
    "Nadam": ("Nadam()", "beta_1"),
    "Lion": ("Lion()", "beta_1"),
    "Adadelta": ("Adadelta()", "rho"),
    "Adagrad": ("Adagrad()", "epsilon"),
}
SECOND = {
    "beta_1": "0.9 - 0.01 * step",
    "momentum": "0.9 - 0.01 * step",
    "rho": "0.9",
    "epsilon": "1e-3",
}
#: elementwise arithmetic only: a vectorized `pow` (eager torch's host table) may round a
#: bit off a scalar one, and differently on another CPU
LEARNING_RATE = "0.01 / (1 + 0.25 * step)"
WEIGHT_DECAY = "0.01 * (1 + step / 4)"


def _plain_values(name: str, step: int) -> dict[str, float]:
    """The values ``hs.scheduled`` has at ``step`` with the run-time changes below, as the
    Python floats a plain optimizer is set to: a schedule's float32 value, a constant's own
    Python float (Keras's ``beta_2 = 0.999``, not float32's 0.99900001), an override's
    float32 number, a scaled value the Python product (0.5: exact in float32 too)."""
    import hyperstep as hs
    from hyperstep.schedules.expressions import Constant

    second = OPTIMIZERS[name][1]
    texts = {"learning_rate": LEARNING_RATE, "weight_decay": WEIGHT_DECAY, second: SECOND[second]}
    values = {}
    for key, text in texts.items():
        schedule = hs.parse(text)
        if isinstance(schedule, Constant):
            values[key] = float(schedule.value_)
        else:
            values[key] = float(schedule(np.float32(step)))
    if step in (3, 4):
        values["learning_rate"] = float(np.float32(0.05))
    if step >= 5:
        values[second] *= 0.5
    if step >= 6:
        values["weight_decay"] = float(np.float32(0.2))
    return values


def _train(mode: str, backend: str, name: str = "AdamW") -> dict[str, Any]:
    """Train 8 steps in ``mode``: ``eager``/``unchanged``/``compiled``/``captured`` through
    Keras's ``train_on_batch``; ``loop``/``loop-compiled`` through a hand-written step
    (``loss.backward()`` + ``optimizer.apply``), the latter under ``torch.compile``."""
    import keras
    import torch
    from torch._dynamo.utils import counters

    import hyperstep as hs

    torch._dynamo.reset()
    counters.clear()
    torch._dynamo.config.capture_scalar_outputs = mode == "captured"
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 8)).astype("float32")
    y = rng.normal(size=(16, 4)).astype("float32")
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
    text, second = OPTIMIZERS[name]
    optimizer = hs.scheduled(
        eval(f"keras.optimizers.{text}", {"keras": keras}),
        learning_rate=LEARNING_RATE,
        weight_decay=WEIGHT_DECAY,
        **{second: SECOND[second]},
    )
    if mode.startswith("plain"):  # plain Keras, its values set before each step
        optimizer = eval(f"keras.optimizers.{text}", {"keras": keras})
    if mode.startswith("fused"):
        # Eager, the kernel gets Keras's constants as Python numbers (as a plain Keras
        # optimizer has them); compiled, as tensors (so that they change without a
        # recompile): beta_1 and beta_2 in float64, exact (Keras's default path uses them as
        # Python numbers: backends.torch.exact_scalar), epsilon and weight decay in float32,
        # here float32 numbers, so that the two are the same scalars.
        optimizer = hs.scheduled(
            keras.optimizers.AdamW(epsilon=2**-23),
            learning_rate=LEARNING_RATE,
            weight_decay=2**-7,
            beta_1=SECOND["beta_1"],
            fused=True,
        )
        optimizer.exclude_from_weight_decay(var_names=["bias"])  # two kernel calls per step
    if mode.startswith("step"):
        # constants that are not float32 numbers (0.999, 1e-7): the compiled step reads them
        # exactly (Hyperparameter.exact_at), as the eager one does (host_float)
        if mode.startswith("step-adam"):
            rule, groups = hs.rules.AdamRule(amsgrad=True), []
        else:  # the bias without weight decay: two kernel calls per step
            rule, groups = (
                hs.rules.AdamWRule(),
                [hs.Group("bias", match="*/bias", weight_decay=0.0)],
            )
        optimizer = hs.StepOptimizer(
            rule,
            groups=groups,
            fused=True,
            learning_rate=LEARNING_RATE,
            **{"beta_1": SECOND["beta_1"], **({"weight_decay": 0.01} if groups else {})},
        )
    launches = _count_launches()
    compiled = mode.endswith("compiled") or mode == "captured"
    if mode.startswith("loop"):
        sys.path.insert(0, str(Path(__file__).parent))
        from worker import torch_step

        optimizer.build(model.trainable_variables)
        xt, yt = torch.from_numpy(x), torch.from_numpy(y)

        def loop_step() -> Any:
            return torch_step(model, optimizer, xt, yt)

        run = torch.compile(loop_step, backend=backend) if compiled else loop_step
        one_step = lambda: float(run().detach())  # noqa: E731
    else:
        model.compile(optimizer=optimizer, loss="mse", jit_compile=compiled)
        one_step = lambda: float(model.train_on_batch(x, y))  # noqa: E731
    if compiled and not mode.startswith("loop"):
        original = torch.compile
        torch.compile = lambda fn, **kw: original(fn, **{"backend": backend, **kw})
    hps = getattr(optimizer, "hyperparameters", {})  # (none for plain Keras)
    result: dict[str, Any] = {"losses": [], "graphs": [], "frames": [], "seconds": []}
    result["launches"] = []
    try:
        for step in range(STEPS):
            if mode.startswith("plain"):
                for key, value in _plain_values(name, step).items():
                    setattr(optimizer, key, value)
            elif mode != "unchanged":
                if step == 3:
                    hps["learning_rate"].set(0.05)
                if step == 5:
                    hps["learning_rate"].clear()
                    hps[second].scale.assign(0.5)
                if step == 6 and "weight_decay" in hps:
                    hps["weight_decay"].set(0.2)
            start = time.perf_counter()
            result["losses"].append(one_step())
            result["seconds"].append(time.perf_counter() - start)
            result["graphs"].append(counters["stats"]["unique_graphs"])
            result["frames"].append(counters["frames"]["total"])
            result["launches"].append(launches.pop())
    finally:
        if compiled and not mode.startswith("loop"):
            torch.compile = original  # type: ignore[assignment]
    result["weights"] = [w.ravel().tolist() for w in model.get_weights()]
    result["step"] = int((optimizer.clock.step if hps else optimizer.iterations).value)
    result["breaks"] = sorted({reason.split("\n")[0] for reason in counters["graph_break"]})
    return result


def _count_launches() -> Any:
    """Count the fused kernel's calls (``hyperstep.backends.torch._launch``, which the
    compiled step's custom op calls when it runs): ``pop()`` returns those since the last."""
    from hyperstep.backends import torch as fused

    launch = getattr(fused._launch, "__wrapped__", fused._launch)
    calls = [0]

    def counted(*args: Any, **kwargs: Any) -> None:
        calls[0] += 1
        launch(*args, **kwargs)

    counted.__wrapped__ = launch  # type: ignore[attr-defined]
    fused._launch = counted

    class Counter:
        def pop(self) -> int:
            found, calls[0] = calls[0], 0
            return found

    return Counter()


def _fast_path_mismatches() -> list[str]:
    """Where ``Hyperparameter.at``'s torch evaluation differs from the keras.ops path, bitwise."""
    import keras
    import torch
    from keras import ops

    import hyperstep as hs
    from hyperstep.control import value_forms

    sys.path.insert(0, str(Path(__file__).parent))
    from worker import EXPRESSIONS, GRID

    keras_schedule = keras.optimizers.schedules.CosineDecay(0.1, 100, alpha=0.1)
    clock = hs.Clock(steps_per_epoch=7)
    found = []
    for value in [*EXPRESSIONS, "0.9", "1e-7", "epoch / 3 + 0.1", keras_schedule]:
        hp = hs.Hyperparameter(value, clock=clock)
        for change in ("none", "scale", "set"):
            if change == "scale":
                hp.scale.assign(0.37)
            if change == "set":
                hp.set(0.123)
            for step in GRID:
                t = ops.cast(ops.convert_to_tensor(step), "float32")
                got, expected = hp.at(t), value_forms.at(hp._evaluated, t)
                if got.dtype != expected.dtype or not torch.equal(got, expected):
                    found.append(f"{value!r} {change} step={step}: {got} != {expected}")
    return found


def main() -> None:
    backend = "inductor" if "--inductor" in sys.argv else "eager"
    modes = ("plain", "eager", "unchanged", "compiled", "captured", "loop", "loop-compiled")
    modes += ("fused-eager", "fused-compiled")
    modes += ("step-eager", "step-compiled", "step-adam-eager", "step-adam-compiled")
    result: dict[str, Any] = {"fast_path_mismatches": _fast_path_mismatches()}
    result.update({mode: _train(mode, backend) for mode in modes})
    for name in list(OPTIMIZERS)[1:]:
        result.update({f"{name}-{mode}": _train(mode, backend, name) for mode in MORE})
    print("RESULT " + json.dumps(result))


# compile-heavy (dynamo traces each optimizer's step: minutes on 2 cores): `make test-slow`,
# in the torch pass
pytestmark = [pytest.mark.slow, pytest.mark.backend("torch")]


# ---- the tests -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def results(workers: Any, hang_timeout: float) -> dict[str, Any]:
    found: dict[str, Any] = workers(Path(__file__), ["torch"], hang_timeout)["torch"]
    return found


def test_torch_evaluation_equals_hyperparameter_at_bitwise(results: dict[str, Any]) -> None:
    """``hs.scheduled`` evaluates values with torch calls on torch (cheaper than keras.ops):
    the same float32 bits as ``Hyperparameter.at`` for every schedule kind, scaled and set."""
    assert results["fast_path_mismatches"] == []


#: each compiled run and the eager run it must match
PAIRS = {
    "compiled": "eager",
    "captured": "eager",
    "loop-compiled": "loop",
    "fused-compiled": "fused-eager",
    "step-compiled": "step-eager",
    "step-adam-compiled": "step-adam-eager",
    **{f"{name}-compiled": f"{name}-eager" for name in list(OPTIMIZERS)[1:]},
}


@pytest.mark.parametrize("mode", list(PAIRS))
def test_compiled_training_equals_eager_bitwise(results: dict[str, Any], mode: str) -> None:
    """Every compiled run ends bitwise where its eager run does, loss by loss (dynamo's
    ``eager`` backend: the same kernels). Eagerly Keras's code gets Python floats; compiled,
    values it uses as Python numbers (``1 - beta_2``, ``alpha=self.momentum``) are float64
    tensors with constants exact (``backends.torch.exact_scalar``), the others float32."""
    eager, compiled = results[PAIRS[mode]], results[mode]
    assert compiled["losses"] == eager["losses"]
    assert compiled["weights"] == eager["weights"]
    assert compiled["step"] == eager["step"] == STEPS


#: each run of hs.scheduled's default path and the plain Keras run set per step it must equal
PLAIN = {
    "eager": "plain",
    "compiled": "plain",
    "captured": "plain",
    **{f"{name}-{mode}": f"{name}-plain" for name in list(OPTIMIZERS)[1:] for mode in MORE[1:]},
}


@pytest.mark.parametrize("mode", list(PLAIN))
def test_default_path_equals_plain_keras_set_before_each_step_bitwise(
    results: dict[str, Any], mode: str
) -> None:
    """Keras-exact by default, under ``torch.compile`` too (with scalars captured or not):
    ``hs.scheduled(AdamW())`` with a scheduled learning rate, ``beta_1`` and weight decay
    and Keras's constant ``beta_2 = 0.999`` (whose float32 is not the Python float: compiled
    values as float32 tensors gave ``1 - beta_2 = 0.00099998713`` and weights 8.6e-7 off),
    through the run-time changes, equals plain Keras ``AdamW`` whose values are set before
    each step (:func:`_plain_values`), weights and losses bitwise; so does every other
    Keras optimizer with a torch implementation, eager and compiled."""
    plain, ours = results[PLAIN[mode]], results[mode]
    assert ours["losses"] == plain["losses"]
    assert ours["weights"] == plain["weights"]
    assert plain["step"] == STEPS


def test_run_time_changes_change_the_compiled_training(results: dict[str, Any]) -> None:
    """The comparison above is not vacuous: the override, scale and weight decay matter."""
    changed, unchanged = results["compiled"], results["unchanged"]
    np.testing.assert_allclose(changed["losses"][:4], unchanged["losses"][:4], rtol=1e-6)
    assert abs(changed["losses"][4] - unchanged["losses"][4]) > 1e-3  # after the override
    assert not np.allclose(changed["weights"][0], unchanged["weights"][0], atol=1e-4)


def test_the_hand_written_loop_matches_keras_train_on_batch(results: dict[str, Any]) -> None:
    np.testing.assert_allclose(results["loop"]["losses"], results["eager"]["losses"], rtol=1e-6)


@pytest.mark.parametrize("mode", list(PAIRS))
def test_run_time_changes_do_not_recompile(results: dict[str, Any], mode: str) -> None:
    # the first two calls compile (the first builds the optimizer); steps 3, 5 and 6 change
    # an override, a scale and another override: no new graph, no new frame compiled
    graphs, frames = results[mode]["graphs"], results[mode]["frames"]
    assert graphs[1] > 0
    assert graphs[2:] == [graphs[1]] * (STEPS - 2)
    assert frames[2:] == [frames[1]] * (STEPS - 2)


def test_tensor_hyperparameters_break_the_graph_unless_scalars_are_captured(
    results: dict[str, Any],
) -> None:
    """Keras's torch ``AdamW`` passes ``1 - beta_1`` as ``alpha=``, a Python number: a tensor
    needs ``.item()``, which dynamo traces only with ``capture_scalar_outputs``; otherwise
    the update runs eagerly (still correct, as tested above). If this fails, Keras or torch
    changed: update the torch section of docs/backends.md."""
    data_dependent = "Data dependent operator"
    assert data_dependent in results["compiled"]["breaks"]
    assert data_dependent not in results["captured"]["breaks"]
    assert results["captured"]["graphs"][-1] < results["compiled"]["graphs"][-1]


def test_fused_kernel_runs_under_torch_compile_bitwise_as_eager(results: dict[str, Any]) -> None:
    """``fused=True`` under ``torch.compile``: the fused kernel runs in every compiled step
    (two calls: the kernel decays, the bias does not) and the weights equal the eager
    fused run's bitwise (dynamo's ``eager`` backend computes the gradients with the same
    kernels; the scalars are equal: ``beta_2 = 0.999`` reaches the kernel exact, ``epsilon``
    and the weight decay are float32 numbers)."""
    eager, compiled = results["fused-eager"], results["fused-compiled"]
    assert eager["launches"] == compiled["launches"] == [2] * STEPS
    assert compiled["weights"] == eager["weights"]
    assert compiled["losses"] == eager["losses"]
    assert not np.allclose(compiled["weights"][0], results["compiled"]["weights"][0], atol=1e-4)


def test_fused_update_is_traced_without_captured_scalars(results: dict[str, Any]) -> None:
    """The fused update is one opaque op in the graph that reads its values back when it
    runs: no ``.item()`` while tracing, so no data-dependent graph break and fewer graphs
    than the default path even with ``capture_scalar_outputs``; Keras's own update runs in
    none of the steps (no launch would be counted then)."""
    fused, default = results["fused-compiled"], results["compiled"]
    assert "Data dependent operator" not in fused["breaks"]
    assert fused["graphs"][-1] <= results["captured"]["graphs"][-1] < default["graphs"][-1]


@pytest.mark.parametrize(("mode", "calls"), [("step", 2), ("step-adam", 1)])
def test_step_optimizer_fused_kernel_runs_under_torch_compile_bitwise_as_eager(
    results: dict[str, Any], mode: str, calls: int
) -> None:
    """``hs.StepOptimizer(..., fused=True)`` under ``torch.compile``: the same custom op as
    ``hs.scheduled`` runs the fused kernel in every compiled step (AdamW: the default group
    decays, the bias group does not; Adam with ``amsgrad``: one call), the rule's own update
    in none (no launch would be counted then), and the weights equal the eager fused run's
    bitwise: the compiled step reads the values in float64 with constants exact
    (``Hyperparameter.exact_at``), the numbers the eager step reads from the host table.
    No data-dependent graph break; no new graph after step 2 (``test_run_time_changes_do_not_
    recompile`` above)."""
    eager, compiled = results[f"{mode}-eager"], results[f"{mode}-compiled"]
    assert eager["launches"] == compiled["launches"] == [calls] * STEPS
    assert compiled["weights"] == eager["weights"]
    assert compiled["losses"] == eager["losses"]
    assert "Data dependent operator" not in compiled["breaks"]
    assert compiled["graphs"][-1] <= results["fused-compiled"]["graphs"][-1]


if __name__ == "__main__":
    main()


def test_from_keras_inside_torch_compile_is_bitwise_keras(hang_timeout: float) -> None:
    """Keras's six built-ins converted by from_keras, evaluated inside ``torch.compile``:
    bitwise Keras's own schedule compiled the same way, and eagerly bitwise Keras eagerly (a
    grid of arguments, steps 0 to 3x the horizon, every boundary +-1:
    tests/schedules/keras_cases.py). Compiled vs eager differ by an ulp on a few steps
    (inductor's ``cos``; measured: 3-5 of 2293 steps, CosineDecay and CosineDecayRestarts),
    for Keras itself too."""
    worker = Path(__file__).parents[1] / "schedules" / "keras_bitwise_worker.py"
    env = {**os.environ, "KERAS_BACKEND": "torch", "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, str(worker), "--torch-compile"],
        env=env,
        capture_output=True,
        text=True,
        timeout=hang_timeout,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    report = json.loads(lines[-1].removeprefix("RESULT "))
    assert report["cases"] >= 6 and report["steps"] > 1000
    assert not report["eager"], report["eager"][:3]
    assert not report["traced"], report["traced"][:3]
    assert sum(case["n"] for case in report["traced_vs_eager"]) < report["steps"] // 10
