"""The ``hyperstep`` command line: ``hyperstep plot``, ``hyperstep doctor``, ``hyperstep demo``.

Each subcommand lives in its own module exposing ``register(subparsers)``, which adds the
subcommand's parser and sets ``func`` (``args -> exit status``) as its default.
"""

from __future__ import annotations

import argparse
import sys

from hyperstep.cli import demo, doctor, lr_find, plot

#: the subcommand modules, in the order ``--help`` lists them
COMMANDS = (plot, doctor, lr_find, demo)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand registered."""
    from hyperstep import __version__

    parser = argparse.ArgumentParser(
        prog="hyperstep",
        description="The training step, first-class in Keras 3: plot schedules, check why "
        "variables do not train, run the demo.",
    )
    parser.add_argument("--version", action="version", version=f"hyperstep {__version__}")
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND")
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status.

    Usage errors and bad expressions return 2 with a message on stderr, never a traceback.

    Example:
        >>> main(["--version"])  # doctest: +ELLIPSIS
        hyperstep ...
        0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit:  # argparse exits on --help, --version and usage errors
        code = exit.code
        if isinstance(code, int):
            return code
        return 0 if code is None else 2
    func = getattr(args, "func", None)
    if func is None:
        parser.print_usage(sys.stderr)
        print("hyperstep: error: choose a command: plot, doctor or demo", file=sys.stderr)
        return 2
    return int(func(args))
