"""hs.Remote in one process: each command, the journal, refusals, ordering, replay, resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.control.directory import command_path, submit


def make(tmp_path: Path, schedule: str = "0.1 * (1 - step / 100)") -> tuple:
    lr = hs.Hyperparameter(schedule, name="learning_rate")
    beta = hs.Hyperparameter(0.9, clock=lr.clock, name="beta")
    remote = hs.Remote(tmp_path / "run", [lr, beta])
    return lr, beta, remote


def value(hp: hs.Hyperparameter) -> float:
    return float(keras.ops.convert_to_numpy(hp.value))


def entries(remote: hs.Remote) -> list[dict]:
    lines = (remote.directory / "journal.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


class Holder(keras.Model):
    """A model holding a free hyperparameter: saved with its weights."""

    def __init__(self, lr: hs.Hyperparameter) -> None:
        super().__init__()
        self.lr = lr
        self.dense = keras.layers.Dense(1)

    def call(self, x):  # type: ignore[no-untyped-def]
        return self.dense(x)


def build(schedule: object = "0.1 * (1 - step / 100)") -> tuple:
    lr = hs.Hyperparameter(schedule, name="learning_rate")
    holder = Holder(lr)
    holder(np.ones((1, 1), "float32"))
    return lr, holder


def test_commands_apply_at_the_next_poll_in_order_and_are_journaled(tmp_path: Path) -> None:
    lr, beta, remote = make(tmp_path)
    assert remote.poll() == []
    submit(remote.directory, {"verb": "set", "values": {"learning_rate": 0.5}})
    submit(remote.directory, {"verb": "scale", "values": {"beta": 0.5}})
    assert value(lr) == pytest.approx(0.1)  # nothing before the poll
    applied = remote.poll()
    assert [(e["seq"], e["status"], e["step"]) for e in applied] == [
        (1, "applied", 0),
        (2, "applied", 0),
    ]
    assert applied[0]["before"] == {"learning_rate": pytest.approx(0.1)}
    assert applied[0]["after"] == {"learning_rate": 0.5}
    assert value(lr) == 0.5 and value(beta) == pytest.approx(0.45)
    for _ in range(10):
        lr.clock.advance()
    submit(remote.directory, {"verb": "clear", "names": ["learning_rate"]})
    [cleared] = remote.poll()
    assert cleared["step"] == 10 and value(lr) == pytest.approx(0.09)
    assert [e["seq"] for e in entries(remote) if "seq" in e] == [1, 2, 3]
    assert remote.poll() == []  # applied once


def test_malformed_partial_and_unsafe_commands_are_refused_and_the_next_one_applies(
    tmp_path: Path,
) -> None:
    lr, _, remote = make(tmp_path)
    remote.poll()
    bad = [
        b'{"verb": "set", "values": {"learning_rate": 0.',  # partial
        b"[1, 2]",
        b'{"verb": "explode"}',
        b'{"verb": "set", "values": {"learning_rat": 0.1}}',
        b'{"verb": "set", "values": {"learning_rate": 1e39}}',
        b'{"verb": "set", "values": {"learning_rate": NaN}}',
        b'{"verb": "set", "values": {"learning_rate": "__import__(\'os\')"}}',
        b'{"verb": "schedule", "values": {"learning_rate": "__import__(\'os\').system(\'x\')"}}',
        b'{"verb": "set", "values": {"learning_rate": 0.1}, "at": -3}',
        b"\xff\xfe",
    ]
    for seq, data in enumerate(bad, start=1):
        command_path(remote.directory, seq).write_bytes(data)
    submit(remote.directory, {"verb": "set", "values": {"learning_rate": 0.25}})
    found = remote.poll()
    assert [e["status"] for e in found] == ["refused"] * len(bad) + ["applied"]
    reasons = [e["reason"] for e in found[: len(bad)]]
    assert "not valid JSON" in reasons[0] and "JSON object" in reasons[1]
    assert "unknown verb" in reasons[2] and "did you mean 'learning_rate'" in reasons[3]
    assert "float32's range" in reasons[4] and "float32's range" in reasons[5]
    assert "float32's range" in reasons[6] and "is not allowed" in reasons[7]
    assert "at must be a step" in reasons[8]
    assert all("\n" not in r for r in reasons)  # one line each
    assert value(lr) == 0.25


def test_a_directory_writable_by_others_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    lr = hs.Hyperparameter(0.1, name="learning_rate")
    with pytest.raises(hs.errors.InvalidArgumentError, match=r"writable by others.*chmod go-w"):
        hs.Remote(shared, lr)
    done = subprocess.run(
        [sys.executable, "-m", "hyperstep", "set", str(shared), "learning_rate=1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "writable by others" in done.stderr
    assert not (shared / "commands").exists()


def test_concurrent_cli_invocations_are_all_applied_once_in_order(tmp_path: Path) -> None:
    lr, _, remote = make(tmp_path)
    remote.poll()
    factors = [1.0 + k / 8 for k in range(8)]
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hyperstep",
                "scale",
                str(remote.directory),
                f"learning_rate={f}",
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for f in factors
    ]
    outputs = [p.communicate()[0] for p in processes]
    assert all(p.returncode == 0 for p in processes)
    numbers = sorted(int(out.split()[1]) for out in outputs)
    assert numbers == list(range(1, 9))
    applied = remote.poll()
    assert [e["seq"] for e in applied] == list(range(1, 9))
    by_seq = {e["seq"]: e["command"]["values"]["learning_rate"] for e in applied}
    last = by_seq[8]
    assert float(keras.ops.convert_to_numpy(lr.scale)) == np.float32(last)
    assert sorted(by_seq.values()) == factors
    assert remote.poll() == []


def test_the_cli_writes_commands_without_importing_keras(tmp_path: Path) -> None:
    _, _, remote = make(tmp_path)
    remote.poll()
    code = (
        "import sys; from hyperstep.cli.main import main; "
        f"assert main(['set', {str(remote.directory)!r}, 'learning_rate=1e-3', '--at', '5']) == 0; "
        f"assert main(['cooldown', {str(remote.directory)!r}, 'learning_rate', '--steps', '5', "
        "'--shape', 'linear', '--at', '9']) == 0; "
        f"assert main(['show', {str(remote.directory)!r}]) == 0; "
        "assert 'keras' not in sys.modules and 'tensorflow' not in sys.modules, 'imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "learning_rate" in done.stdout


def test_at_waits_for_its_step_and_a_past_step_is_refused(tmp_path: Path) -> None:
    lr, _, remote = make(tmp_path)
    remote.poll()
    submit(
        remote.directory, {"verb": "set", "values": {"learning_rate": 0.0}, "at": 3, "force": True}
    )
    [pending] = remote.poll()
    assert pending["status"] == "pending"
    steps = []
    for step in range(5):
        for entry in remote.poll():
            steps.append((step, entry["status"], entry["step"]))
        lr.clock.advance()
    assert steps == [(3, "applied", 3)]
    submit(remote.directory, {"verb": "clear", "names": ["learning_rate"], "at": 1})
    [late] = remote.poll()
    assert late["status"] == "refused" and "step 1 has passed" in late["reason"]


def test_cooldown_starts_the_hyperparameters_cooldown_or_is_refused(tmp_path: Path) -> None:
    lr, _beta, remote = make(tmp_path)
    cooldown = hs.Cooldown(lr, steps=10, shape="linear")
    remote.poll()
    submit(remote.directory, {"verb": "cooldown", "names": ["beta"]})
    submit(remote.directory, {"verb": "cooldown", "steps": 20})
    for _ in range(4):
        lr.clock.advance()
    submit(remote.directory, {"verb": "cooldown"})
    found = remote.poll()
    assert [e["status"] for e in found] == ["refused", "refused", "applied"]
    assert "no hs.Cooldown" in found[0]["reason"] and "steps=10" in found[1]["reason"]
    assert cooldown.start_step == 4
    assert found[2]["cooldown"]["learning_rate"]["start"] == 4


def test_replay_reproduces_every_value_of_a_controlled_custom_loop(tmp_path: Path) -> None:
    lr, beta, remote = make(tmp_path)
    hs.Cooldown(lr, steps=8, shape="1-sqrt")
    plan = {
        3: {"verb": "set", "values": {"learning_rate": 0.0123}},
        7: {"verb": "scale", "values": {"learning_rate": 0.3, "beta": 0.7}},
        9: {"verb": "clear", "names": ["learning_rate"]},
        12: {"verb": "schedule", "values": {"learning_rate": "0.2 * 0.97 ** step"}},
        15: {"verb": "set", "values": {"beta": 0.123}},
        20: {"verb": "cooldown", "names": ["learning_rate"]},
    }
    seen = {"learning_rate": [], "beta": []}
    for step in range(40):
        if step in plan:
            submit(remote.directory, plan[step])
        remote.poll()
        seen["learning_rate"].append(np.float32(value(lr)))
        seen["beta"].append(np.float32(value(beta)))
        lr.clock.advance()
    schedules = hs.Remote.replay(remote.directory / "journal.jsonl")
    assert sorted(schedules) == ["beta", "learning_rate"]
    for name, values in seen.items():
        # at each step as a run reads it (a vector of steps may take another pow kernel)
        replayed = [keras.ops.convert_to_numpy(schedules[name](step)) for step in range(40)]
        np.testing.assert_array_equal(np.array(replayed, "float32"), np.array(values, "float32"))
        assert hs.parse(repr(schedules[name])) is not None  # an expression hs.parse reads


def test_a_resumed_run_applies_each_command_once(tmp_path: Path) -> None:
    """Resume from a checkpoint taken after a command: not applied again; from one taken
    before it: applied again (the steps after the checkpoint are trained again)."""

    lr, holder = build(0.1)
    remote = hs.Remote(tmp_path / "run", lr)
    remote.poll()
    holder.save_weights(tmp_path / "before.weights.h5")
    submit(remote.directory, {"verb": "scale", "values": {"learning_rate": 0.5}})
    remote.poll()
    holder.save_weights(tmp_path / "after.weights.h5")
    remote.close()  # the run ends: the directory is free for the resumed ones

    for checkpoint, applied in (("after", 0), ("before", 1)):
        lr2, holder2 = build(0.1)
        again = hs.Remote(tmp_path / "run", lr2)
        holder2.load_weights(tmp_path / f"{checkpoint}.weights.h5")
        found = again.poll()
        again.close()
        assert len(found) == applied, checkpoint
        assert float(keras.ops.convert_to_numpy(lr2.scale)) == 0.5
    assert [e.get("applied") for e in entries(remote) if e.get("event") == "begin"] == [0, 1, 0]


def test_stop_ends_fit_after_the_step_and_nothing_retraces(tmp_path: Path) -> None:
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(opt, "mse")
    remote = hs.Remote(tmp_path / "run")
    traced = []

    class Send(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            step = int(keras.ops.convert_to_numpy(opt.iterations))
            traced.append(model.train_function)
            if step == 3:
                submit(remote.directory, {"verb": "set", "values": {"learning_rate": 0.2}})
                submit(remote.directory, {"verb": "scale", "values": {"learning_rate": 0.5}})
            if step == 5:
                submit(remote.directory, {"verb": "schedule", "values": {"learning_rate": "0.3"}})
            if step == 7:
                submit(remote.directory, {"verb": "stop"})

    x, y = np.ones((64, 2), "float32"), np.ones((64, 1), "float32")
    model.fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[remote, Send()])
    assert int(keras.ops.convert_to_numpy(opt.iterations)) == 8  # stopped after step 7
    found = [e for e in entries(remote) if "seq" in e]
    assert [(e["seq"], e["step"]) for e in found] == [(1, 3), (2, 3), (3, 5), (4, 7)]
    assert "schedules" in found[2]
    assert len(set(map(id, traced))) == 1  # set, scale, schedule: the same function
    status = json.loads((remote.directory / "status.json").read_text())
    assert status["state"] == "stopped" and status["step"] == 8
    assert status["hyperparameters"]["learning_rate"]["override"] == pytest.approx(0.2)


def test_a_replaced_schedule_is_driven_again_after_a_resume(tmp_path: Path) -> None:
    """The replacement lives in the Remote, not in variables: a run restored from a
    checkpoint taken after a `schedule` command follows the new schedule again."""

    new = "0.05 * 0.9 ** step"
    lr, holder = build()
    remote = hs.Remote(tmp_path / "run", lr)
    remote.poll()
    for _ in range(5):
        lr.clock.advance()
    submit(remote.directory, {"verb": "schedule", "values": {"learning_rate": new}})
    [entry] = remote.poll()
    assert entry["step"] == 5 and "schedules" in entry
    for _ in range(3):
        lr.clock.advance()
        remote.poll()
    assert value(lr) == pytest.approx(float(hs.parse(new)(8)), rel=1e-6)
    holder.save_weights(tmp_path / "ckpt.weights.h5")
    remote.close()

    lr2, holder2 = build()
    again = hs.Remote(tmp_path / "run", lr2)
    holder2.load_weights(tmp_path / "ckpt.weights.h5")
    lr2.clock.step.assign(8)
    assert again.poll() == []  # nothing applied twice
    for step in (9, 10):
        lr2.clock.advance()
        again.poll()
        assert value(lr2) == pytest.approx(float(hs.parse(new)(step)), rel=1e-6)
    assert "where(step < 5.0" in repr(lr2.schedule)  # the whole schedule, for eager reads


def test_a_resumed_run_re_applies_only_its_own_runs_commands(tmp_path: Path) -> None:
    """A resume re-applies from the journal what its own run applied, as replay reads it:
    not the schedule an earlier run of the directory replaced (it once re-applied every
    journaled command numbered up to the checkpoint's, whichever run applied it)."""

    first, _ = build()
    remote = hs.Remote(tmp_path / "run", first)
    remote.poll()
    submit(remote.directory, {"verb": "schedule", "values": {"learning_rate": "0.05"}})
    [entry] = remote.poll()
    assert entry["status"] == "applied" and repr(first.schedule) == "constant(0.05)"
    remote.close()

    lr, holder = build()  # a fresh run of the directory: run 2
    remote = hs.Remote(tmp_path / "run", lr)
    remote.poll()
    submit(remote.directory, {"verb": "scale", "values": {"learning_rate": 0.5}})
    [entry] = remote.poll()
    assert entry["status"] == "applied"
    holder.save_weights(tmp_path / "ckpt.weights.h5")
    remote.close()

    resumed, holder = build()
    again = hs.Remote(tmp_path / "run", resumed)
    holder.load_weights(tmp_path / "ckpt.weights.h5")
    assert again.poll() == []
    again.close()
    assert repr(resumed.schedule) == repr(hs.parse("0.1 * (1 - step / 100)"))
    assert value(resumed) == pytest.approx(0.05, rel=1e-6)  # its own schedule, scaled by 0.5
    begins = [e for e in entries(again) if e.get("event") == "begin"]
    assert [(e["run"], e["resumed"]) for e in begins] == [(1, False), (2, False), (2, True)]


def test_schedule_retraces_nothing_where_callbacks_run_between_executions(tmp_path: Path) -> None:
    """fit(steps_per_execution=2) runs batch callbacks only between executions: the
    Remote armed the hyperparameter with a table of 2 values before the step was traced, so
    the new schedule reaches both steps of an execution with the same train function."""
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(opt, "mse", steps_per_execution=2)
    remote = hs.Remote(tmp_path / "run")
    sent, functions = [], set()

    class Send(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            functions.add(id(model.train_function))
            if not sent:
                sent.append(
                    submit(
                        remote.directory, {"verb": "schedule", "values": {"learning_rate": "0.3"}}
                    )
                )

    x, y = np.ones((16, 2), "float32"), np.ones((16, 1), "float32")
    model.fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[remote, Send()])
    [found] = [e for e in entries(remote) if "seq" in e]
    assert found["status"] == "applied" and "schedules" in found
    assert found["driven"] == ["learning_rate"] and len(functions) == 1
    assert value(opt.hyperparameters["learning_rate"]) == pytest.approx(0.3)


@pytest.mark.backend("tensorflow", "jax", "torch")
@pytest.mark.parametrize(
    "plan",
    [
        {3: [("schedule", "0.02"), ("clear", None)]},  # one poll: the clear after it
        {3: [("schedule", "0.02")], 4: [("set", 0.5)], 5: [("clear", None)]},  # polls apart
    ],
    ids=["one-poll", "polls-apart"],
)
def test_a_clear_after_a_replaced_schedule_keeps_the_compiled_step_on_it(
    tmp_path: Path, plan: dict
) -> None:
    """A `clear` on a name whose replaced schedule is driven through the override (a traced
    step) drops only a `set`: the compiled step trains with the replaced schedule, as a
    fresh run with Keras's own piecewise schedule does (a stale record of the override last
    written once left it cleared: the old schedule trained)."""

    def train(opt: keras.optimizers.Optimizer, callbacks: list) -> list:
        keras.utils.set_random_seed(3)
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(opt, "mse")
        x = np.linspace(-1, 1, 32, dtype="float32").reshape(16, 2)
        model.fit(x, x[:, :1] ** 2, batch_size=2, shuffle=False, verbose=0, callbacks=callbacks)
        return model.get_weights()

    remote = hs.Remote(tmp_path / "run")

    class Send(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            for verb, value in plan.get(batch + 1, []):  # applied at the next step
                command = {"verb": verb, "names": ["learning_rate"]}
                if value is not None:
                    command = {"verb": verb, "values": {"learning_rate": value}}
                submit(remote.directory, command)

    controlled = train(hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1), [remote, Send()])
    applied = [e["step"] for e in entries(remote) if e.get("status") == "applied"]
    assert applied == [s for s, commands in plan.items() for _ in commands]
    # Keras's own: 0.1 up to step 2, then 0.02 (polls apart: 0.5 at step 4, set and cleared)
    piecewise = keras.optimizers.schedules.PiecewiseConstantDecay([2], [0.1, 0.02])
    if len(plan) > 1:
        piecewise = keras.optimizers.schedules.PiecewiseConstantDecay(
            [2, 3, 4], [0.1, 0.02, 0.5, 0.02]
        )
    reference = train(keras.optimizers.SGD(learning_rate=piecewise), [])
    for a, b in zip(controlled, reference, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=0)
