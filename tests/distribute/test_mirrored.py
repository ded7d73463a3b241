"""MirroredStrategy over two logical CPUs follows the single-device run step for step.

The CPU must be split into two logical devices before TensorFlow initializes it, so the
checks run in one subprocess (``mirrored_checks.py``), each under the default strategy and
under ``MirroredStrategy`` with the same global batch; the tests compare the JSON it prints.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError

SCRIPT = Path(__file__).with_name("mirrored_checks.py")
_SPEC = importlib.util.spec_from_file_location("hs_mirrored_checks", SCRIPT)
assert _SPEC is not None and _SPEC.loader is not None
CHECKS = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(CHECKS)  # constants only: the checks run in a subprocess


@pytest.fixture(scope="module")
def results(hang_timeout: float) -> dict[str, Any]:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=hang_timeout, env=env
    )
    assert done.returncode == 0, done.stderr[-6000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _flat(weights: list[Any]) -> np.ndarray:
    return np.concatenate([np.ravel(np.asarray(w, dtype="float64")) for w in weights])


def _max_difference(a: list[Any], b: list[Any]) -> float:
    return float(np.max(np.abs(_flat(a) - _flat(b))))


def test_mirrored_run_has_two_replicas_and_one_value_per_state_variable(results):
    single, mirrored = results["scheduled_fit"]["single"], results["scheduled_fit"]["mirrored"]
    assert (single["replicas"], mirrored["replicas"]) == (1, 2)
    assert mirrored["aggregation"] == ["only_first_replica"]


def test_scheduled_adam_in_fit_matches_single_device_step_for_step(results):
    single, mirrored = results["scheduled_fit"]["single"], results["scheduled_fit"]["mirrored"]
    assert mirrored["trace"] == single["trace"]  # step, learning_rate, weight_decay per update
    assert [row[0] for row in mirrored["trace"]] == list(range(16))  # one advance per step
    assert len({row[2] for row in mirrored["trace"]}) > 10  # weight_decay really scheduled
    assert mirrored["step"] == mirrored["iterations"] == 16
    assert _max_difference(mirrored["weights"], single["weights"]) < 1e-6


def test_plateau_in_fit_takes_the_single_device_decisions(results):
    single, mirrored = results["scheduled_fit"]["single"], results["scheduled_fit"]["mirrored"]
    assert mirrored["state"] == pytest.approx(single["state"], rel=1e-6)
    scale, _best, _wait, _cooldown, reductions = mirrored["state"]
    assert reductions == 1 and scale == 0.5
    # the per-step trace is the schedule, halved from the epoch after the loss plateaued
    losses = np.asarray(mirrored["loss"])
    assert np.allclose(losses, single["loss"], rtol=1e-5)
    plateaued = 1 + int(np.argmax(losses[1:] > losses[:-1] - 1.2))  # min_delta=1.2
    steps = np.arange(16)
    schedule = np.asarray(hs.parse(CHECKS.LEARNING_RATE)(steps))
    expected = schedule * np.where(steps >= (plateaued + 1) * CHECKS.STEPS_PER_EPOCH, 0.5, 1.0)
    assert np.allclose([row[1] for row in mirrored["trace"]], expected, rtol=1e-6)


def test_checkpoint_written_under_mirrored_restores_into_a_single_device_run(results):
    mirrored = results["scheduled_fit"]["mirrored"]
    assert mirrored["restored_step"] == mirrored["step"]
    assert mirrored["restored_state"] == mirrored["state"]
    assert _max_difference(mirrored["restored_weights"], mirrored["weights"]) == 0.0


def test_logging_reads_one_value_per_hyperparameter_under_mirrored(results):
    single, mirrored = results["scheduled_fit"]["single"], results["scheduled_fit"]["mirrored"]
    assert mirrored["csv"] == single["csv"]  # LogHyperparameters: one row per step
    assert len(mirrored["csv"]) == 1 + 16
    read = mirrored["read"]  # Hyperparameter.read() on mirrored variables
    assert math.isnan(read.pop("override"))
    assert read == {k: v for k, v in single["read"].items() if k != "override"}
    assert read["scale"] == 0.5 and read["value"] == pytest.approx(0.5 * read["schedule"])


def test_step_optimizer_with_group_in_strategy_run_matches_single_device(results):
    single = results["step_optimizer_loop"]["single"]
    mirrored = results["step_optimizer_loop"]["mirrored"]
    assert mirrored["trace"] == single["trace"]  # step, lr, beta_1, bias/learning_rate
    assert [row[1] for row in mirrored["trace"]] != [row[3] for row in mirrored["trace"]]
    assert mirrored["step"] == 8 and mirrored["traced"] == 1
    # the learning rate's cooldown (started at 5) took it below its schedule from step 6
    rates, uncooled = [row[1] for row in mirrored["trace"]], mirrored["uncooled"]
    assert rates[:6] == uncooled[:6]
    assert all(r < u for r, u in zip(rates[6:], uncooled[6:], strict=True))
    assert _max_difference(mirrored["weights"], single["weights"]) < 1e-6


def test_plateau_update_inside_strategy_run_uses_the_mean_over_replicas(results):
    single = results["plateau_per_replica"]["single"]["rows"]
    mirrored = results["plateau_per_replica"]["mirrored"]["rows"]
    assert mirrored == single  # [value, scale, best, wait, cooldown, reductions] per update
    # the controller, created outside strategy.scope(), has mirrored state like its target
    assert results["plateau_per_replica"]["mirrored"]["copies"] == 2
    assert mirrored[-1][-1] == 3


def test_update_rejects_an_unknown_reduction():
    plateau = hs.ReduceOnPlateau(hs.Hyperparameter(0.1), monitor="loss", patience=1)
    with pytest.raises(InvalidArgumentError, match="Received: reduce='max'"):
        plateau.update(1.0, reduce="max")


def test_without_a_strategy_the_metric_is_used_as_given():
    import tensorflow as tf

    from hyperstep.backends.steering import tensorflow_workers as num_workers
    from hyperstep.control.distribute import reduce_metric

    assert reduce_metric(0.5, "sum") == 0.5
    assert reduce_metric(0.5, None) == 0.5
    assert num_workers(tf.distribute.get_strategy()) == 1


def test_doctor_callback_diagnoses_a_distributed_batch_as_a_single_device_one(results):
    # fit() hands the callback a PerReplica batch; the doctor reads the first replica's part
    single, mirrored = results["doctor_fit"]["single"], results["doctor_fit"]["mirrored"]
    assert single["codes"] == ["untracked"] and single["paths"] == ["m/scale"]
    assert (mirrored["codes"], mirrored["paths"]) == (single["codes"], single["paths"])
    assert np.allclose(mirrored["loss"], single["loss"], rtol=1e-5)
