"""The same hyperstep on Keras's TensorFlow, JAX and PyTorch backends.

``worker.py`` runs once per backend, in that backend's pytest pass (``KERAS_BACKEND`` is
fixed when Keras is imported); the JAX and torch passes compare its JSON with the one the
TensorFlow pass left (see tests/conftest.py): schedule
values equal up to float32 rounding, per-step hyperparameter traces equal across backends,
final weights within 1e-5 of the TensorFlow run, plateau state surviving ``.keras``, the
compiled JAX step traced once across run-time changes, and one clear ``BackendError`` for
every TensorFlow-only feature.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

WORKER = Path(__file__).with_name("worker.py")
BACKENDS = ("tensorflow", "jax", "torch")
OTHERS = ("jax", "torch")


@pytest.fixture(scope="module")
def results(workers: Any) -> dict[str, Any]:
    """Run the worker under every backend, all at once; return ``{backend: result}``."""
    found: dict[str, Any] = workers(WORKER, BACKENDS)
    return found


@pytest.mark.parametrize("backend", BACKENDS)
def test_each_worker_ran_on_its_backend(results: dict[str, Any], backend: str) -> None:
    assert results[backend]["backend"] == backend


#: a fresh process is the subject: what importing and training imported
FIT_IMPORTS = """
import sys
import numpy as np, keras, hyperstep as hs
imported = "tensorflow" in sys.modules
model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
lr = "warmup(cosine(0.05, steps=8), steps=2)"
optimizer = hs.scheduled(keras.optimizers.AdamW(), learning_rate=lr)
model.compile(optimizer, "mse")
plateau = hs.ReduceOnPlateau(optimizer, monitor="loss", patience=1)
log = hs.callbacks.LogHyperparameters(optimizer.hyperparameters)
x = np.ones((8, 3), "float32")
model.fit(x, x[:, :1], batch_size=4, epochs=2, verbose=0, callbacks=[log, plateau])
print("RESULT", imported, "tensorflow" in sys.modules)
"""


@pytest.mark.parametrize("backend", OTHERS)
def test_hyperstep_does_not_import_tensorflow_on_other_backends(backend: str) -> None:
    # (Keras's own `model.save` imports TensorFlow when it is installed: checked before it)
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, "-c", FIT_IMPORTS], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert done.stdout.split()[-3:] == ["RESULT", "False", "False"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_hyperstep_or_dtype_warning(results: dict[str, Any], backend: str) -> None:
    assert results[backend]["warnings"] == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_steps_and_durations_up_to_2_53_on_every_backend(
    results: dict[str, Any], backend: str
) -> None:
    # the closed forms in float64 (these steps are exact in float32); JAX once raised
    # "OverflowError: Python int 10000000000 too large to convert to int32"
    steps = np.array([0, 10**9, 2**40, 2**52, 2**53], np.float64)
    cosine = 500.0 * (1 + np.cos(np.pi * np.minimum(steps, 1e10) / 1e10))
    expected = {
        "cosine(1000.0, steps=10000000000.0)": cosine,
        "linear(0.0, 1.0, steps=9007199254740992.0)": steps / 2**53,
    }
    got = results[backend]["big_steps"]
    for text, values in expected.items():
        for form in (text, text + " (scalar)"):
            np.testing.assert_allclose(got[form], values, rtol=1e-5, atol=1e-6, err_msg=form)


@pytest.mark.parametrize("backend", OTHERS)
def test_schedule_values_match_tensorflow_up_to_float32_rounding(
    results: dict[str, Any], backend: str
) -> None:
    expected, got = results["tensorflow"]["schedules"], results[backend]["schedules"]
    assert list(got) == list(expected)
    for text in expected:
        # a few float32 ulps of the schedule's scale: 1 - cos(small) cancels, and the
        # backends' cos may differ in the last bit
        scale = np.max(np.abs(expected[text]))
        np.testing.assert_allclose(
            got[text], expected[text], rtol=1e-6, atol=4 * 2.0**-23 * scale, err_msg=text
        )


@pytest.mark.parametrize("backend", OTHERS)
@pytest.mark.parametrize("how", ["fit", "loop"])
def test_hyperparameter_traces_match_tensorflow(
    results: dict[str, Any], backend: str, how: str
) -> None:
    expected, got = results["tensorflow"][how]["traces"], results[backend][how]["traces"]
    assert [row["step"] for row in got] == [row["step"] for row in expected] == list(range(12))
    for name in ("learning_rate", "beta_1", "weight_decay"):
        np.testing.assert_allclose(
            [row[name] for row in got], [row[name] for row in expected], rtol=1e-6, err_msg=name
        )


@pytest.mark.parametrize("backend", BACKENDS)
def test_log_hyperparameters_writes_every_step_under_fit(
    results: dict[str, Any], backend: str
) -> None:
    fit = results[backend]["fit"]
    expected = [(row["step"], row["learning_rate"]) for row in fit["traces"]]
    assert [step for step, _ in fit["logged"]] == [step for step, _ in expected]
    np.testing.assert_allclose(
        [v for _, v in fit["logged"]], [v for _, v in expected], rtol=1e-6, atol=0
    )


def test_traces_show_the_schedule_the_override_and_the_plateau(results: dict[str, Any]) -> None:
    """The traces compared above do change: warmup, a set/clear and a reduction."""
    rows = results["tensorflow"]["fit"]["traces"]
    lr = [row["learning_rate"] for row in rows]
    decay = [row["weight_decay"] for row in rows]
    assert lr[0] == 0.0 and lr[3] == pytest.approx(0.05)
    assert decay[5:9] == [pytest.approx(0.05)] * 4 and decay[9] == pytest.approx(0.01 * 9 / 12)
    # min_delta=10: epoch 1 improves on +inf, epoch 2 does not -> the lr halves at step 8
    cosine = 0.025 * (1 + np.cos(np.pi * (8 - 3) / 12))
    assert lr[8] == pytest.approx(0.5 * cosine, rel=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("how", ["fit", "loop", "step_optimizer"])
def test_weights_within_1e_5_of_tensorflow_fit(
    results: dict[str, Any], backend: str, how: str
) -> None:
    reference = "step_optimizer" if how == "step_optimizer" else "fit"
    expected = results["tensorflow"][reference]["weights"]
    got = results[backend][how]["weights"]
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, atol=1e-5, rtol=0)
    initial = np.random.default_rng(3)  # the weights moved: the comparison is not vacuous
    assert not np.allclose(got[0], initial.normal(size=(3, 4)).ravel(), atol=1e-3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_clock_counts_every_update(results: dict[str, Any], backend: str) -> None:
    assert results[backend]["fit"]["saved"]["step"] == 12
    assert results[backend]["loop"]["plateau"]["step"] == 12
    assert results[backend]["step_optimizer"]["step"] == 12


@pytest.mark.parametrize("backend", BACKENDS)
def test_plateau_state_survives_keras_save_and_load(results: dict[str, Any], backend: str) -> None:
    fit = results[backend]["fit"]
    assert fit["loaded"] == fit["saved"]
    assert fit["saved"]["reductions"] >= 1 and fit["saved"]["scale"] < 1.0
    reference = results["tensorflow"]["fit"]["saved"]
    assert {**fit["saved"], "best": None} == {**reference, "best": None}
    assert fit["saved"]["best"] == pytest.approx(reference["best"], rel=1e-5)  # a loss


@pytest.mark.parametrize("backend", BACKENDS)
def test_custom_loop_plateau_matches_fit(results: dict[str, Any], backend: str) -> None:
    loop, fit = results[backend]["loop"]["plateau"], results[backend]["fit"]["saved"]
    assert {k: loop[k] for k in ("wait", "reductions", "scale", "step")} == {
        k: fit[k] for k in ("wait", "reductions", "scale", "step")
    }
    assert loop["best"] == pytest.approx(fit["best"], rel=1e-5)


@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_compiled_step_traced_once_across_run_time_changes(
    results: dict[str, Any], backend: str
) -> None:
    # 12 steps with a warmup, an override set and cleared and a plateau reduction
    assert results[backend]["loop"]["traced"] == 1


@pytest.mark.parametrize("backend", OTHERS)
def test_tensorflow_only_features_raise_one_backend_error(
    results: dict[str, Any], backend: str
) -> None:
    found = results[backend]["tensorflow_only"]
    assert len([name for name in found if name.startswith("examples/")]) == 3
    for feature, message in found.items():
        assert message.startswith("hyperstep.errors.BackendError: "), (feature, message)
        assert "needs the TensorFlow backend" in message, (feature, message)
        assert f"running on '{backend}'" in message, (feature, message)
        assert "KERAS_BACKEND=tensorflow" in message, (feature, message)


@pytest.mark.backend("jax")
def test_jax_jit_read_outside_the_traced_state_raises_instead_of_freezing(
    results: dict[str, Any],
) -> None:
    """Read inside ``jax.jit`` with its variables not in the traced stateless state, a
    hyperparameter would stay at its traced value: it raises, naming what is missing."""
    found = results["jax"]["jit_reads"]
    for case, missing in [
        # every variable the step reads, the dormant cooldown's included
        (
            "unmapped",
            "(clock/step, kl_beta/scale, kl_beta/override, kl_beta/cooldown_start, "
            "kl_beta/cooldown_form)",
        ),
        (
            "step_only",
            "(kl_beta/scale, kl_beta/override, kl_beta/cooldown_start, kl_beta/cooldown_form)",
        ),
    ]:
        assert found[case].startswith("hyperstep.errors.FrozenValueError: Hyperparameter 'kl_beta'")
        assert missing in found[case] and "StatelessScope(state_mapping=" in found[case]
    # mapped, the value follows the state passed in (step 3, then 7: step / 10)
    assert found["mapped"] == repr(float(np.float32(0.3)))
    assert found["mapped_at_step_7"] == repr(float(np.float32(0.7)))
    assert found["grad_eagerly"] == repr(float(np.float32(0.3)))  # traced, not compiled


@pytest.mark.parametrize("backend", BACKENDS)
def test_plateau_reduction_of_the_main_rate_reaches_a_relative_group(
    results: dict[str, Any], backend: str
) -> None:
    found = results[backend]["relative_group"]
    main, used = np.array(found["main"]), np.array(found["used"])
    # each update moved the bias by the group's rate: 10 x the main rate read before it
    # (on torch, Keras's `_parallel_update_step` once ignored every group's learning rate)
    np.testing.assert_allclose(used, 10 * main, rtol=1e-5)
    # ... and the main rate was halved by the plateau (no epoch after the first improves)
    assert found["reductions"] == 2
    epoch = np.arange(len(main)) // (len(main) // 3)
    halved = np.float32(0.5) ** np.maximum(0, epoch - 1)
    # (one float32 ulp: the schedule is evaluated as a vector here, as a scalar in fit)
    np.testing.assert_allclose(main, np.float32(found["schedule"]) * halved, rtol=1e-6)
    assert found["loaded_group"] == "10.0 * learning_rate"
    assert found["loaded_value"] == np.float32(10) * np.float32(0.02)


@pytest.mark.backend("tensorflow", "jax", "torch")
def test_float64_scope_gives_float64_ops_also_in_a_compiled_jax_step() -> None:
    # the lengths of `total` rely on it: 0.9 * 1237 as Python folds it, on JAX without x64 too
    import keras

    from hyperstep.backends import float64_scope

    def length(total: Any) -> Any:
        with float64_scope():
            nine_tenths = keras.ops.convert_to_tensor(0.9, "float64")
            wide = keras.ops.multiply(keras.ops.cast(total, "float64"), nine_tenths)
            return keras.ops.cast(wide, "float32"), keras.backend.standardize_dtype(wide.dtype)

    value, dtype = length(np.int32(1237))
    assert (float(value), dtype) == (float(np.float32(0.9 * 1237)), "float64")
    assert float(np.float32(0.9) * np.float32(1237)) != float(np.float32(0.9 * 1237))
    if keras.backend.backend() == "jax":
        import jax

        compiled = jax.jit(lambda t: length(t)[0])(np.int32(1237))
        assert float(compiled) == float(np.float32(0.9 * 1237))
