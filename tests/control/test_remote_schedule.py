"""``schedule`` replaces a schedule with no retrace and ``cooldown`` cools any hyperparameter.

The run (remote_schedule_worker.py) is steered from its own callback: ``schedule
learning_rate=cosine(...)``, ``cooldown weight_decay --steps 16`` (weight_decay had no
``hs.Cooldown``), ``scale learning_rate=0.5``. A fresh run built with the new schedule from
the journaled step and the cooldown started there has, at every step, the same values and
the same weights after every update, to the bit; the controlled run's train step was traced
no more often than the fresh run's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

SCRIPT = Path(__file__).with_name("remote_schedule_worker.py")


def check(result: dict[str, Any], backend: str) -> None:
    controlled, fresh = result["controlled"], result["fresh"]
    s1, s2, s3 = result["steps"]
    assert (s1, s2, s3) == (10, 20, 30)  # the update after each submission
    assert result["schedule_entries"] == [True, False, False]
    rows, again = np.array(controlled["rows"]), np.array(fresh["rows"])
    lr = controlled["names"].index("learning_rate")
    wd = controlled["names"].index("weight_decay")
    # the new schedule from s1 (not the old one), weight decay cooled from s2 to 0 in 16 steps
    assert rows[s1, lr] != rows[s1 - 1, lr] and rows[s1, lr] > 0.015
    assert rows[s2 - 1, wd] > 0.02 and rows[s2 + 16, wd] == 0.0
    # read eagerly here; an eager read of the fresh run's schedule may round a cosine
    # differently from the step's own (graph) kernels, which the weights show exactly
    np.testing.assert_allclose(rows, again, rtol=1e-6, atol=0)
    # every update used the same values as the fresh run's, to the bit
    np.testing.assert_array_equal(np.array(controlled["weights"]), np.array(fresh["weights"]))
    assert controlled["functions"] == fresh["functions"] == 1  # one train function throughout
    if backend != "torch":  # eager torch runs the step's Python every step
        assert controlled["traces"] == fresh["traces"]  # the commands traced nothing again


def test_schedule_and_cooldown_commands_in_tensorflow_fit_match_a_fresh_run() -> None:
    import keras

    if keras.backend.backend() != "tensorflow":
        pytest.skip("the in-process run is the TensorFlow one")
    spec = importlib.util.spec_from_file_location("hs_remote_schedule_worker", SCRIPT)
    assert spec is not None and spec.loader is not None
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    check(worker.compare(), "tensorflow")


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_schedule_and_cooldown_commands_match_a_fresh_run_on(backend: str) -> None:
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, check=False
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    check(json.loads(lines[-1].removeprefix("RESULT ")), backend)


def _float64_run(given: dict[str, str], plan: dict[int, dict[str, Any]], directory: Any) -> Any:
    """AdamW (hs.scheduled) for 24 steps under fit, steered by ``plan`` {step: command}."""
    import keras

    import hyperstep as hs
    from hyperstep.control.directory import submit

    keras.utils.set_random_seed(5)

    class Counting(keras.Sequential):
        traces = 0

        def train_step(self, *args: Any, **kwargs: Any) -> Any:
            self.traces += 1
            return super().train_step(*args, **kwargs)

    model = Counting(
        [keras.Input((3,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)]
    )
    opt = hs.scheduled(keras.optimizers.AdamW(), **given)
    model.compile(opt, "mse")
    callbacks: list[Any] = []
    if directory is not None:
        remote = hs.Remote(directory)

        class Steer(keras.callbacks.Callback):
            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                # the updates done (one fit from step 0; on JAX, reading the optimizer's
                # variables from a batch callback is not possible in Keras's own fit)
                if batch + 1 in plan:
                    submit(remote.directory, plan[batch + 1])

        callbacks = [remote, Steer()]
    x = np.linspace(-1, 1, 24 * 4 * 3, dtype="float32").reshape(24 * 4, 3)
    y = (np.sin(3 * x[:, :1]) + x[:, 1:2] * x[:, 2:3]).astype("float32")
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=callbacks)
    return np.concatenate([np.ravel(w) for w in model.get_weights()]), model.traces


@pytest.mark.backend("tensorflow", "jax", "torch")
@pytest.mark.parametrize(  # a scheduled beta_1 in `make test-slow`
    "beta_1", ["0.9", pytest.param("linear(0.85, 0.95, steps=100)", marks=pytest.mark.slow)]
)
def test_replay_of_python_number_hyperparameters_is_bitwise_the_controlled_run(
    beta_1: str, tmp_path: Path
) -> None:
    # Keras computes `1 - beta_1` with a Python number: on TensorFlow hyperstep hands it
    # beta_1 in float64, on JAX a StaticScalar whose constant rounds as its Python float,
    # on eager torch a Python number. A replayed schedule must give those very numbers: a
    # constant's (beta_1 = 0.9, beta_2 = 0.999) before a command changed it included (a
    # `where` piece, exact as the constant), a scale's product, and a replaced schedule the
    # float32 number the override held
    import hyperstep as hs

    plan = {
        4: {"verb": "scale", "values": {"beta_1": 0.7, "weight_decay": 0.3}},
        8: {"verb": "schedule", "values": {"beta_1": "linear(0.8, 0.95, steps=50)"}},
        12: {"verb": "schedule", "values": {"weight_decay": "0.03", "beta_2": "0.995"}},
        16: {"verb": "scale", "values": {"beta_2": 0.999}},
    }
    given = {"learning_rate": "0.01", "beta_1": beta_1}
    controlled, traces = _float64_run(given, plan, tmp_path / "run")
    lines = (tmp_path / "run" / "journal.jsonl").read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    applied = [e for e in entries if e.get("status") == "applied"]
    assert [e["step"] for e in applied] == [4, 8, 12, 16]
    assert ["schedules" in e for e in applied] == [False, True, True, False]
    schedules = hs.Remote.replay(tmp_path / "run" / "journal.jsonl")
    assert sorted(schedules) == ["beta_1", "beta_2", "weight_decay"]
    schedules = {n: hs.parse(repr(s)) for n, s in schedules.items()}  # as text, read back
    fresh, fresh_traces = _float64_run({**given, **schedules}, {}, None)
    np.testing.assert_array_equal(controlled, fresh)
    assert traces == fresh_traces  # no command traced the step again


def _executions_run(
    given: dict[str, Any], plan: dict[int, dict[str, Any]], directory: Any, span: int
) -> tuple[Any, int, int]:
    """AdamW (hs.scheduled) for 24 steps under fit(steps_per_execution=span), steered by
    ``plan`` {step: command} (submitted after the execution ending at that step); returns the
    weights, the train step's traces and how many train functions fit called."""
    import keras

    import hyperstep as hs
    from hyperstep.control.directory import submit

    keras.utils.set_random_seed(5)

    class Counting(keras.Sequential):
        traces = 0

        def train_step(self, *args: Any, **kwargs: Any) -> Any:
            self.traces += 1  # a Python side effect: once per trace
            return super().train_step(*args, **kwargs)

    model = Counting(
        [keras.Input((3,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)]
    )
    opt = hs.scheduled(keras.optimizers.AdamW(), **given)
    model.compile(opt, "mse", steps_per_execution=span)
    functions: set[int] = set()

    class Steer(keras.callbacks.Callback):
        executions = 0

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            functions.add(id(model.train_function))
            # the steps done: one call per execution (Keras's `batch` here is the execution's
            # last batch since 3.11, its first before)
            self.executions += 1
            step = self.executions * span
            if step in plan:
                submit(remote.directory, plan[step])

    callbacks: list[Any] = [Steer()]
    if directory is not None:
        remote = hs.Remote(directory)
        callbacks = [remote, *callbacks]
    x = np.linspace(-1, 1, 24 * 4 * 3, dtype="float32").reshape(24 * 4, 3)
    y = (np.sin(3 * x[:, :1]) + x[:, 1:2] * x[:, 2:3]).astype("float32")
    model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=callbacks)
    weights = np.concatenate([np.ravel(w) for w in model.get_weights()])
    return weights, model.traces, len(functions)


