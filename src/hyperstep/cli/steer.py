"""``hyperstep set|scale|clear|schedule|cooldown|stop DIR ...``: steer a running job.

Each verb checks what it can without Keras (the directory, the command with
:func:`hyperstep.control.verbs.check_command`, the names in the run's last ``status.json``),
then writes one numbered command file that the run's :class:`hyperstep.Remote` applies at
its next step. What it answers when no live run holds ``DIR``, ``--queue`` and ``--wait``:
docs/steering.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from hyperstep.cli.arguments import positive_int
from hyperstep.control.verbs import MAX_STEP, VERBS, check_command

#: the verbs this module registers, in the order ``--help`` lists them
NAMES = tuple(VERBS)
_METAVARS = {"numbers": "NAME=VALUE", "schedules": "NAME=EXPR", "names": "NAME", None: None}


def register(subparsers: Any) -> None:
    """Add the six steering subcommands."""
    for verb in NAMES:
        what, takes, example = VERBS[verb].help, VERBS[verb].takes, VERBS[verb].example
        metavar = _METAVARS[takes]
        example = (
            f"e.g. {example}" if example else "default learning_rate" if verb == "cooldown" else ""
        )
        parser = subparsers.add_parser(
            verb,
            help=what,
            description=f"{what[0].upper()}{what[1:]}: writes a command into DIR (the "
            "directory given to hs.Remote) that the run applies at its next step.",
        )
        parser.add_argument("directory", metavar="DIR", help="the run's control directory")
        if metavar is not None:
            parser.add_argument(
                "items",
                nargs="*" if verb == "cooldown" else "+",
                metavar=metavar,
                help=f"{'a hyperparameter name' if metavar == 'NAME' else metavar} ({example}); "
                "a group's as group/name",
            )
        if verb == "cooldown":
            parser.add_argument(
                "--steps",
                type=positive_int,
                default=None,
                metavar="N",
                help="the cooldown's length: creates the hyperparameter's cooldown if it has "
                "no hs.Cooldown yet (else must match it)",
            )
            parser.add_argument(
                "--shape", default=None, help="its shape: 1-sqrt (default), linear, cosine, ..."
            )
        parser.add_argument(
            "--at",
            type=_step,
            default=None,
            metavar="STEP",
            help="take effect at this step instead of the next one",
        )
        parser.add_argument(
            "--queue",
            action="store_true",
            help="when no live run holds DIR (it ended, or has not started), queue the "
            "command for the next run of DIR instead of refusing",
        )
        if takes in ("numbers", "schedules"):
            parser.add_argument(
                "--force",
                action="store_true",
                help="allow a learning_rate of zero, below or not finite (refused without "
                "it; a schedule's where it takes effect)",
            )
        if takes == "schedules":
            parser.add_argument(
                "--from-now",
                action="store_true",
                help="`step` in EXPR counts from the step the command takes effect",
            )
        parser.add_argument(
            "--wait",
            type=float,
            default=None,
            metavar="SECONDS",
            help="wait up to SECONDS for the run to apply it; exit 1 if refused",
        )
        parser.set_defaults(func=run, verb=verb)


def _step(text: str) -> int:
    value = int(text) if text.strip().isdigit() else -1
    if not 0 <= value <= MAX_STEP:
        raise argparse.ArgumentTypeError(f"expected a step, an integer >= 0, got {text!r}")
    return value


def command_of(args: argparse.Namespace) -> dict[str, Any]:
    """The command object ``args`` describe (not yet checked)."""
    command: dict[str, Any] = {"verb": args.verb}
    items = getattr(args, "items", None) or []
    takes = VERBS[args.verb].takes
    if takes in ("numbers", "schedules"):
        values: dict[str, Any] = {}
        for item in items:
            name, sep, value = item.partition("=")
            if not sep or not name.strip():
                from hyperstep.errors import InvalidArgumentError

                raise InvalidArgumentError(
                    f"{args.verb} takes NAME=VALUE, e.g. learning_rate=1e-4. Received: {item!r}"
                )
            values[name.strip()] = value.strip()
        command["values"] = values
    elif takes == "names":
        if items:
            command["names"] = list(items)
    for key in ("steps", "shape", "at"):  # (cooldown's --steps and --shape)
        if getattr(args, key, None) is not None:
            command[key] = getattr(args, key)
    for flag in ("force", "from_now", "queue"):
        if getattr(args, flag, False):
            command["queued" if flag == "queue" else flag] = True
    return command


def run(args: argparse.Namespace) -> int:
    """Check and submit the command of ``args``; return the exit status."""
    from hyperstep.control import directory as protocol
    from hyperstep.errors import InvalidArgumentError

    path = protocol.check_directory(args.directory)
    command = command_of(args)
    status = protocol.read_status(path)
    live = protocol.held(path)
    if not live and not args.queue:
        print(f"{_not_live(path, status)}; --queue queues it for the next run", file=sys.stderr)
        return 1
    names = None if status is None or not live else status.get("hyperparameters")
    step = status.get("step") if status is not None and live else None
    try:
        checked = check_command(command, names, step if type(step) is int else None)
    except InvalidArgumentError as error:
        protocol.append_journal(
            path,
            {
                "seq": None,
                "by": "cli",
                "command": command,
                "status": "refused",
                "step": None,
                "reason": str(error).splitlines()[0],
            },
        )
        raise
    applied = status.get("applied") if status is not None else None
    after = applied + 1 if type(applied) is int and applied >= 0 else 1
    seq = protocol.submit(path, {**checked, "time": time.time()}, at_least=after)
    print(f"command {seq} queued: {describe(checked)}")
    if not live:
        print(f"note: {_not_live(path, status)}: the next run of it applies it")
        return 0
    if args.wait is None:
        return 0
    return _wait(path, seq, args.wait)


def _not_live(path: Path, status: dict[str, Any] | None) -> str:
    """``the run in DIR ended at step 215`` (or why no live run holds ``DIR``)."""
    state = None if status is None else status.get("state")
    if state in ("ended", "stopped"):
        return f"the run in {path} {state} at step {status.get('step')}"  # type: ignore[union-attr]
    if status is None:
        return f"no run holds {path} (no status yet: none started there)"
    return f"no run holds {path} (its last status: step {status.get('step')}, {state}; gone)"


def _wait(path: Path, seq: int, seconds: float) -> int:
    from hyperstep.control import directory as protocol

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            entries = protocol.read_journal(path / protocol.JOURNAL)
        except OSError:
            entries = []
        for entry in reversed(entries):
            if entry.get("seq") == seq and entry.get("by") != "cli":
                print(outcome(entry))
                return 1 if entry.get("status") == "refused" else 0
        time.sleep(0.05)
    print(f"command {seq}: not applied within {seconds:g} s (is the run alive?)", file=sys.stderr)
    return 1


def describe(command: Any) -> str:
    """``set learning_rate=0.0001`` from a command object."""
    if not isinstance(command, dict):
        return "(unreadable command)"
    parts = [str(command.get("verb"))]
    values = command.get("values")
    if isinstance(values, dict):
        parts += [f"{k}={v}" for k, v in values.items()]
    names = command.get("names")
    if isinstance(names, list):
        parts += [str(n) for n in names]
    for key in ("steps", "shape", "at"):
        if key in command:
            parts.append(f"--{key} {command[key]}")
    return " ".join(parts)


def outcome(entry: dict[str, Any]) -> str:
    """One line: ``#3 set learning_rate=0 -> applied at step 120``."""
    head = f"#{entry.get('seq') if entry.get('seq') is not None else '-'} "
    head += describe(entry.get("command"))
    status = entry.get("status")
    if status == "applied":
        return f"{head} -> applied at step {entry.get('step')}"
    if status == "pending":
        return f"{head} -> pending ({entry.get('reason')})"
    by = " by the CLI" if entry.get("by") == "cli" else ""
    return f"{head} -> refused{by}: {entry.get('reason')}"
