"""The demo's run directory: its files, its checkpoint, and what resuming keeps.

A checkpoint is written at the end of every epoch: the model's weights together with the
optimizer's (which hold the clock, every hyperparameter's scale/override and the plateau
controller's ``best``/``wait``/``cooldown``) in ``checkpoint/epoch-K.weights.h5``, then
``checkpoint/state.json`` naming it, replaced atomically. A run killed at any point
therefore resumes from the last complete epoch; rows the logs got after it are dropped
(:func:`truncate_logs`), so the resumed files equal an uninterrupted run's.

Before resuming, :func:`latest_checkpoint`, :func:`check_logs` and :func:`load_checkpoint`
check that the files agree (``state.json`` well formed, the weights loadable, the CSV files
holding every row up to the checkpoint); a damaged file raises :class:`DamagedRunError`
naming it. :func:`locked` keeps a second run out of the directory while one trains.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperstep.errors import InvalidArgumentError
from hyperstep.schedules.base import is_number

#: the lock file a training run holds in its directory
LOCK = ".hyperstep-demo.lock"

#: the files and folders a run writes (and ``--fresh`` removes), by role
FILES = {
    "metrics": "metrics.csv",
    "hyperparameters": "hyperparameters.csv",
    "tensorboard": "tensorboard",
    "report": "report.png",
    "summary": "summary.json",
    "weights": "model.weights.h5",
    "checkpoint": "checkpoint",
}


class DamagedRunError(InvalidArgumentError):
    """A file of an interrupted run is damaged; the message names it and ``--fresh``."""

    def __init__(self, path: Path, problem: str) -> None:
        run = path.parent.parent if path.parent.name == "checkpoint" else path.parent
        super().__init__(
            f"{path} is damaged ({problem}), so the run in {run} cannot resume. Pass --fresh "
            "to start over (it removes the run's files), or another --out."
        )
        self.path = path


@contextlib.contextmanager
def locked(out: Path) -> Iterator[None]:
    """Create ``out`` if needed and hold its lock file while inside.

    Raises:
        InvalidArgumentError: ``out`` is not a directory, or another run holds the lock.
    """
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InvalidArgumentError(
            f"cannot use {out} as the run directory: {error.strerror or error}. "
            "Pass --out with a directory path."
        ) from None
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no advisory locks
        yield
        return
    with open(out / LOCK, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            owner = handle.read().strip() or "?"
            raise InvalidArgumentError(
                f"another hyperstep demo (process {owner}) is training in {out}; wait for it "
                "to finish, or pass another --out."
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Checkpoint:
    """Where an interrupted run stopped: ``epoch`` epochs and ``step`` updates done."""

    epoch: int
    step: int
    weights: Path
    config: dict[str, Any]


def paths(out: Path) -> dict[str, Path]:
    """Return ``{role: path}`` for the files of the run directory ``out``."""
    return {role: out / name for role, name in FILES.items()}


def read_json(path: Path) -> dict[str, Any] | None:
    """Return the JSON object in ``path``, or None if it is missing.

    Raises:
        DamagedRunError: The file exists but is not a JSON object.
    """
    if not path.exists():
        return None
    try:
        value = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise DamagedRunError(path, f"not readable as JSON: {error}") from None
    if not isinstance(value, dict):
        raise DamagedRunError(path, f"holds a {type(value).__name__}, not an object")
    return value


#: the numbers of a finished run's summary.json that ``hyperstep demo`` prints again, by
#: section (``""``: the top level; else each item of that list); ``held`` may be null
PRINTED = {
    "": ("val_accuracy", "target_accuracy", "epochs", "steps", "seconds", "temperature"),
    "plateau_reductions": ("epoch", "step", "scale_before", "scale", "held"),
    "overrides": ("value", "from_step", "to_step"),
}


def read_summary(path: Path) -> dict[str, Any] | None:
    """Return a run's ``summary.json`` (None if missing), a finished run's printed numbers
    checked.

    Raises:
        DamagedRunError: The file is not a JSON object, or a printed number is missing, not
            a number, not finite, or not below 2**63.
    """
    summary = read_json(path)
    if summary is None or summary.get("status") != "complete":
        return summary
    for section, keys in PRINTED.items():
        items = summary.get(section) if section else [summary]
        if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
            raise DamagedRunError(path, f"{section!r} is {items!r}, not a list of objects")
        for index, item in enumerate(items):
            check_numbers(path, item, keys, f"{section}/{index}/" if section else "")
    return summary


def check_numbers(path: Path, found: dict[str, Any], keys: Any, prefix: str = "") -> None:
    """Refuse, naming ``path`` and the field, a value of ``found`` at ``keys`` that is not a
    finite number below 2**63 in size (``held`` may be null)."""
    for key in keys:
        value: Any = found.get(key)
        if not (is_number(value) and abs(value) < 2**63) and not (key == "held" and value is None):
            field = f"{prefix}{key}"
            raise DamagedRunError(path, f"{field!r} is {value!r}, not a number below 2**63")


def write_json(path: Path, value: dict[str, Any]) -> None:
    """Write ``value`` to ``path`` atomically (a temporary file, then ``os.replace``)."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(value, indent=2) + "\n")
    os.replace(temporary, path)