@pytest.mark.backend("tensorflow", "jax")
def test_schedule_under_steps_per_execution_retraces_nothing_and_replays_bitwise(
    tmp_path: Path,
) -> None:
    # callbacks run only between executions of 4 steps: the Remote armed each name with a
    # table of 4 values before the step was traced, and writes it at every boundary
    import keras

    import hyperstep as hs

    plan = {
        8: {
            "verb": "schedule",
            "values": {"learning_rate": "0.02 * 0.93 ** step", "beta_1": "linear(0.8, 0.95, 50)"},
        },
        12: {"verb": "scale", "values": {"learning_rate": 0.5}},
        16: {"verb": "schedule", "values": {"weight_decay": "0.03 * (1 - step / 40)"}},
    }
    # schedules from the start: on JAX a constant's `1 - beta_1` rounds like Keras's Python
    # float (hyperstep.backends.static), which a replayed `where` of it does not
    given = {
        "learning_rate": "0.01 * (1 - step / 100)",
        "beta_1": "linear(0.85, 0.95, steps=100)",
        "weight_decay": "0.004 * (1 - step / 200)",
    }
    controlled, traces, functions = _executions_run(given, plan, tmp_path / "run", 4)
    lines = (tmp_path / "run" / "journal.jsonl").read_text().splitlines()
    applied = [e for e in map(json.loads, lines) if e.get("status") == "applied"]
    assert [e["step"] for e in applied] == [8, 12, 16]
    assert ["schedules" in e for e in applied] == [True, False, True]
    assert applied[0]["driven"] == ["beta_1", "learning_rate"]
    schedules = {n: hs.parse(repr(s)) for n, s in hs.Remote.replay(lines_path(tmp_path)).items()}
    assert sorted(schedules) == ["beta_1", "learning_rate", "weight_decay"]
    fresh, fresh_traces, fresh_functions = _executions_run({**given, **schedules}, {}, None, 4)
    # the new values reached the steps inside each execution, not only its first
    unsteered, _, _ = _executions_run(given, {}, None, 4)
    assert not np.array_equal(controlled, unsteered)
    np.testing.assert_array_equal(controlled, fresh)
    assert functions == fresh_functions == 1  # fit called one train function throughout
    assert traces == fresh_traces  # no command traced the step again
    assert keras.backend.backend() in ("tensorflow", "jax")


