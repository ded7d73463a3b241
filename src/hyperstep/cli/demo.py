"""``hyperstep demo``: a real training run that uses every piece of hyperstep, resumable.

An MLP learns scikit-learn's bundled 8x8 digits (1,797 images; nothing is downloaded),
its logits divided by a trainable ``temperature``. One :class:`hyperstep.StepOptimizer`
(AdamW) on one :class:`hyperstep.Clock` runs:

* ``learning_rate = warmup(cosine(...))`` times the scale :class:`hyperstep.ReduceOnPlateau`
  lowers when ``val_loss`` stalls (the schedule keeps running underneath);
* ``weight_decay = linear(0, 0.05)`` over the run;
* the group ``temperature`` (the temperature variable) with its own learning rate
  schedule and no weight decay.

Before training :func:`hyperstep.doctor` checks that every variable trains. Keras's
progress bar shows the run; ``OUT`` (default ``runs/demo``) receives ``metrics.csv``
(per epoch), ``hyperparameters.csv`` (per step, from
:class:`hyperstep.callbacks.LogHyperparameters`), TensorBoard events, ``report.png``,
``model.weights.h5`` and ``summary.json``.

Stopping the run (Ctrl-C, or a kill) and typing the same command again resumes after the
last complete epoch and ends with the same trajectories and bit-identical weights as an
uninterrupted run: the data order is a fixed permutation per epoch, ops are deterministic,
and the clock, hyperparameters and plateau state are optimizer variables saved with the
weights (:mod:`hyperstep.cli.demo_state`). A finished run is not trained again; ``--fresh``
starts over.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any

from hyperstep.cli.demo_model import (
    DEFAULT_EPOCHS,
    TARGET_ACCURACY,
    build_model,
    build_training,
    load_data,
    schedules,
)
from hyperstep.cli.demo_state import FILES
from hyperstep.cli.demo_train import train

#: exit status of a run stopped with Ctrl-C (128 + SIGINT, as shells report it)
INTERRUPTED = 130
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
    parser.add_argument("--out", default="runs/demo", help="run directory (default runs/demo)")
    parser.add_argument(
        "--epochs", type=_positive_int, default=DEFAULT_EPOCHS, help="epochs (default 20)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="start over, discarding a finished or interrupted run in --out",
    )
    # for the resume test: SIGKILL this process when the clock reaches this step
    parser.add_argument("--kill-at-step", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--kill-signal", default="SIGKILL", help=argparse.SUPPRESS)
    # for the resume test: a plateau threshold that makes reductions depend on saved state
    parser.add_argument("--plateau-min-delta", type=float, default=None, help=argparse.SUPPRESS)
    # for fast tests: train on the first N training images only
    parser.add_argument("--train-size", type=_positive_int, default=None, help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the demo from parsed command-line arguments; return the exit status."""
    from hyperstep.errors import HyperstepError

    missing = [package for module, package in _EXTRAS if importlib.util.find_spec(module) is None]
    if missing:
        print(
            f"hyperstep demo: error: the demo needs {', '.join(missing)}, not installed here. "
            "Install the demo extras: pip install 'hyperstep[demo]' (or `make demo` in a "
            "checkout).",
            file=sys.stderr,
        )
        return 2
    out = Path(args.out)
    try:
        summary = train(
            out,
            args.epochs,
            args.seed,
            fresh=args.fresh,
            kill_at_step=args.kill_at_step,
            kill_signal=args.kill_signal,
            plateau_min_delta=args.plateau_min_delta,
            train_size=args.train_size,
        )
    except HyperstepError as error:
        print(f"hyperstep demo: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before training started: nothing to keep
        print("\nhyperstep demo: interrupted before training started.", file=sys.stderr)
        return INTERRUPTED
    command = _command(args)
    if summary["status"] == "interrupted":
        if summary["epoch"] == 0:
            print(f"\nhyperstep demo: interrupted in the first epoch; `{command}` starts over.")
        else:
            print(
                f"\nhyperstep demo: interrupted. {out} holds the run after epoch "
                f"{summary['epoch']} (step {summary['step']}); run `{command}` again to resume "
                "from there."
            )
        return INTERRUPTED
    if summary["status"] == "already-complete":
        print(f"{out} holds a finished run (add --fresh to train again):")
    _print_summary(summary)
    return 0


def _print_summary(summary: dict[str, Any]) -> None:
    accuracy = summary["val_accuracy"]
    met = "target met" if accuracy >= TARGET_ACCURACY else "BELOW TARGET"
    resumed = summary.get("resumed_from")
    session = f" (this session, resumed after epoch {resumed['epoch']})" if resumed else ""
    reductions = summary["plateau_reductions"]
    steps = ", ".join(str(r["step"]) for r in reductions)
    print(
        f"validation accuracy {accuracy:.1%} ({met}: >= {TARGET_ACCURACY:.0%}) after "
        f"{summary['epochs']} epochs ({summary['steps']} steps) in {summary['seconds']} s"
        f"{session}; temperature {summary['temperature']:.3f}; ReduceOnPlateau lowered the "
        f"learning rate {len(reductions)} time{'s' * (len(reductions) != 1)}"
        + (f" (from steps {steps})" if reductions else "")
    )
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
    return " ".join(parts)


def _positive_int(text: str) -> int:
    from hyperstep.cli.plot import _positive_int as check

    return check(text)


__all__ = [
    "FILES",
    "TARGET_ACCURACY",
    "build_model",
    "build_training",
    "load_data",
    "register",
    "run",
    "schedules",
    "train",
]
