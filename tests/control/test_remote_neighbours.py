"""hs.Remote among other users: what a neighbour who can write files can and cannot do.

Each promise of docs/steering.md ("What is safe") is tested here or in test_remote_robust.py.
A second user is root acting as ``nobody`` (``os.setuid`` in a subprocess) where the tests
run as root; elsewhere those tests skip, saying so.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import keras
import pytest

import hyperstep as hs
from hyperstep.control.directory import check_directory, command_path, submit

ROOT = hasattr(os, "getuid") and os.getuid() == 0
needs_root = pytest.mark.skipif(
    not ROOT, reason="a second user is root acting as nobody: these tests run as root only"
)


def nobody() -> int:
    import pwd

    return pwd.getpwnam("nobody").pw_uid


def as_nobody(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a Python process that became ``nobody`` first."""
    prelude = f"import os; os.setgid({nobody()}); os.setuid({nobody()})\n"
    return subprocess.run(
        [sys.executable, "-c", prelude + code], capture_output=True, text=True, check=False
    )


def make(tmp_path: Path) -> tuple:
    lr = hs.Hyperparameter(0.1, name="learning_rate")
    remote = hs.Remote(tmp_path / "run", lr)
    remote.poll()
    return lr, remote


def value(hp: hs.Hyperparameter) -> float:
    return float(keras.ops.convert_to_numpy(hp.value))


@needs_root
def test_a_neighbour_cannot_write_a_command_into_the_directory(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)  # the neighbour may look into the parent
    _lr, remote = make(tmp_path)
    target = command_path(remote.directory, 1)
    done = as_nobody(f"open({str(target)!r}, 'w').write('{{\"verb\": \"stop\"}}')")
    assert done.returncode != 0 and "PermissionError" in done.stderr
    assert remote.poll() == [] and not remote.stop_requested


@needs_root
def test_a_command_file_owned_by_another_user_is_refused(tmp_path: Path) -> None:
    lr, remote = make(tmp_path)
    submit(remote.directory, {"verb": "set", "values": {"learning_rate": 0.5}})
    os.chown(command_path(remote.directory, 1), nobody(), -1)
    [entry] = remote.poll()
    assert (
        entry["status"] == "refused"
        and f"owned by another user (uid {nobody()})" in (entry["reason"])
    )
    assert value(lr) == pytest.approx(0.1)


def test_a_command_file_writable_by_others_is_refused(tmp_path: Path) -> None:
    lr, remote = make(tmp_path)
    submit(remote.directory, {"verb": "set", "values": {"learning_rate": 0.5}})
    os.chmod(command_path(remote.directory, 1), 0o666)
    [entry] = remote.poll()
    assert entry["status"] == "refused" and "writable by others (mode 666)" in entry["reason"]
    assert value(lr) == pytest.approx(0.1)


def test_a_directory_made_group_writable_after_start_obeys_nothing(tmp_path: Path) -> None:
    lr, remote = make(tmp_path)
    os.chmod(remote.directory, 0o770)
    submit(remote.directory, {"verb": "set", "values": {"learning_rate": 0.5}})
    [entry] = remote.poll()
    assert entry["status"] == "refused" and "writable by others (mode 770)" in entry["reason"]
    assert value(lr) == pytest.approx(0.1)


def test_a_directory_in_a_parent_others_can_write_needs_the_sticky_bit(tmp_path: Path) -> None:
    shared = tmp_path / "runs"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(hs.errors.InvalidArgumentError, match=r"mode 777\) without the sticky"):
        hs.Remote(shared / "exp1", hs.Hyperparameter(0.1, name="learning_rate"))
    os.chmod(shared, 0o1777)  # as /tmp: nobody can move another user's entries
    remote = hs.Remote(shared / "exp1", hs.Hyperparameter(0.1, name="learning_rate"))
    remote.close()


def test_a_directory_replaced_by_a_link_after_start_obeys_nothing(tmp_path: Path) -> None:
    lr, remote = make(tmp_path)
    elsewhere = check_directory(tmp_path / "elsewhere", create=True)
    submit(elsewhere, {"verb": "set", "values": {"learning_rate": 0.5}})
    os.rename(remote.directory, tmp_path / "moved")
    os.symlink(elsewhere, remote.directory)
    [entry] = remote.poll()
    assert entry["status"] == "refused" and "a link in its path now" in entry["reason"]
    assert value(lr) == pytest.approx(0.1)


def test_a_planted_journal_link_is_never_written_through(tmp_path: Path) -> None:
    _lr, remote = make(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.unlink(remote.directory / "journal.jsonl")
    os.symlink(victim, remote.directory / "journal.jsonl")
    submit(remote.directory, {"verb": "set", "values": {"learning_rate": 0.5}})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        [entry] = remote.poll()
    assert entry["status"] == "applied"  # training and steering go on
    assert any("cannot write into the control directory" in str(w.message) for w in caught)
    assert victim.read_text() == "precious\n"


def test_a_planted_status_link_is_replaced_not_followed(tmp_path: Path) -> None:
    _, remote = make(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.unlink(remote.directory / "status.json")
    os.symlink(victim, remote.directory / "status.json")
    remote.write_status()
    assert victim.read_text() == "precious\n"
    assert not os.path.islink(remote.directory / "status.json")


def test_the_files_the_run_creates_are_private(tmp_path: Path) -> None:
    _, remote = make(tmp_path)
    for name in ("journal.jsonl", "status.json", ".lock"):
        mode = stat.S_IMODE(os.lstat(remote.directory / name).st_mode)
        assert mode == 0o600, (name, oct(mode))
    assert json.loads((remote.directory / "status.json").read_text())["state"] == "running"