def lines_path(tmp_path: Path) -> Path:
    return tmp_path / "run" / "journal.jsonl"


@pytest.mark.slow
@pytest.mark.backend("tensorflow", "jax", "torch")
def test_replay_of_a_cooldown_of_every_shape_is_bitwise(tmp_path: Path) -> None:
    # cooldowns of 10 steps (a divisor with no exact reciprocal: in a TensorFlow graph
    # constant folding turns the replayed word's `x / 10` into a multiply), one shape per
    # name: beta_1, beta_2 and weight_decay reach Keras in float64 on TensorFlow, as Python
    # numbers on eager torch, the learning rate as a float32 tensor. The run's cooldown, read
    # from its variables, and the replayed `cooldown(...)` word must give the same numbers
    import hyperstep as hs

    def cool(name: str, shape: str) -> dict[str, Any]:
        return {"verb": "cooldown", "names": [name], "steps": 10, "shape": shape}

    plan = {
        4: {"verb": "scale", "values": {"weight_decay": 0.5}},
        6: cool("beta_1", "cosine"),
        8: cool("weight_decay", "exponential"),
        9: cool("beta_2", "linear"),
        10: cool("learning_rate", "1-sqrt"),
    }
    given = {
        "learning_rate": "0.01",
        "beta_1": "linear(0.85, 0.95, steps=100)",
        "beta_2": "linear(0.99, 0.999, steps=100)",
    }
    controlled, traces = _float64_run(given, plan, tmp_path / "run")
    lines = (tmp_path / "run" / "journal.jsonl").read_text().splitlines()
    applied = [e for e in map(json.loads, lines) if e.get("status") == "applied"]
    assert [e["step"] for e in applied] == [4, 6, 8, 9, 10]
    assert applied[2]["cooldown"]["weight_decay"] == {
        "start": 8,
        "steps": 10,
        "shape": "exponential",
        "end": 0.0,
    }
    schedules = hs.Remote.replay(tmp_path / "run" / "journal.jsonl")
    assert sorted(schedules) == ["beta_1", "beta_2", "learning_rate", "weight_decay"]
    assert "cooldown(" in repr(schedules["beta_1"])
    schedules = {n: hs.parse(repr(s)) for n, s in schedules.items()}  # as text, read back
    fresh, fresh_traces = _float64_run({**given, **schedules}, {}, None)
    uncooled, _ = _float64_run(given, {4: plan[4]}, tmp_path / "other")
    assert not np.array_equal(controlled, uncooled)  # the cooldowns changed the updates
    np.testing.assert_array_equal(controlled, fresh)
    assert traces == fresh_traces