def latest_checkpoint(out: Path) -> Checkpoint | None:
    """Return the last complete epoch's checkpoint in ``out``, or None."""
    folder = paths(out)["checkpoint"]
    path = folder / "state.json"
    state = read_json(path)
    if state is None:
        return None
    epoch, step, name, config = (state.get(k) for k in ("epoch", "step", "weights", "config"))
    for key, value, kind in (("epoch", epoch, int), ("step", step, int), ("config", config, dict)):
        if isinstance(value, bool) or not isinstance(value, kind):
            raise DamagedRunError(path, f"{key!r} is {value!r}, not a {kind.__name__}")
    for key, value in (("epoch", epoch), ("step", step)):
        if value >= 2**63:  # type: ignore[operator]
            digits = len(str(value))
            raise DamagedRunError(path, f"{key!r} is a {digits}-digit number, above 2**63 - 1")
    check_numbers(path, config, list(config), "config/")  # type: ignore[arg-type]
    if epoch < 1 or step < epoch:  # type: ignore[operator]
        raise DamagedRunError(path, f"epoch {epoch} and step {step} do not fit together")
    weights = folder / str(name)
    if not isinstance(name, str) or not weights.is_file():
        raise DamagedRunError(path, f"it names the weights file {name!r}, which is missing")
    return Checkpoint(epoch, step, weights, dict(config))  # type: ignore[arg-type]


def load_checkpoint(model: Any, out: Path, checkpoint: Checkpoint) -> None:
    """Load the checkpoint's weights (model and optimizer) into ``model``.

    Raises:
        DamagedRunError: The weights file cannot be read or does not fit the model.
    """
    try:
        model.load_weights(checkpoint.weights)
    except Exception as error:
        problem = f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"
        raise DamagedRunError(checkpoint.weights, problem) from None


def check_logs(out: Path, checkpoint: Checkpoint) -> None:
    """Check that the CSV files hold every row up to the checkpoint, in order.

    ``metrics.csv`` must have the epochs ``0 .. epoch - 1`` and ``hyperparameters.csv`` the
    steps ``0 .. step - 1`` (later rows, written after the checkpoint, are dropped on resume).

    Raises:
        DamagedRunError: A file is missing, has no header, lacks rows, or has a cell that is
            not a number.
    """
    files = paths(out)
    for role, column, stop in (
        ("metrics", "epoch", checkpoint.epoch),
        ("hyperparameters", "step", checkpoint.step),
    ):
        path = files[role]
        try:
            with open(path, newline="") as f:
                rows = list(csv.reader(f))
        except (OSError, UnicodeDecodeError, csv.Error) as error:
            raise DamagedRunError(path, f"not readable: {error}") from None
        if not rows or column not in rows[0]:
            raise DamagedRunError(path, f"no header with a {column!r} column")
        index, body = rows[0].index(column), [r for r in rows[1:] if len(r) == len(rows[0])]
        for name, cell in ((n, c) for row in body for n, c in zip(rows[0], row, strict=True)):
            try:
                float(cell or "nan")  # (an empty cell: a value not set)
            except ValueError:
                problem = f"a {name!r} cell is not a number: {cell[:40]!r}"
                raise DamagedRunError(path, problem) from None
        try:
            seen = [int(float(r[index])) for r in body]
        except (ValueError, OverflowError) as error:
            raise DamagedRunError(path, f"a {column!r} cell is not a number: {error}") from None
        kept = [v for v in seen if v < stop]
        if len(kept) != stop or kept != list(range(stop)):
            raise DamagedRunError(path, f"it should hold {column}s 0 .. {stop - 1} in order")


def save_checkpoint(model: Any, out: Path, epoch: int, step: int, config: dict[str, Any]) -> None:
    """Save the weights after ``epoch`` epochs (``step`` updates), then point state.json at
    them; older weight files are removed only once the new state is in place."""
    folder = paths(out)["checkpoint"]
    folder.mkdir(parents=True, exist_ok=True)
    name = f"epoch-{epoch:04d}.weights.h5"
    model.save_weights(folder / name)
    write_json(
        folder / "state.json",
        {"epoch": epoch, "step": step, "weights": name, "config": config},
    )
    for old in folder.glob("epoch-*.weights.h5"):
        if old.name != name:
            old.unlink()


def truncate_logs(out: Path, epoch: int, step: int) -> None:
    """Drop the log rows written after the checkpoint (epoch ``epoch``, step ``step``): each
    CSV file keeps its header and the rows whose epoch (or step) is below."""
    files = paths(out)
    for path, column, stop in (
        (files["metrics"], "epoch", epoch),
        (files["hyperparameters"], "step", step),
    ):
        rows = []
        if path.is_file():
            with open(path, newline="") as f:
                rows = list(csv.reader(f))
        if not rows:
            continue
        index = rows[0].index(column)
        kept = [r for r in rows[1:] if len(r) == len(rows[0]) and int(float(r[index])) < stop]
        temporary = path.with_name(path.name + ".tmp")
        with open(temporary, "w", newline="") as f:
            csv.writer(f).writerows([rows[0], *kept])
        os.replace(temporary, path)


def clear(out: Path, roles: Iterable[str] = FILES) -> None:
    """Remove the files a run writes (and only those) from ``out``: all, or those of ``roles``."""
    for role in roles:
        path = paths(out)[role]
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
