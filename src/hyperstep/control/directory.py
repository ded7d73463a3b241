"""The control directory of a run steered from outside: commands in, a journal and a status out.

A run started with :class:`hyperstep.Remote` reads numbered commands from ``DIR/commands/``
and writes ``DIR/journal.jsonl`` (every command, accepted or refused) and
``DIR/status.json``; the ``hyperstep`` steering commands write and read those files. This
module is the files' protocol, shared by both sides; it imports neither Keras nor a backend,
so the commands start fast. Its safety promises (who may write what, no link followed, no
FIFO blocking, atomic numbering, one live run per directory) are in docs/steering.md.
"""

from __future__ import annotations

import json
import math
import os
import stat
import time
import warnings
from pathlib import Path
from typing import Any

from hyperstep.errors import InvalidArgumentError

__all__ = [
    "COMMANDS",
    "JOURNAL",
    "LOCK",
    "STATUS",
    "WORKER_JOURNAL",
    "append_journal",
    "check_directory",
    "command_after",
    "command_path",
    "held",
    "hold",
    "loads",
    "next_sequence",
    "open_file",
    "read_command",
    "read_journal",
    "read_status",
    "submit",
    "write_status",
]

COMMANDS = "commands"
JOURNAL = "journal.jsonl"
STATUS = "status.json"
LOCK = ".lock"
#: the journal of worker ``index`` other than the chief (the chief's is ``JOURNAL``)
WORKER_JOURNAL = "journal.worker{index}.jsonl"
#: the largest command file read (a command is a few hundred bytes)
MAX_COMMAND_BYTES = 65536
#: the most digits of an integer in a command or journal line (2**64 has 20)
MAX_DIGITS = 20
_DIGITS = 8
#: opens that never follow a link nor block (0 where the platform lacks the flag)
_SAFE_OPEN = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_SAFE_OPEN |= getattr(os, "O_CLOEXEC", 0)


# ---- the directory ----------------------------------------------------------------------
def check_directory(directory: str | os.PathLike[str], *, create: bool = False) -> Path:
    """Return ``directory`` resolved (an absolute path, no link) once it is safe to steer
    a run through.

    With ``create``, a missing directory (and its ``commands/``) is created with mode 0700.

    Raises:
        InvalidArgumentError: If it does not exist (without ``create``), is not a directory,
            is owned by another user, is writable by its group or by everyone, or sits in a
            parent that others can write and that lacks the sticky bit (one line naming the
            problem and the ``chmod`` that fixes it).
    """
    path = Path(os.path.realpath(os.path.expanduser(os.fspath(directory))))
    _check_parent(path.parent, directory)
    for part in (path, path / COMMANDS):
        if create and not os.path.lexists(part):
            part.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(part, 0o700, follow_symlinks=False)
        _check_safe(part, directory)  # the directory first: nothing is created in an unsafe one
    return path


def _check_parent(parent: Path, given: Any) -> None:
    try:
        info = os.stat(parent)
    except OSError:
        return  # created with the directory (parents=True), by this user
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
        raise InvalidArgumentError(
            f"the parent of control directory, {str(parent)!r}, is writable by others "
            f"(mode {stat.S_IMODE(info.st_mode):o}) without the sticky bit: a neighbour "
            f"could move the directory away and put their own in its place; run `chmod +t "
            f"{parent}` or use a private parent. Received: directory={str(given)!r}"
        )


def _check_safe(path: Path, given: Any) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise InvalidArgumentError(
            f"control directory {str(path)!r} does not exist: start the run with "
            f"hs.Remote({str(given)!r}) first. Received: directory={str(given)!r}"
        ) from None
    if not stat.S_ISDIR(info.st_mode):
        raise InvalidArgumentError(
            f"control directory {str(path)!r} is not a directory. Received: directory={given!r}"
        )
    _check_owner(info, f"control directory {str(path)!r}", f"directory={str(given)!r}", path)


