"""Does the range test's suggestion train well? Each rule's rate against a log-spaced grid.

For each problem (``benchmarks/_lr_problems.py``: an MLP regression, an MLP and a small CNN
on scikit-learn's digits, an embedding model on generated token sequences; each with SGD
with momentum and with Adam or AdamW) and each seed, from the same initial weights:

- ``hs.find_lr`` with its defaults (1e-8 to 1, 100 steps of batch 32) gives the finding;
- each rule's learning rate, and each rate of a log-spaced grid (``--per-decade`` a
  decade, 1e-4 to 1), trains the model for ``--epochs`` epochs of batch 32 in the same
  order; the loss on the whole training set afterwards is the rate's loss.

The rules: hyperstep's headline ``suggestion()`` (the minimum of the centred smoothed loss
divided by a factor); ``steepest()``, hyperstep's earlier headline (the steepest fall of
the averaged loss along log(lr), as Lightning before 2.5.3 and in its PR 21171);
``steepest(compat="lightning")``, Lightning 2.5.3+'s ``suggestion`` (the steepest fall
along lr; tested against Lightning itself in tests/tune/test_lr_find_parity.py) and
``valley()``, fastai's (tested against its published source there too).

It prints, per problem, each rule's loss divided by the grid's best loss: the geometric
mean over the seeds and the worst seed. Goal: hyperstep's headline within 1.5x on every
problem and never worse than the better of Lightning's and fastai's.

Run: ``python benchmarks/lr_find_quality.py [--seeds 3] [--epochs 2] [--per-decade 3]``
(``KERAS_BACKEND``: TensorFlow by default; 14 minutes on 2 cores shared with other jobs).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).parent))

import keras
import numpy as np
from _lr_problems import problems
from _lr_trainer import Trainer

RULES = {
    "hyperstep": lambda finding: finding.suggestion(),
    "steepest (old)": lambda finding: finding.steepest(),
    "lightning": lambda finding: finding.steepest(compat="lightning"),
    "fastai valley": lambda finding: finding.valley(),
}
GOAL = 1.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--per-decade", type=int, default=3, help="grid rates a decade")
    parser.add_argument("--only", default="", help="problems whose name contains this")
    args = parser.parse_args()
    grid = 10.0 ** np.arange(-4, 1e-9, 1 / args.per_decade)
    print(
        f"backend {keras.backend.backend()}, {args.seeds} seeds, {args.epochs} epochs of "
        f"batch 32, grid {grid[0]:.0e} to {grid[-1]:.0e} ({len(grid)} rates)"
    )
    table: dict[str, dict[str, list[float]]] = {}
    start = time.perf_counter()
    for problem in problems():
        if args.only not in problem.name:
            continue
        ratios: dict[str, list[float]] = {rule: [] for rule in RULES}
        for seed in range(args.seeds):
            trainer = Trainer(problem, seed, args.epochs)
            finding = trainer.find_lr()
            best = min(trainer.train(float(rate)) for rate in grid)
            rates = {rule: rule_of(finding) for rule, rule_of in RULES.items()}
            for rule, rate in rates.items():
                loss = np.inf if rate is None else trainer.train(rate)
                ratios[rule].append(loss / best)
            shown = "  ".join(f"{rule} {rate:.2g}" for rule, rate in rates.items() if rate)
            noisy = "  (noisy)" if finding.warning else ""
            print(f"  {problem.name} seed {seed}: {shown}{noisy}", flush=True)
        table[problem.name] = ratios
    print("\nloss / the grid's best loss: geometric mean over seeds (worst seed)")
    print(f"{'problem':28s}" + "".join(f"{rule:>20s}" for rule in RULES))
    missed = []
    for name, ratios in table.items():
        means = {rule: _geometric_mean(values) for rule, values in ratios.items()}
        cells = [f"{means[rule]:.2f} ({max(values):.2f})" for rule, values in ratios.items()]
        print(f"{name:28s}" + "".join(f"{cell:>20s}" for cell in cells))
        peers = min(means["lightning"], means["fastai valley"])
        if not means["hyperstep"] <= min(GOAL, peers):
            missed.append(f"{name} ({means['hyperstep']:.3f}x)")
    print(
        f"goal (hyperstep <= {GOAL}x and <= the better of lightning and fastai on every "
        f"problem): {'not met on ' + ', '.join(missed) if missed else 'met'}; "
        f"{time.perf_counter() - start:.0f} s"
    )


def _geometric_mean(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(values))))


if __name__ == "__main__":
    main()
