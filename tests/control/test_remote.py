"""hs.Remote end to end: a run in a subprocess steered by the ``hyperstep`` CLI, then replayed.

The controlled run (remote_worker.py) trains a small MLP with plain SGD for 200 steps; the
test waits for its status file to pass step 40 and runs ``hyperstep set DIR
learning_rate=0``: from the step the journal records on, the weights stop changing (SGD
with a zero rate is the identity), ``hyperstep show`` prints it, and a fresh run given
``hs.Remote.replay``'s schedule ends bitwise equal to the controlled run.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import keras
import numpy as np
import pytest

WORKER = Path(__file__).with_name("remote_worker.py")


def _env(backend: str) -> dict[str, str]:
    return {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}


def _result(done: subprocess.CompletedProcess[str]) -> dict:
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-4000:]
    return json.loads(lines[-1].removeprefix("RESULT "))


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hyperstep", *args], capture_output=True, text=True, check=False
    )


def wait_for_step(directory: Path, step: int, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            status = json.loads((directory / "status.json").read_text())
            if status["step"] >= step:
                return
        except (OSError, ValueError, KeyError):
            pass
        if process.poll() is not None:
            pytest.fail(f"the run ended early: {process.stderr.read()[-4000:]}")  # type: ignore[union-attr]
        time.sleep(0.05)
    pytest.fail(f"the run did not reach step {step}")


def replay(backend: str, source: Path, out: Path) -> dict:
    """``remote_worker.py replay SOURCE OUT``: in this process on the pass's own backend (a
    fresh process would only add a backend import: the replay is a new run from scratch,
    seeded by the worker), else in a subprocess."""
    argv = ["replay", str(source), str(out), "--sleep", "0"]
    if backend == keras.backend.backend():
        spec = importlib.util.spec_from_file_location("hs_remote_worker", WORKER)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module.main(argv)  # type: ignore[no-any-return]
    done = subprocess.run(
        [sys.executable, str(WORKER), *argv],
        env=_env(backend),
        capture_output=True,
        text=True,
        check=False,
    )
    return _result(done)


def journal(directory: Path) -> list[dict]:
    return [json.loads(line) for line in (directory / "journal.jsonl").read_text().splitlines()]


def steer_and_replay(backend: str, tmp_path: Path) -> None:
    control, out = tmp_path / "run", tmp_path / "controlled.npz"
    process = subprocess.Popen(
        [sys.executable, str(WORKER), "controlled", str(control), str(out)],
        env=_env(backend),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_step(control, 40, process)
        sent = cli("set", str(control), "learning_rate=0", "--force", "--wait", "60")
        assert sent.returncode == 0, sent.stderr
        assert "applied at step" in sent.stdout
        stdout, stderr = process.communicate(
            timeout=float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600"))
        )
    finally:
        if process.poll() is None:
            process.kill()
    controlled = _result(subprocess.CompletedProcess([], process.returncode, stdout, stderr))
    assert controlled["step"] == controlled["updates"] == 200
    [applied] = [e for e in journal(control) if e.get("status") == "applied"]
    step = applied["step"]
    assert 40 <= step < 200 and applied["after"] == {"learning_rate": 0.0}
    history = np.load(out)["history"]
    # update `step` is the first with the zero rate: the weights after it are those before it
    assert not np.array_equal(history[step - 1], history[step - 2])
    for later in history[step:]:
        np.testing.assert_array_equal(later, history[step - 1])

    shown = cli("show", str(control))
    assert shown.returncode == 0, shown.stderr
    assert "step 200 of 200 (ended" in shown.stdout  # fit bound total: 200 steps
    assert f"#1 set learning_rate=0.0 -> applied at step {step}" in shown.stdout
    assert "learning_rate  0 " in shown.stdout

    replay(backend, control / "journal.jsonl", tmp_path / "replayed.npz")
    again = np.load(tmp_path / "replayed.npz")
    np.testing.assert_array_equal(again["history"], history)  # every step, bit for bit
    if backend != "torch":  # eager torch runs the step's Python every step
        assert controlled["traces"] == 1  # the command traced nothing again


def test_tensorflow_run_steered_from_the_cli_stops_learning_and_replays_bitwise(
    tmp_path: Path,
) -> None:
    steer_and_replay("tensorflow", tmp_path)


@pytest.mark.slow
def test_jax_run_steered_from_the_cli_stops_learning_and_replays_bitwise(
    tmp_path: Path,
) -> None:
    steer_and_replay("jax", tmp_path)


@pytest.mark.slow
def test_torch_run_steered_from_the_cli_stops_learning_and_replays_bitwise(
    tmp_path: Path,
) -> None:
    steer_and_replay("torch", tmp_path)


@pytest.mark.slow
def test_a_killed_run_resumed_from_its_backup_applies_the_command_once(tmp_path: Path) -> None:
    """Killed (SIGKILL) after its backup saved a checkpoint that holds the command;
    the resumed run does not apply it again and ends at the weights it froze at."""
    control, backup = tmp_path / "run", tmp_path / "backup"
    command = [
        sys.executable,
        str(WORKER),
        "controlled",
        str(control),
        str(tmp_path / "a.npz"),
        "--backup",
        str(backup),
    ]
    process = subprocess.Popen(
        command, env=_env("tensorflow"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for_step(control, 40, process)
        sent = cli("set", str(control), "learning_rate=0", "--force", "--wait", "60")
        assert sent.returncode == 0, sent.stderr
        [applied] = [e for e in journal(control) if e.get("status") == "applied"]
        wait_for_step(control, applied["step"] + 20, process)  # past two epoch backups
        process.kill()
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=60)  # closes the pipes
    resumed = subprocess.run(
        command, env=_env("tensorflow"), capture_output=True, text=True, check=False
    )
    assert _result(resumed)["step"] == 200
    entries = journal(control)
    assert [e["seq"] for e in entries if e.get("status") == "applied"] == [1]  # once
    assert [e["applied"] for e in entries if e.get("event") == "begin"] == [0, 1]
    replay("tensorflow", control, tmp_path / "r.npz")
    frozen = np.load(tmp_path / "r.npz")["history"][applied["step"] - 1]
    np.testing.assert_array_equal(np.load(tmp_path / "a.npz")["final"], frozen)


@pytest.mark.slow
def test_a_run_killed_inside_a_command_applies_it_once_when_resumed(tmp_path: Path) -> None:
    """SIGKILL inside the command (the learning rate set, the journal line not written):
    the resumed run, from the backup before it, applies it once, and replays bitwise."""
    control, backup = tmp_path / "run", tmp_path / "backup"
    command = [
        sys.executable, str(WORKER), "controlled", str(control), str(tmp_path / "a.npz"),
        "--backup", str(backup),
    ]  # fmt: skip
    process = subprocess.Popen(
        [*command, "--kill-in-command"],
        env=_env("tensorflow"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_step(control, 40, process)  # past several epoch backups
        sent = cli("set", str(control), "learning_rate=0", "--force")
        assert sent.returncode == 0, sent.stderr
        process.communicate(timeout=float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600")))
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL  # killed inside the command
    assert not [e for e in journal(control) if e.get("status") == "applied"]
    resumed = subprocess.run(command, env=_env("tensorflow"), capture_output=True, text=True)
    assert _result(resumed)["step"] == 200
    entries = journal(control)
    [applied] = [e for e in entries if e.get("status") == "applied"]  # once
    assert applied["seq"] == 1 and applied["step"] % 8 == 0  # at the resumed epoch's start
    assert [e["applied"] for e in entries if e.get("event") == "begin"] == [0, 0]
    replay("tensorflow", control, tmp_path / "r.npz")
    replayed = np.load(tmp_path / "r.npz")
    np.testing.assert_array_equal(np.load(tmp_path / "a.npz")["final"], replayed["final"])
    frozen = replayed["history"][applied["step"] - 1]
    np.testing.assert_array_equal(replayed["final"], frozen)  # learning stopped there
