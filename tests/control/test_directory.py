"""Units of hyperstep.control.directory: the control directory's files."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from hyperstep.control.directory import (
    COMMANDS,
    append_journal,
    check_directory,
    command_path,
    next_sequence,
    read_command,
    read_journal,
    read_status,
    submit,
    write_status,
)
from hyperstep.errors import InvalidArgumentError


def test_check_directory_creates_it_private(tmp_path: Path) -> None:
    path = check_directory(tmp_path / "run" / "ctl", create=True)
    for part in (path, path / COMMANDS):
        assert part.is_dir() and stat.S_IMODE(os.stat(part).st_mode) == 0o700


def test_check_directory_refuses_missing_files_and_shared(tmp_path: Path) -> None:
    missing = tmp_path / "none"
    with pytest.raises(InvalidArgumentError, match=rf"does not exist.*directory='{missing}'"):
        check_directory(missing)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidArgumentError, match="is not a directory"):
        check_directory(tmp_path / "file")
    shared = check_directory(tmp_path / "shared", create=True)
    os.chmod(shared, 0o770)
    with pytest.raises(InvalidArgumentError, match=rf"mode 770.*`chmod go-w {shared}`"):
        check_directory(shared)


def test_submit_numbers_commands_in_order(tmp_path: Path) -> None:
    directory = check_directory(tmp_path / "ctl", create=True)
    assert next_sequence(directory) == 1
    assert submit(directory, {"verb": "stop"}) == 1
    assert submit(directory, {"verb": "set", "values": {"lr": 0.1}}) == 2
    assert command_path(directory, 2) == directory / COMMANDS / "00000002.json"
    assert read_command(command_path(directory, 2)) == {"verb": "set", "values": {"lr": 0.1}}
    assert sorted(os.listdir(directory / COMMANDS)) == ["00000001.json", "00000002.json"]
    assert next_sequence(directory) == 3


def test_submit_refuses_nan(tmp_path: Path) -> None:
    directory = check_directory(tmp_path / "ctl", create=True)
    with pytest.raises(ValueError):
        submit(directory, {"verb": "set", "values": {"lr": float("nan")}})
    assert os.listdir(directory / COMMANDS) == []  # no temporary file left


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object. Received: list"),
        (b"\xff\xfe", "not valid JSON"),
        (b" " * 70000, "larger than 65536 bytes"),
    ],
)
def test_read_command_refuses_bad_files(tmp_path: Path, data: bytes, match: str) -> None:
    (tmp_path / "c.json").write_bytes(data)
    with pytest.raises(InvalidArgumentError, match=match):
        read_command(tmp_path / "c.json")


def test_journal_appends_lines_and_skips_a_broken_one(tmp_path: Path) -> None:
    append_journal(tmp_path, {"step": 1, "loss": float("nan")})
    append_journal(tmp_path, {"step": 2})
    with open(tmp_path / "journal.jsonl", "a", encoding="utf-8") as f:
        f.write("{broken\n")
    append_journal(tmp_path, {"step": 3}, name="journal.worker1.jsonl")
    with pytest.warns(RuntimeWarning, match=r"skipped 1 line\(s\) .* \(line 3\)"):
        entries = read_journal(tmp_path / "journal.jsonl")
    assert [e["step"] for e in entries] == [1, 2]
    assert entries[0]["loss"] is None  # strict JSON: nan as null
    (worker,) = read_journal(tmp_path / "journal.worker1.jsonl")
    assert list(worker) == ["time", "step"] and worker["step"] == 3
    time.strptime(worker["time"], "%Y-%m-%dT%H:%M:%S%z")  # each entry is stamped


def test_status_round_trips(tmp_path: Path) -> None:
    assert read_status(tmp_path) is None
    write_status(tmp_path, {"step": 4, "values": {"lr": 0.1}})
    assert read_status(tmp_path) == {"step": 4, "values": {"lr": 0.1}}
    assert json.loads((tmp_path / "status.json").read_text()) == {"step": 4, "values": {"lr": 0.1}}
    assert [p.name for p in tmp_path.iterdir()] == ["status.json"]