@pytest.mark.backend("torch")
def test_replay_of_a_scaled_python_number_hyperparameter_on_eager_torch_is_bitwise(
    tmp_path: Path,
) -> None:
    # eager torch hands Keras beta_1 and beta_2 as Python numbers (the host table): a scale
    # command's product, replayed as `schedule * scale`, must give the very same floats
    import keras

    import hyperstep as hs
    from hyperstep.backends.keras_forms import row

    assert {"beta_1", "beta_2"} <= row(keras.optimizers.AdamW).torch_numbers
    plan = {
        4: {"verb": "scale", "values": {"beta_1": 0.7, "beta_2": 0.9993}},
        12: {"verb": "scale", "values": {"beta_1": 1.05}},
    }
    # schedules from the start (constants changed by commands: the test above)
    given = {
        "learning_rate": "0.01",
        "beta_1": "linear(0.85, 0.9, steps=100)",
        "beta_2": "linear(0.99, 0.999, steps=100)",
    }
    controlled, _ = _float64_run(given, plan, tmp_path / "run")
    schedules = hs.Remote.replay(tmp_path / "run" / "journal.jsonl")
    assert sorted(schedules) == ["beta_1", "beta_2"]
    schedules = {n: hs.parse(repr(s)) for n, s in schedules.items()}  # as text, read back
    fresh, _ = _float64_run({**given, **schedules}, {}, None)
    unscaled, _ = _float64_run(given, {}, None)
    assert not np.array_equal(controlled, unscaled)  # the scales changed the updates
    np.testing.assert_array_equal(controlled, fresh)


def _compiled_run(
    given: dict[str, Any], plan: dict[int, dict[str, Any]], directory: Any, jit: bool
) -> tuple[Any, list[int]]:
    """AdamW (hs.scheduled) for 12 steps under fit(jit_compile=jit) on torch (dynamo's
    ``eager`` backend: its tracing and recompiles, no code generation), steered by ``plan``;
    returns the weights and dynamo's frame count after each step."""
    import keras
    import torch
    from torch._dynamo.utils import counters

    import hyperstep as hs
    from hyperstep.control.directory import submit

    torch._dynamo.reset()
    counters.clear()
    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    opt = hs.scheduled(keras.optimizers.AdamW(), **given)
    model.compile(opt, "mse", jit_compile=jit)
    frames: list[int] = []

    class Steer(keras.callbacks.Callback):
        executions = 0

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            frames.append(int(counters["frames"]["total"]))
            if batch + 1 in plan:
                submit(remote.directory, plan[batch + 1])

    callbacks: list[Any] = [Steer()]
    if directory is not None:
        remote = hs.Remote(directory)
        callbacks = [remote, *callbacks]
    x = np.linspace(-1, 1, 12 * 4 * 3, dtype="float32").reshape(12 * 4, 3)
    y = (np.sin(3 * x[:, :1]) + x[:, 1:2] * x[:, 2:3]).astype("float32")
    original = torch.compile
    torch.compile = lambda fn, **kw: original(fn, **{"backend": "eager", **kw})
    try:
        model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=callbacks)
    finally:
        torch.compile = original
    return np.concatenate([np.ravel(w) for w in model.get_weights()]), frames


