"""Whole-process start-up of the command line: ``hyperstep --help`` and ``plot --text``.

Each command runs as a fresh process (``python -m hyperstep ...``), interleaved with the
baseline ``python -c "import numpy"`` (the least a NumPy program pays), repeats times;
printed: min / median / max wall seconds of each, and the ratio to the baseline, pair by
pair. Targets on an idle 2-core machine: ``--help`` <= 0.5 s, ``plot --text`` <= 1.5 s.

Run: ``python benchmarks/cli_startup.py [--repeats R]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
PLOT = ["plot", "warmup(cosine(1e-3, steps=1000), steps=100)", "--steps", "1200", "--text"]
COMMANDS = {
    "hyperstep --help": ([sys.executable, "-m", "hyperstep", "--help"], 0.5),
    "hyperstep plot ... --text": ([sys.executable, "-m", "hyperstep", *PLOT], 1.5),
}
BASELINE = [sys.executable, "-c", "import numpy"]


def wall(command: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - started


def spread(values: list[float], unit: str = " s") -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"min {low:.3f}{unit}  median {mid:.3f}{unit}  max {high:.3f}{unit}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    wall(BASELINE)  # warm the file cache
    for command, _ in COMMANDS.values():
        wall(command)
    times: dict[str, list[float]] = {name: [] for name in [*COMMANDS, "import numpy"]}
    ratios: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeats):
        for name, (command, _target) in COMMANDS.items():
            base = wall(BASELINE)
            ours = wall(command)
            times["import numpy"].append(base)
            times[name].append(ours)
            ratios[name].append(ours / base)
    print(f"{args.repeats} interleaved runs each, whole process, wall time")
    print(f"  python -c 'import numpy'    {spread(times['import numpy'])}")
    for name, (_command, target) in COMMANDS.items():
        met = "met" if statistics.median(times[name]) <= target else "MISSED"
        print(f"  {name:<27} {spread(times[name])}  (target <= {target} s: {met})")
        print(f"  {'  ratio to import numpy':<27} {spread(ratios[name], unit='x')}")


if __name__ == "__main__":
    main()
