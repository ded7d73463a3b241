"""``hyperstep show DIR``: what a run steered through ``DIR`` is doing.

Prints the run's step, every hyperparameter's value, schedule, scale and override (from the
``status.json`` its :class:`hyperstep.Remote` writes) and the last commands with the step
each took effect (from ``journal.jsonl``). Imports no Keras.
"""

from __future__ import annotations

import argparse
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
        help="how many commands to list (default 10)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print the status and the last commands of ``args.directory``; return the exit status."""
    from hyperstep.cli.steer import outcome
    from hyperstep.control import directory as protocol

    path = protocol.check_directory(args.directory)
    status = protocol.read_status(path)
    if status is None:
        print(f"{path}: no status yet (the run writes status.json once hs.Remote polls)")
    else:
        age = time.time() - float(status.get("time", 0.0))
        print(
            f"{path}: step {status.get('step')} ({status.get('state')}, pid {status.get('pid')}, "
            f"status {age:.1f} s old), last command applied: {status.get('applied')}"
        )
        rows = [("name", "value", "schedule", "scale", "override")]
        for name, hp in sorted(status.get("hyperparameters", {}).items()):
            override = hp.get("override")
            rows.append(
                (
                    name,
                    _number(hp.get("value")),
                    str(hp.get("schedule"))
                    + ("" if hp.get("cooldown") is None else f" (cooldown from {hp['cooldown']})"),
                    _number(hp.get("scale")),
                    "-" if override is None else _number(override),
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        for row in rows:
            print("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
    try:
        entries = protocol.read_journal(path / protocol.JOURNAL)
    except OSError:
        entries = []
    commands = [e for e in entries if "status" in e][-args.last :]
    print("last commands:" if commands else "no commands yet")
    for entry in commands:
        print("  " + outcome(entry))
    return 0


def _number(value: Any) -> str:
    return "-" if value is None else f"{float(value):.6g}"
