"""Units of hyperstep.control.directory: the control directory's files and the command checks."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import numpy as np
import pytest

from hyperstep.control.directory import (
    COMMANDS,
    FLOAT32_MAX,
    VERBS,
    append_journal,
    check_command,
    check_directory,
    command_path,
    next_sequence,
    parse_number,
    parse_schedule,
    read_command,
    read_journal,
    read_status,
    schedule_value,
    submit,
    write_status,
)
from hyperstep.errors import InvalidArgumentError


def test_float32_max_is_the_largest_float_that_stays_finite_in_float32() -> None:
    above = np.nextafter(FLOAT32_MAX, np.inf)
    with np.errstate(over="ignore"):
        assert np.isfinite(np.float32(FLOAT32_MAX)) and np.isinf(np.float32(above))
    assert np.float32(FLOAT32_MAX) == np.finfo(np.float32).max
    assert parse_number("x", FLOAT32_MAX) == FLOAT32_MAX
    with pytest.raises(InvalidArgumentError):
        parse_number("x", float(above))


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


@pytest.mark.parametrize(
    ("value", "expected"), [(1, 1.0), (-2.5, -2.5), (" 1e-4 ", 1e-4), ("3.4e38", 3.4e38)]
)
def test_parse_number(value, expected) -> None:
    assert parse_number("lr", value) == expected


@pytest.mark.parametrize("value", [True, None, "abc", float("inf"), "nan", 1e39, [1]])
def test_parse_number_refuses_naming_the_argument(value) -> None:
    with pytest.raises(InvalidArgumentError, match=r"lr needs a finite number.*Received: lr="):
        parse_number("lr", value)


def test_parse_schedule_returns_the_repr_or_names_the_problem() -> None:
    from hyperstep.schedules.language import parse

    assert parse_schedule("lr", "0.1 * 0.5") == repr(parse("0.1 * 0.5"))
    for bad in ("", "  ", 3, "cosine(", "__import__('os')"):
        with pytest.raises(InvalidArgumentError, match=r"lr.*Received: lr="):
            parse_schedule("lr", bad)


def test_check_command_normalizes_each_verb() -> None:
    assert check_command({"verb": "set", "values": {"lr": "0.5"}, "at": 3}) == {
        "verb": "set",
        "at": 3,
        "values": {"lr": 0.5},
    }
    assert check_command({"verb": "cooldown"}) == {"verb": "cooldown", "names": ["learning_rate"]}
    assert check_command({"verb": "cooldown", "names": ["wd"], "steps": 5, "shape": "linear"}) == {
        "verb": "cooldown",
        "names": ["wd"],
        "steps": 5,
        "shape": "linear",
    }
    assert check_command({"verb": "stop", "ignored": 1}) == {"verb": "stop"}
    assert set(VERBS) == {"set", "scale", "clear", "schedule", "cooldown", "stop"}


@pytest.mark.parametrize(
    ("command", "match"),
    [
        ([], "must be an object"),
        ({"verb": "go"}, "unknown verb.*verb='go'"),
        ({"verb": "stop", "at": -1}, "at=-1"),
        ({"verb": "stop", "at": True}, "at=True"),
        ({"verb": "set", "values": {}}, "at least one NAME=VALUE"),
        ({"verb": "clear"}, "at least one NAME. Received: names=None"),
        ({"verb": "cooldown", "steps": 0}, "steps=0"),
        ({"verb": "cooldown", "shape": "step"}, "shape='step'"),
        ({"verb": "set", "values": {"": 1}}, "name must be a string"),
    ],
)
def test_check_command_refuses_naming_what(command, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        check_command(command)


def test_check_command_suggests_a_close_name() -> None:
    with pytest.raises(InvalidArgumentError, match=r"'lerning_rate'.*did you mean 'learning_rate'"):
        check_command({"verb": "clear", "names": ["lerning_rate"]}, names=["learning_rate", "wd"])


def test_check_command_checks_a_learning_rate_schedule_where_it_takes_effect() -> None:
    def schedule(name: str, text: str, **given: object) -> dict:
        return {"verb": "schedule", "values": {name: text}, **given}

    with pytest.raises(InvalidArgumentError, match=r"negative at step 200.*'0.1 \* \(1 - s"):
        check_command(schedule("learning_rate", "0.1 * (1 - step / 100)"), step=200)
    with pytest.raises(InvalidArgumentError, match=r"head/learning_rate zero at step 9"):
        check_command(schedule("head/learning_rate", "step - 9", at=9), step=0)
    check_command(schedule("learning_rate", "0.1 * (1 - step / 100)"))  # step unknown
    check_command(schedule("learning_rate", "step - 1", from_now=True, force=True), step=0)
    check_command(schedule("beta", "step - 1"), step=0)  # not a learning rate
    # it reads `epoch` (only the run knows its length): the run checks it
    assert schedule_value("0.1 * (1 - epoch)", 5) is None
    assert schedule_value("0.5 - step", 2) == -1.5


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
