"""Units of hyperstep.cli.show: the status table and the last commands of a control directory."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pytest

from hyperstep.cli import show
from hyperstep.control import directory as protocol
from hyperstep.errors import InvalidArgumentError


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hyperstep")
    show.register(parser.add_subparsers())
    return parser.parse_args(["show", *argv])


def test_register_defaults_and_last(capsys) -> None:
    args = _parse("DIR")
    assert (args.directory, args.last, args.func) == ("DIR", 10, show.run)
    assert _parse("DIR", "--last", "3").last == 3
    with pytest.raises(SystemExit):
        _parse("DIR", "--last", "0")


def test_an_empty_directory_says_so(tmp_path: Path, capsys) -> None:
    path = protocol.check_directory(tmp_path / "ctl", create=True)
    assert show.run(_parse(str(path))) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: no status yet (the run writes status.json once hs.Remote polls)",
        "no commands yet",
    ]


def test_the_table_and_the_last_commands(tmp_path: Path, capsys) -> None:
    path = protocol.check_directory(tmp_path / "ctl", create=True)
    hyperparameters = {
        "wd": {"value": 0.01, "schedule": "0.01", "scale": 1.0, "override": None},
        "learning_rate": {
            "value": 1 / 3,
            "schedule": "cosine(...)",
            "scale": 0.5,
            "override": 2e-4,
            "cooldown": 90,
        },
    }
    protocol.write_status(
        path,
        {
            "time": time.time(),
            "step": 120,
            "total": 1000,
            "state": "training",
            "pid": 42,
            "applied": 3,
            "hyperparameters": hyperparameters,
        },
    )
    for seq in (1, 2, 3):
        protocol.append_journal(
            path, {"seq": seq, "command": {"verb": "stop"}, "status": "applied", "step": seq * 10}
        )
    protocol.append_journal(path, {"note": "not a command"})
    assert show.run(_parse(str(path), "--last", "2")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{path}: step 120 of 1000 (training, pid 42, status ")
    assert lines[0].endswith("s old), last command applied: 3")
    header, first, second = (line.split() for line in lines[1:4])
    assert header == ["name", "value", "schedule", "scale", "override"]
    assert first == [
        "learning_rate",
        f"{1 / 3:.6g}",
        "cosine(...)",
        "(cooldown",
        "from",
        "90)",
        "0.5",
        "0.0002",
    ]  # sorted by name, numbers in %.6g
    assert second == ["wd", "0.01", "0.01", "1", "-"]
    assert lines[1].index("value") == lines[2].index(f"{1 / 3:.6g}")  # aligned columns
    assert lines[4:] == [
        "last commands:",
        "  #2 stop -> applied at step 20",
        "  #3 stop -> applied at step 30",
    ]
    status = protocol.read_status(path)
    protocol.write_status(path, {**status, "total": None})  # a run of unknown length
    assert show.run(_parse(str(path))) == 0
    assert capsys.readouterr().out.startswith(f"{path}: step 120 (training, pid 42, status ")


def test_an_unsafe_or_missing_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        show.run(_parse(str(tmp_path / "none")))


def test_what_it_did_not_check_is_escaped(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = protocol.check_directory(tmp_path / "ctl", create=True)
    with open(path / protocol.JOURNAL, "w", encoding="utf-8") as f:
        # a lone surrogate and a terminal escape, as a neighbour-free but careless writer left
        f.write('{"seq": 1, "command": {"verb": "set\\udc80\\u001b[2J"}, "status": "refused",')
        f.write(' "step": null, "reason": "bad"}\n')
    done = subprocess.run(
        [sys.executable, "-m", "hyperstep", "show", str(path)],
        capture_output=True,
        env={**__import__("os").environ, "PYTHONIOENCODING": "utf-8:strict"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert b"#1 set\\udc80\\x1b[2J -> refused: bad" in done.stdout


def test_show_is_quiet_into_a_closed_pipe(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = protocol.check_directory(tmp_path / "ctl", create=True)
    for seq in range(1, 2001):
        protocol.append_journal(
            path, {"seq": seq, "command": {"verb": "stop"}, "status": "refused", "reason": "x"}
        )
    done = subprocess.run(
        f"{sys.executable} -m hyperstep show {path} --last 2000 | head -1",
        shell=True,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith(str(path))
    assert done.stderr == ""
