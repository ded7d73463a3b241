"""The control directory of a run steered from outside: commands in, a journal and a status out.

A run started with :class:`hyperstep.Remote` reads commands from ``DIR/commands/`` and
writes ``DIR/journal.jsonl`` (every command, accepted or refused) and ``DIR/status.json``
(its step and every hyperparameter's state). The ``hyperstep set|scale|clear|schedule|
cooldown|stop|show DIR`` commands write and read those files. This module is the protocol,
shared by both sides; it imports neither Keras nor a backend, so the commands start fast.

* Only who can write ``DIR`` controls the run (no port is opened): a directory writable by
  its group or by everyone, or owned by another user, is refused.
* A command is one JSON object, written to a temporary file and linked to
  ``commands/NNNNNNNN.json`` (``os.link`` fails if the name exists): names are consecutive
  sequence numbers, each written once and complete, so several writers at once each get their
  own number and the run applies them all, once, in order.
* Values are numbers (finite, within float32's range) or ``hs.parse`` expressions, never code.
"""

from __future__ import annotations

import json
import math
import os
import stat
import time
from pathlib import Path
from typing import Any

from hyperstep.errors import InvalidArgumentError

__all__ = [
    "COMMANDS",
    "FLOAT32_MAX",
    "JOURNAL",
    "STATUS",
    "VERBS",
    "WORKER_JOURNAL",
    "append_journal",
    "check_command",
    "check_directory",
    "command_path",
    "next_sequence",
    "parse_number",
    "parse_schedule",
    "read_command",
    "read_journal",
    "read_status",
    "submit",
    "write_status",
]

COMMANDS = "commands"
JOURNAL = "journal.jsonl"
STATUS = "status.json"
#: the journal of worker ``index`` other than the chief (the chief's is ``JOURNAL``)
WORKER_JOURNAL = "journal.worker{index}.jsonl"
#: the verbs a command may carry (``show`` only reads)
VERBS = ("set", "scale", "clear", "schedule", "cooldown", "stop")
#: the largest finite float32
FLOAT32_MAX = 3.4028235677973362e38  # the largest float finite in float32
#: the cooldown shapes (as :class:`hyperstep.Cooldown`)
SHAPES = ("1-sqrt", "linear", "cosine", "exponential", "minus_sqrt")
#: the largest command file read (a command is a few hundred bytes)
MAX_COMMAND_BYTES = 65536
_DIGITS = 8


# ---- the directory ----------------------------------------------------------------------
def check_directory(directory: str | os.PathLike[str], *, create: bool = False) -> Path:
    """Return ``directory`` as a Path once it is safe to steer a run through.

    With ``create``, a missing directory (and its ``commands/``) is created with mode 0700.

    Raises:
        InvalidArgumentError: If it does not exist (without ``create``), is not a directory,
            is owned by another user, or is writable by its group or by everyone (one line
            naming the problem and the ``chmod`` that fixes it).
    """
    path = Path(os.path.expanduser(os.fspath(directory)))
    for part in (path, path / COMMANDS):
        if create and not part.exists():
            part.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(part, 0o700)
        _check_safe(part, directory)  # the directory first: nothing is created in an unsafe one
    return path