@pytest.mark.slow
@pytest.mark.backend("torch")
def test_commands_under_torch_compile_reach_the_compiled_step_without_a_recompile(
    tmp_path: Path,
) -> None:
    # jit_compile=True: the step is traced, so a replaced schedule is driven through the
    # override (a tensor the compiled step reads), as on TensorFlow and JAX
    import hyperstep as hs

    plan = {
        4: {"verb": "schedule", "values": {"learning_rate": "0.02 * 0.9 ** step"}},
        8: {"verb": "scale", "values": {"beta_1": 0.8}},
    }
    given = {"learning_rate": "0.01 * (1 - step / 100)", "beta_1": "linear(0.85, 0.9, 100)"}
    controlled, frames = _compiled_run(given, plan, tmp_path / "run", True)
    lines = (tmp_path / "run" / "journal.jsonl").read_text().splitlines()
    applied = [e for e in map(json.loads, lines) if e.get("status") == "applied"]
    assert [e["step"] for e in applied] == [4, 8]
    assert applied[0]["driven"] == ["learning_rate"] and "schedules" in applied[0]
    schedules = {n: hs.parse(repr(s)) for n, s in hs.Remote.replay(lines_path(tmp_path)).items()}
    fresh, fresh_frames = _compiled_run({**given, **schedules}, {}, None, True)
    # measured: dynamo compiles one frame more than the fresh run by step 2 and one more
    # when the first command is applied (the override leaves nan), then nothing: the
    # scale command and every later step reuse the compiled frames
    assert frames[-1] == frames[4] and frames[-1] - fresh_frames[-1] <= 2
    unsteered, _ = _compiled_run(given, {}, None, True)
    assert not np.array_equal(controlled, unsteered)
    np.testing.assert_array_equal(controlled, fresh)  # the replay, compiled, to the bit
    # eager torch hands Keras Python numbers (host_float) where the compiled step has float32
    # tensors: the same commands give weights a few float32 ulp apart, not the same bits
    eager, _ = _compiled_run(given, plan, tmp_path / "eager", False)
    np.testing.assert_allclose(controlled, eager, rtol=1e-5, atol=1e-8)


@pytest.mark.slow
@pytest.mark.backend("tensorflow", "jax")
def test_a_remote_joining_a_later_fit_through_a_loss_scale_optimizer_drives_the_table(
    tmp_path: Path,
) -> None:
    # the first fit traced the step without a Remote; the second fit's Remote arms the
    # hyperparameters behind keras's LossScaleOptimizer and the step is made again, so a
    # `schedule` command (a learning rate of 0 from step 16) stops the weights there: they
    # end bitwise those of a run that stopped at step 16
    import keras

    import hyperstep as hs
    from hyperstep.control.directory import submit

    x = np.linspace(-1, 1, 32 * 3, dtype="float32").reshape(32, 3)
    y = np.sin(3 * x[:, :1]).astype("float32")

    def trained(second: int, callbacks: list[Any]) -> np.ndarray:
        keras.utils.set_random_seed(3)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
        inner = hs.scheduled(keras.optimizers.AdamW(), learning_rate="0.01 * (1 - step / 400)")
        model.compile(keras.optimizers.LossScaleOptimizer(inner), "mse", steps_per_execution=4)
        model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)  # steps 1-8
        more = np.concatenate([x] * second), np.concatenate([y] * second)
        model.fit(*more, batch_size=4, epochs=1, shuffle=False, verbose=0, callbacks=callbacks)
        return np.concatenate([np.ravel(w) for w in model.get_weights()])

    stopped = trained(1, [])  # steps 9-16
    remote = hs.Remote(tmp_path / "run")
    command = {"verb": "schedule", "values": {"learning_rate": "0"}, "at": 16, "queued": True}
    command["force"] = True  # a learning rate of 0: refused unless forced
    submit(remote.directory, command)  # sent before the run: queued for it
    steered = trained(2, [remote])  # steps 9-24, a rate of 0 from step 16's update on
    lines = (tmp_path / "run" / "journal.jsonl").read_text().splitlines()
    applied = [e for e in map(json.loads, lines) if e.get("status") == "applied"]
    assert [(e["command"]["verb"], e["step"], "schedules" in e) for e in applied] == [
        ("schedule", 16, True)
    ]
    np.testing.assert_array_equal(steered, stopped)


