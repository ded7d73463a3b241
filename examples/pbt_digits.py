"""Population-based training of the demo's digits model on Ray Tune (``hs.tune.trainable``).

Four members train the demo's MLP (scikit-learn's 8x8 digits, ``hyperstep demo``) with the
demo's warmup + cosine learning rate, scheduled weight decay and temperature group. PBT
tunes a multiplier of each schedule (``apply="scale"``): every 2 epochs the worse half
copies the better half's complete state (exploit) and perturbs the multipliers (explore),
on the running models. The best member's trajectory is then turned back into schedules
(``hs.tune.replay``).

    python examples/pbt_digits.py                       # a local Ray instance, 2 CPUs
    python examples/pbt_digits.py --address auto        # the same code on a Ray cluster
"""

from __future__ import annotations

import argparse
import math
import os
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import hyperstep as hs
import hyperstep.demo.model as demo_model

EPOCHS = demo_model.DEFAULT_EPOCHS  # 20, as the demo
EPOCHS_PER_REPORT = 2
SEED = 0
#: the demo's validation accuracy with its defaults (README, `hyperstep demo`)
DEMO_ACCURACY = 0.986


def data() -> dict[str, Any]:
    """The demo's split (seed 0): fit arguments for every member."""
    split = demo_model.load_data(SEED)
    return {
        "x": split.x_train,
        "y": split.y_train,
        "batch_size": demo_model.BATCH_SIZE,
        "validation_data": (split.x_val, split.y_val),
    }


def build(config: dict[str, Any]) -> Any:
    """The demo's model and StepOptimizer (its schedules; no plateau: PBT tunes instead)."""
    import keras

    keras.utils.set_random_seed(config.get("seed", SEED))
    steps_per_epoch = math.ceil(len(demo_model.load_data(SEED).x_train) / demo_model.BATCH_SIZE)
    planned = demo_model.schedules(steps_per_epoch, EPOCHS)
    model = demo_model.build_model()
    optimizer = hs.StepOptimizer(
        "adamw",
        groups=[
            hs.Group(
                "temperature",
                match="*/temperature/temperature",
                learning_rate=planned["temperature/learning_rate"],
                weight_decay=0.0,
            )
        ],
        clock=hs.Clock(steps_per_epoch=steps_per_epoch),
        learning_rate=planned["learning_rate"],
        weight_decay=planned["weight_decay"],
    )
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    optimizer.build(model.trainable_variables)
    return model


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=None, help="a Ray cluster (default: local)")
    parser.add_argument("--population", type=int, default=4)
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local instance")
    parser.add_argument("--out", default="runs/pbt_digits")
    args = parser.parse_args(argv)

    import ray
    from ray import tune
    from ray.tune.schedulers import PopulationBasedTraining

    if args.address:
        ray.init(address=args.address)
    else:
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
    multipliers = tune.loguniform(0.25, 4.0)
    pbt = PopulationBasedTraining(
        time_attr="training_iteration",
        perturbation_interval=2,  # reports: every 4 epochs
        quantile_fraction=0.25,
        hyperparam_mutations={
            "learning_rate": multipliers,
            "weight_decay": multipliers,
            "temperature/learning_rate": multipliers,
        },
        synch=True,
    )
    member = hs.tune.trainable(
        build, data, epochs_per_report=EPOCHS_PER_REPORT, metric="val_accuracy", apply="scale"
    )
    start = time.perf_counter()
    tuner = tune.Tuner(
        member,
        param_space={
            "learning_rate": tune.grid_search([0.5, 1.0, 2.0, 4.0][: args.population]),
            "weight_decay": 1.0,
            "temperature/learning_rate": 1.0,
        },
        tune_config=tune.TuneConfig(
            scheduler=pbt, metric="val_accuracy", mode="max", reuse_actors=True
        ),
        run_config=tune.RunConfig(
            name="pbt_digits",
            storage_path=str(Path(args.out).resolve()),
            stop={"training_iteration": EPOCHS // EPOCHS_PER_REPORT},
            verbose=1,
        ),
    )
    results = tuner.fit()
    seconds = time.perf_counter() - start
    best = results.get_best_result(metric="val_accuracy", mode="max", scope="last")
    accuracy = float(best.metrics["val_accuracy"])
    print(
        f"best member: validation accuracy {accuracy:.1%} after {EPOCHS} epochs "
        f"(the demo: {DEMO_ACCURACY:.1%}); population {args.population}, {seconds:.0f} s"
    )
    print(f"its multipliers at the end: {best.config}")
    policies = sorted(Path(results.experiment_path).glob("pbt_policy_*.txt"))
    trial = Path(best.path).name.split("_")[1:3]
    for policy in policies:
        if policy.stem.endswith("_".join(trial)):
            steps = EPOCHS_PER_REPORT * best.metrics["step"] // best.metrics["epoch"]
            replayed = hs.tune.replay(policy, steps_per_report=steps, synch=True)
            print(f"replayed multipliers (retrain with base * multiplier): {replayed}")
    ray.shutdown()
    return {"val_accuracy": accuracy, "seconds": seconds, "demo_accuracy": DEMO_ACCURACY}


if __name__ == "__main__":
    main()
