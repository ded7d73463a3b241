"""``hyperstep demo``: parse the arguments and launch :func:`hyperstep.demo.train`."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from typing import Any

from hyperstep.cli.arguments import UsageError, positive_int, quiet_stderr

#: exit status of a run stopped with Ctrl-C (128 + SIGINT, as shells report it)
INTERRUPTED = 130
#: the epochs of a default run (``hyperstep.demo.DEFAULT_EPOCHS``, without importing it)
DEFAULT_EPOCHS = 20
#: (module, package) the demo needs beyond hyperstep's own dependencies: the [demo] extras
_EXTRAS = (
    ("tensorflow", "tensorflow"),
    ("sklearn", "scikit-learn"),
    ("matplotlib", "matplotlib"),
    ("tensorboard", "tensorboard"),
)


def register(subparsers: Any) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="train a small model with schedules, a plateau controller and the doctor",
        description="Train an MLP on scikit-learn's 8x8 digits with AdamW: a warmup + cosine "
        "learning rate under ReduceOnPlateau, a scheduled weight decay, and a trainable "
        "temperature with its own learning rate; the doctor checks the model first. Writes "
        "metrics.csv, hyperparameters.csv, TensorBoard events, report.png and summary.json. "
        "Interrupted (Ctrl-C or kill), the same command resumes where it stopped.",
    )
    parser.add_argument("--out", default="runs/demo", help="run directory")
    parser.add_argument(
        "--epochs",
        type=positive_int,
        default=DEFAULT_EPOCHS,
        help="epochs",
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="start over, discarding a finished or interrupted run in --out",
    )
    parser.add_argument(
        "--control",
        default=None,
        metavar="DIR",
        help="steer the run from another shell through DIR (hs.Remote): "
        "hyperstep set DIR learning_rate=1e-4, hyperstep show DIR",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo from parsed command-line arguments; return the exit status (an error
    raises, for :func:`hyperstep.cli.main.main`'s exit status 2)."""
    missing = [package for module, package in _EXTRAS if importlib.util.find_spec(module) is None]
    if missing:
        raise UsageError(
            f"the demo needs {', '.join(missing)}, not installed here. Install the demo "
            "extras: pip install 'hyperstep[demo]' (or `make demo` in a checkout)."
        )
    from hyperstep.demo import train

    try:
        with quiet_stderr():
            summary = train(
                args.out, args.epochs, args.seed, fresh=args.fresh, control=args.control
            )
    except KeyboardInterrupt:  # before training started: nothing to keep
        print("\nhyperstep demo: interrupted before training started.", file=sys.stderr)
        return INTERRUPTED
    command = _command(args)
    if summary["status"] == "interrupted":
        if summary["epoch"] == 0:
            print(f"\nhyperstep demo: interrupted in the first epoch; `{command}` starts over.")
        else:
            print(
                f"\nhyperstep demo: interrupted. {args.out} holds the run after epoch "
                f"{summary['epoch']} (step {summary['step']}); run `{command}` again to resume "
                "from there."
            )
        return INTERRUPTED
    if summary["status"] == "already-complete":
        print(f"{args.out} holds a finished run (add --fresh to train again):")
    _print_summary(summary)
    return 0


def _print_summary(summary: dict[str, Any]) -> None:
    from hyperstep.demo.report import reduction_lines, steering_lines

    accuracy, target = summary["val_accuracy"], summary["target_accuracy"]
    met = "target met" if accuracy >= target else "BELOW TARGET"
    resumed = summary.get("resumed_from")
    session = f" (this session, resumed after epoch {resumed['epoch']})" if resumed else ""
    print(
        f"validation accuracy {accuracy:.1%} ({met}: >= {target:.0%}) after "
        f"{summary['epochs']} epochs ({summary['steps']} steps) in {summary['seconds']} s"
        f"{session}; temperature {summary['temperature']:.3f}"
    )
    for line in reduction_lines(summary["plateau_reductions"]) + steering_lines(
        summary.get("overrides", []), summary.get("commands", [])
    ):
        print(line)
    doctor = "no findings" if summary["doctor"]["ok"] else "FINDINGS (see summary.json)"
    print(f"pre-flight doctor: {doctor}")
    width = max(len(role) for role in summary["files"])
    for role, path in summary["files"].items():
        print(f"  {role:<{width}}  {path}")
    print(f"  view with: tensorboard --logdir {summary['files']['tensorboard']}")


def _command(args: argparse.Namespace) -> str:
    parts = ["hyperstep demo", f"--out {args.out}"]
    if args.epochs != DEFAULT_EPOCHS:
        parts.append(f"--epochs {args.epochs}")
    if args.seed != 0:
        parts.append(f"--seed {args.seed}")
    if args.control is not None:
        parts.append(f"--control {args.control}")
    return " ".join(parts)