@pytest.mark.slow
def test_a_tf_checkpoint_of_an_armed_run_resumes_bitwise_with_its_command_applied_once(
    tmp_path: Path,
) -> None:
    # steps_per_execution=4: the Remote armed each hyperparameter with a table (not saved);
    # a tf.train.Checkpoint after epoch 1 holds the command's number (`remote_applied`), so
    # fresh objects restored from it, steered by a new Remote on the same directory, do not
    # apply it again but drive the replaced schedule from the journal: bitwise the
    # uninterrupted run at the end of epoch 2
    import keras
    import tensorflow as tf

    import hyperstep as hs
    from hyperstep.control.directory import submit

    x = np.linspace(-1, 1, 48 * 3, dtype="float32").reshape(48, 3)
    y = (np.sin(3 * x[:, :1]) + x[:, 1:2] * x[:, 2:3]).astype("float32")

    def build() -> tuple[Any, Any]:
        keras.utils.set_random_seed(5)
        model = keras.Sequential(
            [keras.Input((3,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)]
        )
        opt = hs.scheduled(keras.optimizers.AdamW(), learning_rate="0.01 * (1 - step / 100)")
        model.compile(opt, "mse", steps_per_execution=4)
        return model, opt

    def fit(model: Any, epochs: int, initial: int, callbacks: list[Any]) -> Any:
        model.fit(
            x, y, batch_size=4, epochs=epochs, initial_epoch=initial, shuffle=False, verbose=0,
            callbacks=callbacks,
        )  # fmt: skip
        return np.concatenate([np.ravel(w) for w in model.get_weights()])

    class Steer(keras.callbacks.Callback):
        executions = 0

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self.executions += 1
            if self.executions * 4 == 8:
                submit(remote.directory, {"verb": "schedule", "values": {"learning_rate": "0.02"}})

    model, opt = build()
    remote = hs.Remote(tmp_path / "run")
    fit(model, 1, 0, [remote, Steer()])
    path = tf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "ck" / "c"))
    saved = [name for name, _ in tf.train.list_variables(path)]
    assert any("remote_applied" in name for name in saved)
    assert not any("driven" in name for name in saved)  # the armed tables are not saved
    uninterrupted = fit(model, 2, 1, [remote])

    resumed_model, resumed_opt = build()
    resumed_opt.build(resumed_model.trainable_variables)
    status = tf.train.Checkpoint(model=resumed_model, optimizer=resumed_opt).restore(path)
    status.assert_existing_objects_matched()
    resumed = fit(resumed_model, 2, 1, [hs.Remote(tmp_path / "run")])
    unsteered_model, _ = build()
    unsteered = fit(unsteered_model, 2, 0, [])

    lines = (tmp_path / "run" / "journal.jsonl").read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    assert [e["step"] for e in entries if e.get("status") == "applied"] == [8]  # once
    # the resumed Remote's begin: the restored checkpoint held command 1 applied
    assert [e["applied"] for e in entries if e.get("event") == "begin"] == [0, 1]
    assert not np.array_equal(uninterrupted, unsteered)  # the command changed the run
    np.testing.assert_array_equal(resumed, uninterrupted)


@pytest.mark.backend("tensorflow", "jax", "torch")
def test_a_schedule_command_reads_the_live_run_s_total_as_the_number_written_by_hand(
    tmp_path: Path,
) -> None:
    # fit runs 24 steps, so `total - 4` is 20: the run steered with `total` trains, update by
    # update, as the run steered with the number, with no retrace; its replay follows `total`
    import hyperstep as hs
    from hyperstep.control.directory import read_status

    given = {"learning_rate": "0.01"}
    text = "warmup(cosine(0.02, steps=0.9 * (total - 4)), steps=total / 12)"
    by_hand = f"warmup(cosine(0.02, steps={0.9 * 20!r}), steps={24 / 12!r})"
    steered = {8: {"verb": "schedule", "values": {"learning_rate": text}}}
    controlled, traces = _float64_run(given, steered, tmp_path / "total")
    plan = {8: {"verb": "schedule", "values": {"learning_rate": by_hand}}}
    written, written_traces = _float64_run(given, plan, tmp_path / "number")
    np.testing.assert_array_equal(controlled, written)
    assert traces == written_traces
    assert read_status(tmp_path / "total")["total"] == 24
    schedules = hs.Remote.replay(tmp_path / "total" / "journal.jsonl")
    assert "total" in repr(schedules["learning_rate"])  # the run's length, read by the rerun
    fresh, _ = _float64_run({**given, **schedules}, {}, None)
    np.testing.assert_array_equal(controlled, fresh)