def _check_safe(path: Path, given: Any) -> None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InvalidArgumentError(
            f"control directory {str(path)!r} does not exist: start the run with "
            f"hs.Remote({str(given)!r}) first. Received: directory={str(given)!r}"
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        raise InvalidArgumentError(
            f"control directory {str(path)!r} is not a directory. Received: directory={given!r}"
        )
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise InvalidArgumentError(
            f"control directory {str(path)!r} is owned by another user (uid {info.st_uid}): "
            f"whoever can write it steers the run. Received: directory={str(given)!r}"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise InvalidArgumentError(
            f"control directory {str(path)!r} is writable by others "
            f"(mode {stat.S_IMODE(info.st_mode):o}): anyone could steer the run; run "
            f"`chmod go-w {path}`. Received: directory={str(given)!r}"
        )


def command_path(directory: Path, sequence: int) -> Path:
    """``DIR/commands/NNNNNNNN.json`` of command number ``sequence`` (1, 2, ...)."""
    return directory / COMMANDS / f"{sequence:0{_DIGITS}d}.json"


def next_sequence(directory: Path) -> int:
    """One more than the highest command number in ``DIR/commands`` (1 when none)."""
    highest = 0
    with os.scandir(directory / COMMANDS) as entries:
        for entry in entries:
            stem, _, ext = entry.name.partition(".")
            if ext == "json" and len(stem) == _DIGITS and stem.isdigit():
                highest = max(highest, int(stem))
    return highest + 1


def submit(directory: Path, command: dict[str, Any]) -> int:
    """Write ``command`` as the next numbered command file atomically; return its number.

    The JSON goes to a temporary file (flushed to disk), then ``os.link`` gives it the next
    free number: a number already taken by a concurrent writer fails the link, and the next
    one is tried. A reader never sees a partial command.
    """
    data = json.dumps(command, allow_nan=False, sort_keys=True).encode()
    tmp = directory / COMMANDS / f".tmp-{os.getpid()}-{time.monotonic_ns()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        for _ in range(10_000):
            sequence = next_sequence(directory)
            try:
                os.link(tmp, command_path(directory, sequence))
                return sequence
            except FileExistsError:
                continue
        raise InvalidArgumentError(  # pragma: no cover - 10,000 writers at once
            f"could not number a command in {str(directory)!r}. Received: command={command!r}"
        )
    finally:
        os.unlink(tmp)


def read_command(path: Path) -> dict[str, Any]:
    """The JSON object in command file ``path``.

    Raises:
        InvalidArgumentError: If it is too large, not UTF-8 JSON, or not an object.
    """
    with open(path, "rb") as f:
        data = f.read(MAX_COMMAND_BYTES + 1)
    if len(data) > MAX_COMMAND_BYTES:
        raise InvalidArgumentError(
            f"command file larger than {MAX_COMMAND_BYTES} bytes. Received: {path.name}"
        )
    try:
        command = json.loads(data.decode())
    except (UnicodeDecodeError, ValueError) as error:
        raise InvalidArgumentError(
            f"command is not valid JSON ({error}). Received: {data[:80]!r}"
        ) from None
    if not isinstance(command, dict):
        raise InvalidArgumentError(
            f"command must be a JSON object. Received: {type(command).__name__}"
        )
    return command


# ---- values -----------------------------------------------------------------------------
def parse_number(name: str, value: Any) -> float:
    """``value`` (a number, or its text) as a float that float32 holds: finite, at most
    ``FLOAT32_MAX`` in magnitude.

    Raises:
        InvalidArgumentError: Otherwise, naming ``name`` and the value.
    """
    number: float | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number) or abs(number) > FLOAT32_MAX:
        raise InvalidArgumentError(
            f"{name} needs a finite number within float32's range (|x| <= 3.4e38), e.g. "
            f"{name}=1e-4. Received: {name}={value!r}"
        )
    return number


def parse_schedule(name: str, text: Any) -> str:
    """Check that ``text`` is an ``hs.parse`` expression; return the schedule's ``repr``.

    The expression is parsed from its syntax tree with a whitelist (never evaluated as
    Python). Without Keras in the process the schedule is built on NumPy.

    Raises:
        InvalidArgumentError: If ``text`` is not a string or does not parse.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(
            f'{name} needs a schedule expression, e.g. {name}="cosine(1e-3, steps=1000)". '
            f"Received: {name}={text!r}"
        )
    from hyperstep.backends import numpy_ops

    numpy_ops.request()  # no Keras in a process that has not imported it
    from hyperstep.errors import HyperstepError
    from hyperstep.schedules.language import parse

    try:
        return repr(parse(text))
    except (HyperstepError, ArithmeticError, ValueError, TypeError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InvalidArgumentError(f"{name}: {reason}. Received: {name}={text!r}") from None


def check_command(command: Any, names: Any = None) -> dict[str, Any]:
    """Check a command object; return it normalized (numbers as floats, schedules as reprs).

    A command is ``{"verb": ..., ...}``: ``set``/``scale``/``schedule`` carry
    ``"values": {name: value}``, ``clear`` and ``cooldown`` ``"names": [...]``, any of them
    ``"at": step``; ``cooldown`` optional ``"steps"`` and ``"shape"``; ``stop`` nothing.

    Args:
        command: The decoded JSON object.
        names: The hyperparameter names that exist, or None to skip that check.

    Raises:
        InvalidArgumentError: One line naming what is wrong.
    """
    if not isinstance(command, dict):
        raise InvalidArgumentError(f"command must be an object. Received: {command!r}")
    verb = command.get("verb")
    if verb not in VERBS:
        raise InvalidArgumentError(f"unknown verb; one of {list(VERBS)}. Received: verb={verb!r}")
    out: dict[str, Any] = {"verb": verb}
    at = command.get("at")
    if at is not None:
        if isinstance(at, bool) or not isinstance(at, int) or not 0 <= at < 2**53:
            raise InvalidArgumentError(f"at must be a step, an integer >= 0. Received: at={at!r}")
        out["at"] = at
    if verb in ("set", "scale", "schedule"):
        values = command.get("values")
        if not isinstance(values, dict) or not values:
            raise InvalidArgumentError(
                f"{verb} needs at least one NAME=VALUE. Received: values={values!r}"
            )
        checked: dict[str, Any] = {}
        for name, value in values.items():
            _check_name(name, names)
            if verb == "schedule":
                checked[name] = parse_schedule(name, value)
            else:
                checked[name] = parse_number(name, value)
        out["values"] = checked
    elif verb in ("clear", "cooldown"):
        given = command.get("names", ["learning_rate"] if verb == "cooldown" else None)
        if not isinstance(given, list) or not given:
            raise InvalidArgumentError(f"{verb} needs at least one NAME. Received: names={given!r}")
        for name in given:
            _check_name(name, names)
        out["names"] = list(given)
        if verb == "cooldown":
            steps, shape = command.get("steps"), command.get("shape")
            if steps is not None:
                if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
                    raise InvalidArgumentError(
                        f"cooldown steps must be a positive integer. Received: steps={steps!r}"
                    )
                out["steps"] = steps
            if shape is not None:
                if shape not in SHAPES:
                    raise InvalidArgumentError(
                        f"cooldown shape must be one of {list(SHAPES)}. Received: shape={shape!r}"
                    )
                out["shape"] = shape
    return out


def _check_name(name: Any, names: Any) -> None:
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"a hyperparameter name must be a string. Received: {name!r}")
    if names is not None and name not in names:
        import difflib

        close = difflib.get_close_matches(name, list(names), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InvalidArgumentError(
            f"no hyperparameter {name!r} in this run{hint}; it has {sorted(names)}. "
            f"Received: {name!r}"
        )


# ---- journal and status -----------------------------------------------------------------
def append_journal(directory: Path, entry: dict[str, Any], name: str = JOURNAL) -> None:
    """Append ``entry`` as one JSON line to ``DIR/journal.jsonl`` (or ``DIR/name``: a
    worker other than the chief keeps its own) in one ``write`` with ``O_APPEND``: lines of
    concurrent writers never interleave."""
    entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **entry}
    line = (json.dumps(_finite(entry), sort_keys=False) + "\n").encode()
    fd = os.open(directory / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_journal(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The entries of a journal file, in order (a line that does not parse is skipped)."""
    entries = []
    with open(os.path.expanduser(os.fspath(path)), encoding="utf-8") as f:
        for line in f:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict):
                entries.append(entry)
    return entries


def write_status(directory: Path, status: dict[str, Any]) -> None:
    """Write ``DIR/status.json`` atomically (a temporary file, then ``os.replace``)."""
    tmp = directory / f".{STATUS}.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(_finite(status), f, indent=1)
    os.replace(tmp, directory / STATUS)


def read_status(directory: Path) -> dict[str, Any] | None:
    """The run's last ``status.json``, or None if it has not written one."""
    try:
        with open(directory / STATUS, encoding="utf-8") as f:
            status = json.load(f)
    except (OSError, ValueError):
        return None
    return status if isinstance(status, dict) else None


def _finite(value: Any) -> Any:
    """``value`` with every nan or inf float replaced by None (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