def _check_owner(info: os.stat_result, what: str, given: str, path: Any) -> None:
    """Refuse ``info`` owned by another user or writable by its group or everyone."""
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise InvalidArgumentError(
            f"{what} is owned by another user (uid {info.st_uid}): whoever can write it "
            f"steers the run. Received: {given}"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise InvalidArgumentError(
            f"{what} is writable by others (mode {stat.S_IMODE(info.st_mode):o}): anyone "
            f"could steer the run; run `chmod go-w {path}`. Received: {given}"
        )


def open_file(path: Path, flags: int = os.O_RDONLY) -> int:
    """``os.open(path, flags)`` never following a link nor blocking, for a regular file of
    this user writable only by them (created 0600 with ``os.O_CREAT``); return the fd.

    Raises:
        OSError: If it cannot be opened (a link: ``ELOOP``).
        InvalidArgumentError: If it is not such a file.
    """
    fd = os.open(path, flags | _SAFE_OPEN, 0o600)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidArgumentError(f"not a regular file. Received: {path.name}")
        _check_owner(info, f"file {path.name!r}", path.name, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of the file (see :func:`open_file`)."""
    fd = open_file(path)
    try:
        chunks, size = [], 0
        while size < limit:
            chunk = os.read(fd, limit - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def hold(directory: Path, wait: float = 1.0) -> int | None:
    """Take ``DIR/.lock`` for this process (``flock``, released when the returned fd is
    closed or the process ends) and write its pid there, trying for ``wait`` seconds; None
    where ``fcntl`` is missing (Windows: no lock).

    Raises:
        InvalidArgumentError: If a live process holds it, naming that process.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    fd = open_file(directory / LOCK, os.O_RDWR | os.O_CREAT)
    deadline = time.monotonic() + wait
    while True:  # a CLI's probe holds it for microseconds
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
                os.close(fd)
                raise InvalidArgumentError(
                    f"control directory {str(directory)!r} is held by the live run of process "
                    f"{holder}: one run per directory; give this run another one. "
                    f"Received: directory={str(directory)!r}"
                ) from None
            time.sleep(0.02)
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    return fd


def held(directory: Path) -> bool:
    """Whether a live run holds ``DIR`` (see :func:`hold`); True where it cannot tell."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return True
    try:
        fd = open_file(directory / LOCK)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the probe's own lock
    return False


def command_path(directory: Path, sequence: int) -> Path:
    """``DIR/commands/NNNNNNNN.json`` of command number ``sequence`` (1, 2, ...)."""
    return directory / COMMANDS / f"{sequence:0{_DIGITS}d}.json"


def _numbers(directory: Path) -> list[int]:
    numbers = []
    with os.scandir(directory / COMMANDS) as entries:
        for entry in entries:
            stem, _, ext = entry.name.partition(".")
            if ext == "json" and len(stem) == _DIGITS and stem.isdigit():
                numbers.append(int(stem))
    return numbers


def next_sequence(directory: Path, at_least: int = 1) -> int:
    """One more than the highest command number in ``DIR/commands``, at least ``at_least``."""
    return max([at_least - 1, *_numbers(directory)]) + 1


def command_after(directory: Path, sequence: int) -> int | None:
    """The lowest command number above ``sequence`` in ``DIR/commands``, or None."""
    return min((n for n in _numbers(directory) if n > sequence), default=None)


def submit(directory: Path, command: dict[str, Any], at_least: int = 1) -> int:
    """Write ``command`` as the next numbered command file atomically; return its number.

    The JSON goes to a temporary file (``O_EXCL``, 0600, flushed to disk), then ``os.link``
    gives it the next free number, at least ``at_least``: a number already taken by a
    concurrent writer fails the link, and the next one is tried. A reader never sees a
    partial command.
    """
    data = json.dumps(command, allow_nan=False, sort_keys=True).encode()
    tmp = directory / COMMANDS / f".tmp-{os.getpid()}-{time.monotonic_ns()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _SAFE_OPEN, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        for _ in range(10_000):
            sequence = next_sequence(directory, at_least)
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


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise InvalidArgumentError(
            f"an integer has more than {MAX_DIGITS} digits. Received: {text[:24]}..."
        )
    return int(text)


def loads(data: bytes | str) -> Any:
    """``json.loads`` with integers of at most ``MAX_DIGITS`` digits and a bounded depth.

    Raises:
        InvalidArgumentError: If ``data`` is not such UTF-8 JSON.
    """
    try:
        text = data.decode() if isinstance(data, bytes) else data
        return json.loads(text, parse_int=_bounded_int)
    except InvalidArgumentError:
        raise
    except RecursionError:
        raise InvalidArgumentError(f"JSON nested too deep. Received: {data[:40]!r}...") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise InvalidArgumentError(
            f"not valid JSON ({str(error)[:120]}). Received: {data[:80]!r}"
        ) from None


def read_command(path: Path) -> dict[str, Any]:
    """The JSON object in command file ``path`` (a regular file of this user, writable
    only by them, read without following a link or blocking).

    Raises:
        InvalidArgumentError: If it is not such a file, is too large, not UTF-8 JSON, or
            not an object.
        OSError: If it cannot be opened (a link: ``ELOOP``).
    """
    data = _read(path, MAX_COMMAND_BYTES + 1)
    if len(data) > MAX_COMMAND_BYTES:
        raise InvalidArgumentError(
            f"command file larger than {MAX_COMMAND_BYTES} bytes. Received: {path.name}"
        )
    try:
        command = loads(data)
    except InvalidArgumentError as error:
        raise InvalidArgumentError(f"command is {error}") from None
    if not isinstance(command, dict):
        raise InvalidArgumentError(
            f"command must be a JSON object. Received: {type(command).__name__}"
        )
    return command


# ---- journal and status -----------------------------------------------------------------
def append_journal(directory: Path, entry: dict[str, Any], name: str = JOURNAL) -> None:
    """Append ``entry`` as one JSON line to ``DIR/journal.jsonl`` (or ``DIR/name``: a
    worker other than the chief keeps its own) in one ``write`` with ``O_APPEND`` (created
    0600, never through a link): lines of concurrent writers never interleave."""
    entry = {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **entry}
    line = (json.dumps(_finite(entry), sort_keys=False) + "\n").encode()
    fd = open_file(directory / name, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def read_journal(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The entries of a journal file, in order; a line that is not UTF-8 JSON of an object
    is skipped, with one warning naming how many were (an unfinished last line, written as
    the run was killed, silently).

    Raises:
        OSError: If the file cannot be read.
    """
    entries, skipped = [], []
    with open(os.path.expanduser(os.fspath(path)), "rb") as f:
        lines = f.read().split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            entry = loads(line)
        except InvalidArgumentError:
            entry = None
        if isinstance(entry, dict):
            entries.append(entry)
        elif number < len(lines):  # the last piece has no newline: a line cut short
            skipped.append(number)
    if skipped:
        lines_named = ", ".join(map(str, skipped[:5])) + (", ..." if len(skipped) > 5 else "")
        warnings.warn(
            f"skipped {len(skipped)} line(s) of {os.fspath(path)!r} that are not JSON "
            f"objects (line {lines_named})",
            RuntimeWarning,
            stacklevel=2,
        )
    return entries


def write_status(directory: Path, status: dict[str, Any]) -> None:
    """Write ``DIR/status.json`` atomically: a temporary file (``O_EXCL``, 0600), then
    ``os.replace``."""
    tmp = directory / f".{STATUS}.{os.getpid()}.{time.monotonic_ns()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _SAFE_OPEN, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(_finite(status), f, indent=1)
        os.replace(tmp, directory / STATUS)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def read_status(directory: Path) -> dict[str, Any] | None:
    """The run's last ``status.json``, or None if it has not written one (or it is not a
    private regular file of this user holding a JSON object)."""
    try:
        status = loads(_read(directory / STATUS, 16 * MAX_COMMAND_BYTES))
    except (OSError, InvalidArgumentError):
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
