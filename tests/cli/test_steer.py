"""Units of hyperstep.cli.steer: the steering subcommands' parsing, command objects, queued
files and the one-line descriptions (a run that applies them: tests/control/test_remote*)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from hyperstep.cli import steer
from hyperstep.control import directory as protocol
from hyperstep.errors import InvalidArgumentError


def _live(path: Path) -> Iterator[None]:
    """A live run holding ``path`` (its lock) while the block runs."""
    fd = protocol.hold(path)
    try:
        yield
    finally:
        assert fd is not None
        os.close(fd)


live = contextlib.contextmanager(_live)


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hyperstep")
    steer.register(parser.add_subparsers())
    return parser.parse_args(list(argv))


def test_register_adds_the_six_verbs() -> None:
    for verb in ("set", "scale", "clear", "schedule", "cooldown", "stop"):
        items = {"set": ["x=1"], "scale": ["x=1"], "schedule": ["x=1"], "clear": ["x"]}
        args = _parse(verb, "DIR", *items.get(verb, []))
        assert args.verb == verb and args.func is steer.run and args.directory == "DIR"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["set", "D", "learning_rate=1e-4", " wd = 0.1 "],
            {"verb": "set", "values": {"learning_rate": "1e-4", "wd": "0.1"}},
        ),
        (["clear", "D", "lr", "--at", "30"], {"verb": "clear", "names": ["lr"], "at": 30}),
        (["cooldown", "D"], {"verb": "cooldown"}),
        (
            ["cooldown", "D", "lr", "--steps", "50", "--shape", "linear"],
            {"verb": "cooldown", "names": ["lr"], "steps": 50, "shape": "linear"},
        ),
        (["stop", "D"], {"verb": "stop"}),
    ],
)
def test_command_of(argv: list[str], expected: dict) -> None:
    assert steer.command_of(_parse(*argv)) == expected


def test_command_of_refuses_an_item_without_equals() -> None:
    with pytest.raises(InvalidArgumentError, match=r"set takes NAME=VALUE.*Received: 'lr'"):
        steer.command_of(_parse("set", "D", "lr"))
    with pytest.raises(InvalidArgumentError, match=r"Received: '=3'"):
        steer.command_of(_parse("scale", "D", "=3"))


@pytest.mark.parametrize("at", ["-1", "x", "1.5"])
def test_at_must_be_a_step(at: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _parse("stop", "D", "--at", at)
    assert f"expected a step, an integer >= 0, got {at!r}" in capsys.readouterr().err


def test_run_queues_the_checked_command(tmp_path: Path, capsys) -> None:
    path = protocol.check_directory(tmp_path / "ctl", create=True)
    assert steer.run(_parse("set", str(path), "lr=0.5", "--queue")) == 0
    out = capsys.readouterr().out
    assert "command 1 queued: set lr=0.5" in out and "no status" in out
    queued = json.loads(protocol.command_path(path, 1).read_text())
    assert queued["verb"] == "set" and queued["values"] == {"lr": 0.5} and "time" in queued


def test_run_refuses_an_unknown_name_and_journals_it(tmp_path: Path) -> None:
    path = protocol.check_directory(tmp_path / "ctl", create=True)
    protocol.write_status(path, {"hyperparameters": {"learning_rate": {}}})
    with live(path), pytest.raises(InvalidArgumentError, match="did you mean 'learning_rate'"):
        steer.run(_parse("clear", str(path), "learning_rat"))
    (entry,) = protocol.read_journal(path / protocol.JOURNAL)
    assert entry["status"] == "refused" and entry["by"] == "cli" and entry["seq"] is None
    assert not protocol.command_path(path, 1).exists()


def test_run_wait_reads_the_run_answer(tmp_path: Path, capsys) -> None:
    path = protocol.check_directory(tmp_path / "ctl", create=True)
    protocol.append_journal(
        path,
        {"seq": 1, "by": "remote", "command": {"verb": "stop"}, "status": "applied", "step": 7},
    )
    with live(path):
        assert steer.run(_parse("stop", str(path), "--wait", "1")) == 0
        assert "#1 stop -> applied at step 7" in capsys.readouterr().out
        assert steer.run(_parse("stop", str(path), "--wait", "0.01")) == 1
    assert "command 2: not applied within 0.01 s" in capsys.readouterr().err


def test_describe() -> None:
    command = {"verb": "cooldown", "names": ["lr", "wd"], "steps": 5, "shape": "cosine", "at": 9}
    assert steer.describe(command) == "cooldown lr wd --steps 5 --shape cosine --at 9"
    assert steer.describe({"verb": "set", "values": {"lr": 1e-4}}) == "set lr=0.0001"
    assert steer.describe("garbage") == "(unreadable command)"


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        (
            {"seq": 3, "command": {"verb": "stop"}, "status": "applied", "step": 120},
            "#3 stop -> applied at step 120",
        ),
        (
            {"seq": 4, "command": {"verb": "stop"}, "status": "pending", "reason": "at 9"},
            "#4 stop -> pending (at 9)",
        ),
        (
            {
                "seq": None,
                "by": "cli",
                "command": {"verb": "stop"},
                "status": "refused",
                "reason": "no",
            },
            "#- stop -> refused by the CLI: no",
        ),
        (
            {"seq": 5, "command": {"verb": "stop"}, "status": "refused", "reason": "late"},
            "#5 stop -> refused: late",
        ),
    ],
)
def test_outcome(entry: dict, line: str) -> None:
    assert steer.outcome(entry) == line
