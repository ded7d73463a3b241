"""``hyperstep show DIR``: what a run steered through ``DIR`` is doing.

Prints the run's step (of its length, ``total``, where known), every hyperparameter's
value, schedule, scale and override (from the ``status.json`` its :class:`hyperstep.Remote`
writes) and the last commands with the step each took effect (from ``journal.jsonl``).
Imports no Keras.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from typing import Any

from hyperstep.cli.arguments import positive_int


def register(subparsers: Any) -> None:
    """Add the ``show`` subcommand."""
    parser = subparsers.add_parser(
        "show",
        help="show a steered run's step, hyperparameters and last commands",
        description="Show the step, every hyperparameter (value, schedule, scale, override) "
        "and the last commands of the run whose hs.Remote reads DIR.",
    )
    parser.add_argument("directory", metavar="DIR", help="the run's control directory")
    parser.add_argument(
        "--last",
        type=positive_int,
        default=10,
        metavar="N",
        help="how many commands to list",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the status and the last commands of ``args.directory``; return the exit status
    (0 also into a pipe closed early, as ``hyperstep show DIR | head -1``)."""
    try:
        return _show(args)
    except BrokenPipeError:  # the reader is gone: nothing more to say, and no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush goes there
        return 0


def _show(args: argparse.Namespace) -> int:
    from hyperstep.cli.steer import outcome
    from hyperstep.control import directory as protocol

    path = protocol.check_directory(args.directory)
    status = protocol.read_status(path)
    if status is None:
        print(f"{path}: no status yet (the run writes status.json once hs.Remote polls)")
    else:
        when = status.get("time")
        age = time.time() - (when if isinstance(when, (int, float)) else math.nan)
        total = f" of {status['total']}" if status.get("total") is not None else ""  # the run's
        print(
            escape(
                f"{path}: step {status.get('step')}{total} ({status.get('state')}, pid "
                f"{status.get('pid')}, status {age:.1f} s old), last command applied: "
                f"{status.get('applied')}"
            )
        )
        rows = [("name", "value", "schedule", "scale", "override")]
        found = status.get("hyperparameters")
        for name, hp in sorted((found if isinstance(found, dict) else {}).items()):
            if not isinstance(hp, dict):
                continue
            rows.append(
                (
                    name,
                    _number(hp.get("value")),
                    str(hp.get("schedule"))
                    + ("" if hp.get("cooldown") is None else f" (cooldown from {hp['cooldown']})"),
                    _number(hp.get("scale")),
                    _number(hp.get("override")),
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        for row in rows:
            cells = (cell.ljust(w) for cell, w in zip(row, widths, strict=True))
            print(escape("  " + "  ".join(cells)))
    try:
        entries = protocol.read_journal(path / protocol.JOURNAL)
    except OSError:
        entries = []
    commands = [e for e in entries if "status" in e][-args.last :]
    print("last commands:" if commands else "no commands yet")
    for entry in commands:
        print("  " + escape(outcome(entry)))
    return 0


def escape(text: str) -> str:
    r"""``text`` with every character that is not printable (a terminal's escape sequence, a
    line break, a lone surrogate) written as its Python escape: what ``show`` prints comes
    from files anyone who can write ``DIR`` wrote.

    Example:
        >>> escape("lr=0.1\x1b[2J\udc80")
        'lr=0.1\\x1b[2J\\udc80'
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _number(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.6g}" if isinstance(value, (int, float)) else repr(value)
