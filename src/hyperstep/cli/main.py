"""The ``hyperstep`` command line: ``hyperstep plot``, ``doctor``, ``lr-find``, ``demo``,
and the verbs that steer a running job (``set``, ..., ``show``).

Each subcommand lives in its own module exposing ``register(subparsers)``, which adds the
subcommand's parser and sets ``func`` (``args -> exit status``) as its default (a module
that registers several, such as ``steer``, lists them in ``NAMES``). Parsing
imports no backend, and a command checks every argument before it imports Keras (only
when it runs and needs it); a usage error is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import sys

from hyperstep.cli import demo, doctor, lr_find, plot, show, steer
from hyperstep.cli.arguments import Parser, UsageError

#: the subcommand modules, in the order ``--help`` lists them
COMMANDS = (plot, doctor, lr_find, demo, steer, show)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand registered."""
    from hyperstep import __version__

    parser = Parser(
        prog="hyperstep",
        description="The training step, first-class in Keras 3: plot schedules (plot), "
        "explain why variables do not train (doctor), find a learning rate with a range test "
        "(lr-find), run the demo (demo), and steer a running job from another shell (set, "
        "scale, clear, schedule, cooldown, stop; show to look). `hyperstep COMMAND --help` "
        "describes each. Exit status: 0 done, 1 findings (doctor), 2 a usage error (one line "
        "on stderr).",
    )
    parser.add_argument("--version", action="version", version=f"hyperstep {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def command_names(module: object) -> tuple[str, ...]:
    """The subcommands ``module`` registers: its ``NAMES``, else its own name (``lr-find``)."""
    default = (getattr(module, "__name__", "").rsplit(".", 1)[-1].replace("_", "-"),)
    return tuple(getattr(module, "NAMES", default))


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    Usage errors, bad expressions and unusable files return 2 with one line on stderr
    (``hyperstep COMMAND: error: ...``), never a traceback; Ctrl-C returns 130.

    Example:
        >>> main(["--version"])  # doctest: +ELLIPSIS
        hyperstep ...
        0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit:  # argparse exits on --help, --version and usage errors
        return int(exit.code or 0)  # (argparse's status, an int)
    func = getattr(args, "func", None)
    if func is None:
        names = [name for c in COMMANDS for name in command_names(c)]
        print(f"hyperstep: error: choose a command: {', '.join(names)}", file=sys.stderr)
        return 2
    from hyperstep.errors import HyperstepError

    name = getattr(args, "verb", None) or command_names(sys.modules[func.__module__])[0]
    try:
        return int(func(args))
    except (UsageError, HyperstepError, OSError) as error:
        print(f"hyperstep {name}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nhyperstep: interrupted", file=sys.stderr)
        return 130
