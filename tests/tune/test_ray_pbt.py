"""hs.tune.trainable on a local Ray instance: PBT and PB2 (population 2, 3 reports) and a
member killed with SIGKILL and restored by Ray. Each Ray actor imports TensorFlow: slow."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

import hyperstep as hs

ray = pytest.importorskip("ray")

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from members import CONFIG, DATA, STEPS_PER_EPOCH, build, probe, state  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    # PB2's Gaussian process (scikit-learn) on two members' few points
    pytest.mark.filterwarnings("ignore:The optimal value found:UserWarning"),
]


@pytest.fixture(scope="module")
def local_ray():
    src = str(Path(hs.__file__).parents[1])
    paths = [src, str(HERE), os.environ.get("PYTHONPATH", "")]
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)  # the actors import these
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def _events(record: Path) -> list[dict]:
    return [json.loads(line) for line in record.read_text().splitlines()]


def _tuner(trainable, tmp_path, run=None, **options):
    from ray import tune

    return tune.Tuner(
        trainable,
        run_config=tune.RunConfig(
            storage_path=str(tmp_path / "ray"),
            verbose=0,
            stop={"training_iteration": 3},
            **(run or {}),
        ),
        **options,
    )


def _scheduler(name):
    from ray import tune
    from ray.tune.schedulers import PopulationBasedTraining
    from ray.tune.schedulers.pb2 import PB2

    common = {
        "time_attr": "training_iteration",
        "perturbation_interval": 1,
        "quantile_fraction": 0.5,
        "synch": True,
    }
    if name == "pb2":  # a Gaussian-process bandit chooses the new values (needs scikit-learn)
        # PB2 rejects "/" in keys: the Group's rate as {"head": {"learning_rate": ...}}
        bounds = {"learning_rate": [1e-3, 1e-1], "head": {"learning_rate": [1e-3, 1e-1]}}
        return PB2(hyperparam_bounds=bounds, **common)
    mutations = {
        "learning_rate": tune.loguniform(1e-3, 1e-1),
        "head/learning_rate": tune.loguniform(1e-3, 1e-1),
    }
    return PopulationBasedTraining(hyperparam_mutations=mutations, **common)


def _space(scheduler):
    from ray import tune

    space = {**CONFIG, "learning_rate": tune.grid_search([0.002, 0.05])}
    if scheduler == "pb2":
        space["head"] = {"learning_rate": space.pop("head/learning_rate")}
    return space


@pytest.mark.parametrize("scheduler", ["pbt", "pb2"])
def test_pbt_exploits_bitwise_explores_without_retrace_and_replays(local_ray, tmp_path, scheduler):
    from ray import tune

    record = tmp_path / "events.jsonl"
    pbt = _scheduler(scheduler)
    tuner = _tuner(
        probe(str(record)),
        tmp_path,
        param_space=_space(scheduler),
        tune_config=tune.TuneConfig(
            scheduler=pbt, metric="val_loss", mode="min", reuse_actors=True
        ),
    )
    results = tuner.fit()
    assert not results.errors
    events = _events(record)
    reports = [e for e in events if e["kind"] == "report"]
    restores = [e for e in events if e["kind"] == "restore"]

    # exploit: at least one, each restoring the source's saved state bitwise into a model
    # that had trained before in the same actor (not rebuilt: one build per actor)
    assert restores and all(e["same"] for e in restores)
    assert any(e["periods_before"] > 0 and e["same_model"] for e in restores)
    assert {e["builds"] for e in events} == {1}
    # explore: every report trained with the values Ray chose, on a step traced once
    assert {e["traces"] for e in reports} == {1}
    for e in reports:
        for key in ("learning_rate", "head/learning_rate"):
            assert e["result"]["hyperparameters"][key] == float(np.float32(e["config"][key]))
    # replay: a member whose config changed, from its policy log, equals its lineage
    experiment = Path(results.experiment_path)
    final = {e["trial"]: e for e in reports if e["iteration"] == 3}
    best = results.get_best_result().path
    policies = sorted(experiment.glob("pbt_policy_*.txt"), key=lambda p: p.stem[11:] not in best)
    assert policies, "no member exploited another"
    trial = policies[0].stem.removeprefix("pbt_policy_")
    lineage = final[trial]["lineage"]
    replayed = hs.tune.replay(policies[0], steps_per_report=STEPS_PER_EPOCH, synch=True)
    keys = ("learning_rate", "head/learning_rate", "weight_decay")
    for k, values in enumerate(lineage):
        for key in keys:
            assert float(replayed[key](k * STEPS_PER_EPOCH)) == values[key], (k, key)
    # retrained alone with the replayed schedules, no Ray: the same trace
    retrained = _retrain({key: replayed[key] for key in keys}, epochs=len(lineage))
    assert retrained == [{key: values[key] for key in keys} for values in lineage]


def _retrain(schedules, epochs):
    import keras

    model, _ = build(CONFIG)  # the plateau is left out: an override ignores its scale
    optimizer = hs.StepOptimizer(
        "adamw",
        groups=[hs.Group("head", match="*/head/*", learning_rate=schedules["head/learning_rate"])],
        clock=hs.Clock(steps_per_epoch=STEPS_PER_EPOCH),
        learning_rate=schedules["learning_rate"],
        weight_decay=schedules["weight_decay"],
    )
    model.compile(optimizer, "mse")
    trace = []

    class Trace(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            hps = optimizer.hyperparameters
            trace.append({k: float(hps[k].value) for k in schedules})

    model.fit(**DATA, epochs=epochs, verbose=0, callbacks=[Trace()])
    return trace


def test_a_member_killed_and_restored_by_ray_continues_exactly(local_ray, tmp_path):
    from ray import tune

    record = tmp_path / "events.jsonl"
    config = {**CONFIG, "kill_at": 2}
    tuner = _tuner(
        probe(str(record)),
        tmp_path,
        param_space=config,
        tune_config=tune.TuneConfig(metric="val_loss", mode="min"),
    )
    tuner._local_tuner._run_config.failure_config = tune.FailureConfig(max_failures=1)
    tuner._local_tuner._run_config.checkpoint_config = tune.CheckpointConfig(checkpoint_frequency=1)
    results = tuner.fit()
    assert not results.errors
    events = _events(record)
    assert (tmp_path / "events.jsonl.killed").exists()
    assert [e["kind"] for e in events] == ["report", "report", "restore", "report"]
    assert events[2]["same"] and len({e["pid"] for e in events}) == 2  # a new actor

    uninterrupted = hs.tune.trainable(build, DATA)(dict(config))
    expected = [uninterrupted.train() for _ in range(3)]
    final = events[-1]
    for key in ("loss", "val_loss", "step", "hyperparameters"):
        assert final["result"][key] == expected[-1][key]
    for path, values in state(uninterrupted.member.model):
        np.testing.assert_array_equal(np.array(final["state"][path]), values, err_msg=path)
