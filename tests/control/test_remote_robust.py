"""hs.Remote never stops or hangs because of steering, and keeps one run per directory.

Every failure is triggered as a user or a neighbour would: raw files in ``DIR``, the CLI,
``rm -rf DIR``, a FIFO, a symbolic link, a second Remote. Training goes on, and every bad
command is a refused journal entry naming why.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import warnings
from pathlib import Path

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.backends.steering import MAX_AGREED
from hyperstep.cli.main import main as cli
from hyperstep.control.directory import check_directory, command_path, submit


def make(tmp_path: Path, schedule: object = "0.1 * (1 - step / 100)") -> tuple:
    lr = hs.Hyperparameter(schedule, name="learning_rate")
    remote = hs.Remote(tmp_path / "run", lr)
    remote.poll()
    return lr, remote


def value(hp: hs.Hyperparameter) -> float:
    return float(keras.ops.convert_to_numpy(hp.value))


def journal(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "journal.jsonl").read_text().splitlines()]


def commands(directory: Path) -> list[dict]:
    return [e for e in journal(directory) if "status" in e]


def test_huge_integers_deep_json_and_huge_steps_are_refused_and_training_goes_on(
    tmp_path: Path,
) -> None:
    lr, remote = make(tmp_path)
    bad = [
        b'{"verb": "set", "values": {"learning_rate": 1' + b"0" * 400 + b"}}",
        b"[" * 20_000 + b"]" * 20_000,
        b'{"verb": "cooldown", "names": ["learning_rate"], "steps": ' + b"9" * 30 + b"}",
        b'{"verb": "cooldown", "names": ["learning_rate"], "steps": 9007199254740993}',
        b'{"verb": "stop", "at": 9007199254740993}',
        b'{"verb": "set", "values": {"learning_rate": 1e400}}',
    ]
    for seq, data in enumerate(bad, start=1):
        command_path(remote.directory, seq).write_bytes(data)
    submit(remote.directory, {"verb": "set", "values": {"learning_rate": 0.25}})
    found = remote.poll()
    assert [e["status"] for e in found] == ["refused"] * len(bad) + ["applied"]
    reasons = [e["reason"] for e in found[: len(bad)]]
    assert "more than 20 digits" in reasons[0]
    assert "nested too deep" in reasons[1]
    assert "more than 20 digits" in reasons[2]
    assert "at most 2**53. Received: steps=9007199254740993" in reasons[3]
    assert "at=9007199254740993" in reasons[4]
    assert "finite number" in reasons[5]
    assert value(lr) == 0.25
    assert [e["seq"] for e in commands(remote.directory)] == list(range(1, len(bad) + 2))


def test_the_cli_refuses_a_cooldown_of_too_many_steps(tmp_path: Path, capsys) -> None:
    _, remote = make(tmp_path)
    code = cli(["cooldown", str(remote.directory), "learning_rate", "--steps", "9" * 400])
    assert code == 2 and "--steps: expected at most 2**53" in capsys.readouterr().err
    assert not command_path(remote.directory, 1).exists()


def test_a_fifo_a_link_and_a_directory_are_refused_without_blocking(tmp_path: Path) -> None:
    lr, remote = make(tmp_path)
    os.mkfifo(command_path(remote.directory, 1))
    secret = tmp_path / "secret"
    secret.write_text('{"verb": "stop"}')
    os.symlink(secret, command_path(remote.directory, 2))
    os.mkdir(command_path(remote.directory, 3))
    os.symlink(tmp_path / "missing", command_path(remote.directory, 4))  # dangling
    submit(remote.directory, {"verb": "scale", "values": {"learning_rate": 0.5}})
    found: list = []
    poller = threading.Thread(target=lambda: found.extend(remote.poll()), daemon=True)
    poller.start()
    poller.join(timeout=120)  # a blocking open of the FIFO would never return
    assert not poller.is_alive(), "poll blocked on a FIFO"
    assert [e["status"] for e in found] == ["refused"] * 4 + ["applied"]
    assert "not a regular file" in found[0]["reason"]
    assert not remote.stop_requested  # the link's target was not read
    assert "not a regular file" in found[2]["reason"]
    assert value(lr) == pytest.approx(0.05)


def test_a_deleted_directory_warns_once_and_steering_resumes_when_it_is_back(
    tmp_path: Path,
) -> None:
    lr, remote = make(tmp_path)
    remote.status_every = 0.0  # a status write at every poll
    shutil.rmtree(remote.directory)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        for _ in range(5):
            assert remote.poll() == []
            lr.clock.advance()
    said = [str(w.message) for w in caught if w.category is RuntimeWarning]
    assert len(said) == 1 and "cannot write into the control directory" in said[0]  # once
    check_directory(remote.directory, create=True)  # back (the run's user made it again)
    submit(remote.directory, {"verb": "set", "values": {"learning_rate": 0.3}})
    [entry] = remote.poll()
    assert entry["status"] == "applied" and value(lr) == pytest.approx(0.3)
    assert json.loads((remote.directory / "status.json").read_text())["step"] == 5


def test_a_poll_applies_a_bounded_number_of_commands(tmp_path: Path) -> None:
    lr, remote = make(tmp_path)
    total = 2 * MAX_AGREED + 3
    for index in range(total):
        submit(remote.directory, {"verb": "set", "values": {"learning_rate": 0.01 * (index + 1)}})
    counts = []
    for _ in range(4):
        counts.append(len(remote.poll()))
        lr.clock.advance()
    assert counts == [MAX_AGREED, MAX_AGREED, 3, 0]
    assert [e["step"] for e in commands(remote.directory)][-1] == 2
    assert value(lr) == pytest.approx(0.01 * total)


def test_a_gap_in_the_numbering_is_journaled_and_skipped(tmp_path: Path) -> None:
    lr, remote = make(tmp_path)
    remote.status_every = 0.0
    for factor in (0.5, 0.25, 0.125):
        submit(remote.directory, {"verb": "scale", "values": {"learning_rate": factor}})
    os.unlink(command_path(remote.directory, 1))
    os.unlink(command_path(remote.directory, 2))
    found = remote.poll()
    assert [(e["seq"], e["status"], e.get("through")) for e in found] == [
        (1, "refused", 2),
        (3, "applied", None),
    ]
    assert "no command 1..2" in found[0]["reason"]
    assert float(keras.ops.convert_to_numpy(lr.scale)) == 0.125


def test_a_second_remote_on_a_held_directory_refuses_naming_the_process(tmp_path: Path) -> None:
    _, remote = make(tmp_path)
    other = hs.Remote(tmp_path / "run", hs.Hyperparameter(0.1, name="learning_rate"))
    with pytest.raises(hs.errors.InvalidArgumentError, match=rf"process {os.getpid()}"):
        other.poll()
    remote.close()
    other.poll()  # free now
    other.close()


def test_a_fresh_run_never_obeys_an_earlier_runs_commands(tmp_path: Path, capsys) -> None:
    _, remote = make(tmp_path)
    submit(remote.directory, {"verb": "set", "values": {"learning_rate": 0.5}})
    remote.poll()
    remote.on_train_end()  # the run ends: status "ended", the directory released
    assert cli(["stop", str(remote.directory)]) == 1  # answered at once
    assert f"the run in {remote.directory} ended at step 0" in capsys.readouterr().err
    # sent anyway by a stale script (a raw file), and one queued for the next run on purpose
    submit(remote.directory, {"verb": "stop"})
    assert cli(["set", str(remote.directory), "learning_rate=0.2", "--queue"]) == 0
    lr2 = hs.Hyperparameter(0.1, name="learning_rate")
    fresh = hs.Remote(tmp_path / "run", lr2)
    found = fresh.poll()
    assert [(e["seq"], e["status"]) for e in found] == [(2, "refused"), (3, "applied")]
    assert "sent before this run began" in found[0]["reason"]
    assert not fresh.stop_requested and value(lr2) == pytest.approx(0.2)
    fresh.close()


@pytest.mark.backend("tensorflow", "jax", "torch")
def test_a_schedule_reading_epoch_is_applied_under_fit_and_replays_bitwise(
    tmp_path: Path,
) -> None:
    x = np.linspace(-1, 1, 48, dtype="float32").reshape(24, 2)
    y = np.sin(3 * x[:, :1]).astype("float32")

    def run(learning_rate: object, remote: hs.Remote | None) -> list:
        keras.utils.set_random_seed(1)
        opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=learning_rate)
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(opt, "mse")

        class Send(keras.callbacks.Callback):
            updates = 0  # (JAX: fit holds the optimizer's state, not read here)

            def on_train_batch_end(self, batch, logs=None):
                self.updates += 1
                if remote is not None and self.updates == 3:
                    text = "0.1 * 0.5 ** epoch"
                    submit(
                        remote.directory, {"verb": "schedule", "values": {"learning_rate": text}}
                    )

        callbacks = [] if remote is None else [remote, Send()]
        model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0, callbacks=callbacks)
        return model.get_weights()

    controlled = run(0.05, hs.Remote(tmp_path / "run"))
    [entry] = commands(tmp_path / "run")
    assert entry["status"] == "applied" and entry["step"] == 3, entry
    assert entry["schedules"] == {"learning_rate": "0.1 * 0.5 ** floor(step / 6.0)"}
    replayed = run(hs.Remote.replay(tmp_path / "run")["learning_rate"], None)
    for a, b in zip(controlled, replayed, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_steering_step_is_the_optimizers_whatever_free_hyperparameter_sorts_first(
    tmp_path: Path,
) -> None:
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(opt, "mse")
    idle = hs.Hyperparameter(0.5, name="aaa_loss_weight")  # its own clock, never advanced
    remote = hs.Remote(tmp_path / "run", idle)
    submit(remote.directory, {"verb": "stop", "at": 5, "queued": True})
    x, y = np.ones((64, 2), "float32"), np.ones((64, 1), "float32")
    model.fit(x, y, batch_size=2, epochs=1, verbose=0, callbacks=[remote])
    assert int(keras.ops.convert_to_numpy(opt.iterations)) == 6  # stopped after step 5
    [entry] = [e for e in commands(remote.directory) if e["status"] == "applied"]
    assert entry["step"] == 5
    status = json.loads((remote.directory / "status.json").read_text())
    assert status["step"] == 6 and status["applied"] == 1
    assert "remote_applied" in opt.hyperparameters[min(opt.hyperparameters)].state
    assert "remote_applied" not in idle.state


def _steered_loop(
    tmp_path: Path, plan: dict[int, dict], steps: int, *schedule: object
) -> tuple[list, dict]:
    """A custom loop: ``plan``'s commands sent before the polls of their steps; the
    learning rate each step read, and the replayed schedules."""
    lr, remote = make(tmp_path, *schedule)
    seen = []
    for step in range(steps):
        if step in plan:
            submit(remote.directory, plan[step])
        remote.poll()
        seen.append(np.float32(value(lr)))
        lr.clock.advance()
    remote.close()
    return seen, hs.Remote.replay(remote.directory)


def _replayed(schedule: object, steps: int) -> list:
    return [np.float32(keras.ops.convert_to_numpy(schedule(step))) for step in range(steps)]  # type: ignore[operator]


def test_a_cooldown_on_an_overridden_value_cools_from_that_value(tmp_path: Path) -> None:
    plan = {
        2: {"verb": "set", "values": {"learning_rate": 0.02}},
        4: {"verb": "cooldown", "names": ["learning_rate"], "steps": 4, "shape": "linear"},
    }
    seen, schedules = _steered_loop(tmp_path, plan, 10)
    linear = [0.02 * (1 - k / 4) for k in range(5)]  # 0.02 down to 0 over 4 steps
    np.testing.assert_allclose(seen[4:9], linear, rtol=1e-6, atol=1e-9)
    assert seen[9] == 0.0
    np.testing.assert_array_equal(_replayed(schedules["learning_rate"], 10), seen)


def test_a_schedule_from_now_counts_its_steps_from_the_command(tmp_path: Path) -> None:
    text = "0.1 * (1 - step / 10)"
    plan = {5: {"verb": "schedule", "values": {"learning_rate": text}, "from_now": True}}
    seen, schedules = _steered_loop(tmp_path, plan, 9)
    np.testing.assert_allclose(seen[5:], [0.1 * (1 - k / 10) for k in range(4)], rtol=1e-6)
    np.testing.assert_array_equal(_replayed(schedules["learning_rate"], 9), seen)


def test_a_learning_rate_of_zero_or_below_is_refused_unless_forced(tmp_path: Path) -> None:
    lr, remote = make(tmp_path)
    for command in (
        {"verb": "set", "values": {"learning_rate": -1}},
        {"verb": "scale", "values": {"learning_rate": 0}},
        {"verb": "set", "values": {"learning_rate": 0}, "force": True},
    ):
        submit(remote.directory, command)
    refused_negative, refused_zero, forced = remote.poll()
    assert refused_negative["status"] == "refused"
    assert "would make learning_rate negative: refused unless forced" in refused_negative["reason"]
    assert refused_zero["status"] == "refused" and "learning_rate zero" in refused_zero["reason"]
    assert forced["status"] == "applied" and value(lr) == 0.0
    remote.close()
    assert cli(["set", str(remote.directory), "learning_rate=-1", "--queue"]) == 2


def test_a_schedule_making_the_learning_rate_zero_below_or_infinite_is_refused_unless_forced(
    tmp_path: Path, capsys
) -> None:
    lr, remote = make(tmp_path)  # at step 0, status written
    directory = str(remote.directory)
    # the CLI evaluates the schedule at the run's step (from its status) and refuses
    assert cli(["schedule", directory, "learning_rate=step - 1"]) == 2
    assert "would make learning_rate negative at step 0" in capsys.readouterr().err
    assert cli(["schedule", directory, "learning_rate=0.1 * (1 - step / 10)", "--at", "20"]) == 2
    assert "negative at step 20" in capsys.readouterr().err
    assert cli(["schedule", directory, "learning_rate=log(step)"]) == 2
    assert "would make learning_rate -inf at step 0" in capsys.readouterr().err
    # what the CLI could not check (sent raw), the run checks where it takes effect
    submit(remote.directory, {"verb": "schedule", "values": {"learning_rate": "step"}})
    submit(remote.directory, {"verb": "schedule", "values": {"learning_rate": "1 / step"}})
    [zero, infinite] = remote.poll()
    assert zero["status"] == "refused" and "learning_rate zero at step 0" in zero["reason"]
    assert infinite["status"] == "refused" and "learning_rate inf at step 0" in infinite["reason"]
    assert value(lr) == pytest.approx(0.1)  # untouched
    # counting from the command (--from-now), or forced: applied
    assert cli(["schedule", directory, "learning_rate=0.2 - step", "--from-now"]) == 0
    assert cli(["schedule", directory, "learning_rate=step", "--force"]) == 0
    from_now, forced = remote.poll()
    assert from_now["status"] == forced["status"] == "applied" and value(lr) == 0.0


def _journal_of_a_steered_loop(tmp_path: Path) -> tuple[Path, list]:
    plan = {
        2: {"verb": "set", "values": {"learning_rate": 0.02}},
        4: {"verb": "scale", "values": {"learning_rate": 0.5}},
        6: {"verb": "clear", "names": ["learning_rate"]},
    }
    seen, _ = _steered_loop(tmp_path, plan, 8)
    return tmp_path / "run" / "journal.jsonl", seen


def test_replay_skips_undecodable_lines_with_a_warning_and_replays(tmp_path: Path) -> None:
    path, seen = _journal_of_a_steered_loop(tmp_path)
    with open(path, "ab") as f:
        f.write(b'{"seq": \xff}\n[1, 2]\n')
    with pytest.warns(RuntimeWarning, match=r"skipped 2 line\(s\)"):
        schedules = hs.Remote.replay(path)
    np.testing.assert_array_equal(_replayed(schedules["learning_rate"], 8), seen)


def test_replay_refuses_a_journal_missing_a_command_naming_it(tmp_path: Path) -> None:
    path, _ = _journal_of_a_steered_loop(tmp_path)
    lines = path.read_bytes().splitlines(keepends=True)
    [second] = [i for i, line in enumerate(lines) if b'"seq": 2' in line]
    path.write_bytes(b"".join(lines[:second] + lines[second + 1 :]))
    with pytest.raises(hs.errors.InvalidArgumentError, match="no entry for command 2"):
        hs.Remote.replay(path)
    path.write_bytes(b"".join(lines[:-1]) + lines[-1][:20])  # the last line cut short
    with pytest.raises(hs.errors.InvalidArgumentError, match="last line is cut short"):
        hs.Remote.replay(path)


def test_replay_skips_an_ill_shaped_entry_and_then_names_its_number(tmp_path: Path) -> None:
    path, _ = _journal_of_a_steered_loop(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    [second] = [i for i, line in enumerate(lines) if '"seq": 2' in line]
    lines[second] = '{"seq": 2, "command": "set", "status": "applied", "step": 4}\n'
    path.write_text("".join(lines))
    with pytest.warns(RuntimeWarning, match="ill-shaped journal entry of command 2"):
        with pytest.raises(hs.errors.InvalidArgumentError, match="no entry for command 2"):
            hs.Remote.replay(path)


def test_replay_parses_only_the_hyperparameters_a_command_changed(tmp_path: Path) -> None:
    path, seen = _journal_of_a_steered_loop(tmp_path)
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    for entry in entries:
        if entry.get("event") == "begin":  # another, never steered, with an unreadable repr
            entry["hyperparameters"]["beta"] = {
                "schedule": "<keras.optimizers.schedules.ExponentialDecay object>",
                "scale": 1.0,
                "override": None,
            }
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    schedules = hs.Remote.replay(path)
    assert sorted(schedules) == ["learning_rate"]
    np.testing.assert_array_equal(_replayed(schedules["learning_rate"], 8), seen)


def test_replay_has_no_length_limit_for_a_schedule_longer_than_the_parser_takes(
    tmp_path: Path,
) -> None:
    from hyperstep.schedules import piecewise
    from hyperstep.schedules.language import MAX_LENGTH

    values = [0.1 - k * 1e-5 for k in range(800)]
    long = piecewise(list(range(1, 800)), values)  # its repr: 14,616 characters
    plan = {
        3: {"verb": "scale", "values": {"learning_rate": 0.5}},
        6: {"verb": "schedule", "values": {"learning_rate": "0.01"}},
    }
    seen, schedules = _steered_loop(tmp_path, plan, 9, long)
    assert len(repr(long)) > MAX_LENGTH
    expected = [*values[:3], *(np.float32(v) * np.float32(0.5) for v in values[3:6])]
    np.testing.assert_array_equal(seen, np.float32([*expected, 0.005, 0.005, 0.005]))
    np.testing.assert_array_equal(_replayed(schedules["learning_rate"], 9), seen)
