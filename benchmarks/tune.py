"""Per-report overhead of ``hs.tune.trainable`` against a hand-written Ray function trainable.

Both train the demo's digits model (MLP 64-128-64-10 with a temperature, the demo's
``StepOptimizer`` and schedules) one epoch per report on a local Ray instance, with the
config's learning rate set as an override, and report ``fit``'s logs:

* ``function``  the minimal hand-written trainable: ``build(config)``, ``hp.set(...)``, then
                ``model.fit(epochs=1)`` and ``tune.report(logs)`` in a loop;
* ``class``     the same as a minimal hand-written class ``Trainable`` (``step`` = one fit),
                Ray's path for the adapter: separates Ray's class/function paths from the
                adapter's own work;
* ``hyperstep`` ``hs.tune.trainable(build, data)``: the same fit per report, plus the
                hyperparameters' values, the clock's step and Ray's class-trainable path.

The time per report is Ray's ``time_this_iter_s`` (the first report, which traces the step,
is dropped). Each repeat runs all three (in rotating order), one Tuner each. Prints
min/median/max seconds per report, the ratio of medians and the median of ratios paired
within each repeat. Target: ratio <= 1.1.

On a shared machine the spread between Ray runs is larger than the adapter's work, so the
script also times the same two report bodies in this process, interleaved report by report
(the adapter's ``Member.train`` against ``hp.set`` + ``model.fit`` + the logs dict), which
isolates what the adapter adds (reading and applying the config, reading each
hyperparameter's value, the clock) from Ray's scheduling.

Usage: python benchmarks/tune.py [--repeats N] [--reports N] [--skip-ray]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import pbt_digits  # examples/pbt_digits.py: the demo's model, data and optimizer

import hyperstep as hs

TARGET = 1.1
CONFIG = {"learning_rate": 2e-3}


def function_trainable(config: dict) -> None:
    """The minimal hand-written Ray function trainable."""
    from ray import tune

    model = pbt_digits.build(config)
    model.optimizer.hyperparameters["learning_rate"].set(config["learning_rate"])
    data = pbt_digits.data()
    for epoch in range(10**9):
        history = model.fit(**data, initial_epoch=epoch, epochs=epoch + 1, verbose=0)
        tune.report({k: float(v[-1]) for k, v in history.history.items()})


def class_trainable() -> type:
    """The minimal hand-written Ray class trainable (Ray's path for ``hs.tune.trainable``)."""
    from ray import tune

    class Minimal(tune.Trainable):  # type: ignore[misc]
        def setup(self, config: dict) -> None:
            self.model = pbt_digits.build(config)
            self.model.optimizer.hyperparameters["learning_rate"].set(config["learning_rate"])
            self.data, self.epoch = pbt_digits.data(), 0

        def step(self) -> dict:
            history = self.model.fit(
                **self.data, initial_epoch=self.epoch, epochs=self.epoch + 1, verbose=0
            )
            self.epoch += 1
            return {k: float(v[-1]) for k, v in history.history.items()}

        def save_checkpoint(self, checkpoint_dir: str) -> None:  # Ray saves at the end
            self.model.save_weights(os.path.join(checkpoint_dir, "model.weights.h5"))

    return Minimal


def run(trainable: object, reports: int, storage: str) -> list[float]:
    from ray import tune

    tuner = tune.Tuner(
        trainable,
        param_space=CONFIG,
        run_config=tune.RunConfig(
            storage_path=storage, verbose=0, stop={"training_iteration": reports}
        ),
    )
    result = tuner.fit()[0]
    frame = result.metrics_dataframe
    return [float(t) for t in frame["time_this_iter_s"]][1:]


def in_process(reports: int) -> None:
    """The two report bodies in one process, interleaved."""
    from hyperstep.tune.ray import Member

    data = pbt_digits.data()
    member = Member(
        pbt_digits.build, data, epochs_per_report=1, metric="val_loss", apply="override"
    )
    member.build(CONFIG)
    model = pbt_digits.build(CONFIG)
    model.optimizer.hyperparameters["learning_rate"].set(CONFIG["learning_rate"])
    member.train(CONFIG)
    model.fit(**data, epochs=1, verbose=0)  # both traced
    ours, theirs = [], []
    for epoch in range(1, reports + 1):
        for name in ("hyperstep", "function") if epoch % 2 else ("function", "hyperstep"):
            start = time.perf_counter()
            if name == "hyperstep":
                member.train(CONFIG)
            else:
                history = model.fit(**data, initial_epoch=epoch, epochs=epoch + 1, verbose=0)
                {k: float(v[-1]) for k, v in history.history.items()}
            (ours if name == "hyperstep" else theirs).append(time.perf_counter() - start)
    paired = [a / b for a, b in zip(ours, theirs, strict=True)]
    print(
        f"in process, {reports} reports each: hyperstep median {statistics.median(ours):.3f} s, "
        f"function median {statistics.median(theirs):.3f} s, ratio "
        f"{statistics.median(ours) / statistics.median(theirs):.3f} (paired: min {min(paired):.3f} "
        f"median {statistics.median(paired):.3f} max {max(paired):.3f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--reports", type=int, default=8)
    parser.add_argument("--skip-ray", action="store_true", help="only the in-process figure")
    args = parser.parse_args()
    in_process(2 * args.reports)
    if args.skip_ray:
        return

    import ray

    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parents[1] / "examples"), os.environ.get("PYTHONPATH", "")]
    )
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    variants = {
        "function": function_trainable,
        "class": class_trainable(),
        "hyperstep": hs.tune.trainable(pbt_digits.build, pbt_digits.data, metric="val_loss"),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    paired, paired_class = [], []
    with tempfile.TemporaryDirectory() as storage:
        for repeat in range(args.repeats):
            order = list(variants)[repeat % 3 :] + list(variants)[: repeat % 3]
            medians = {}
            for name in order:
                measured = run(variants[name], args.reports, storage)
                times[name].extend(measured)
                medians[name] = statistics.median(measured)
            paired.append(medians["hyperstep"] / medians["function"])
            paired_class.append(medians["hyperstep"] / medians["class"])
            print(f"repeat {repeat}: " + ", ".join(f"{k} {v:.3f} s" for k, v in medians.items()))
    ray.shutdown()
    for name, values in times.items():
        print(
            f"{name:10s} s/report min {min(values):.3f} median {statistics.median(values):.3f} "
            f"max {max(values):.3f}"
        )
    ratio = statistics.median(times["hyperstep"]) / statistics.median(times["function"])
    print(
        f"ratio hyperstep/function: {ratio:.3f} (paired: min {min(paired):.3f} median "
        f"{statistics.median(paired):.3f} max {max(paired):.3f}); target <= {TARGET}: "
        f"{'met' if statistics.median(paired) <= TARGET else 'NOT met'}"
    )
    ratio = statistics.median(times["hyperstep"]) / statistics.median(times["class"])
    print(
        f"ratio hyperstep/class (Ray's class-trainable path on both sides): {ratio:.3f} "
        f"(paired: min {min(paired_class):.3f} median {statistics.median(paired_class):.3f} "
        f"max {max(paired_class):.3f})"
    )


if __name__ == "__main__":
    main()
