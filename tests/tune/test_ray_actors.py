"""hs.tune.trainable in real Ray actors with docs/tune.md's ``build`` (which does not build
the optimizer): a member whose actor is killed after a checkpoint continues in a new actor,
and an exploit restores another member's checkpoint into a fresh actor, both bitwise
(weights, optimizer slots, ``iterations``, the clock, the hyperparameters) against the same
members trained in this process without Ray and without interruption. Each Ray actor
imports TensorFlow: slow."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

import hyperstep as hs
from hyperstep.tune.ray import Member

ray = pytest.importorskip("ray")

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from members import docs_build, docs_data, docs_trainable, full_state  # noqa: E402

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::FutureWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

CONFIG = {"learning_rate": 3e-3, "head/learning_rate": 2e-2}
EXPLORED = {"learning_rate": 1e-3, "head/learning_rate": 5e-3}
STEPS_PER_EPOCH = 4  # 64 samples, batch_size 16
REPORTED = ("loss", "step", "epoch", "hyperparameters", "training_iteration")


@pytest.fixture(scope="module")
def actor_class():
    src = str(Path(hs.__file__).parents[1])
    paths = [src, str(HERE), os.environ.get("PYTHONPATH", "")]
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)  # the actors import these
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    logdirs: list[str] = []
    try:
        yield ray.remote(docs_trainable()), logdirs
    finally:
        ray.shutdown()
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old
        for logdir in logdirs:  # Trainable's own (empty) directories under ~/ray_results
            shutil.rmtree(logdir, ignore_errors=True)


def _start(actor_class, config: dict[str, Any]) -> tuple[Any, int]:
    cls, logdirs = actor_class
    actor = cls.remote(config=dict(config))
    pid, logdir = ray.get(actor.where.remote())  # waits for the actor's setup (TF import)
    logdirs.append(logdir)
    return actor, pid


def _reported(result: dict[str, Any]) -> dict[str, Any]:
    return {key: result[key] for key in REPORTED}


def _local_member() -> Any:
    """The same Trainable in this process, no Ray actor: the uninterrupted reference."""
    return hs.tune.trainable(docs_build, docs_data, metric="loss")


def _assert_bitwise(actual: list, expected: list) -> None:
    missing = sorted({p for p, *_ in expected} - {p for p, *_ in actual})
    assert len(actual) == len(expected), f"{len(actual)} variables, not {len(expected)}: {missing}"
    for (path, *a), (_, *b) in zip(actual, expected, strict=True):
        assert a == b, f"{path} differs"


def test_a_killed_member_continues_bitwise_in_a_new_actor(actor_class) -> None:
    first, first_pid = _start(actor_class, CONFIG)
    ray.get([first.train.remote() for _ in range(2)])
    checkpoint = ray.get(first.save.remote())  # what Ray Tune keeps of a trial
    saved = ray.get(first.full_state.remote())
    ray.get(first.train.remote())  # a period the failure loses
    ray.kill(first, no_restart=True)
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(first.train.remote())

    restored, restored_pid = _start(actor_class, CONFIG)  # as Ray Tune after a failure
    assert restored_pid != first_pid
    ray.get(restored.restore.remote(checkpoint))
    _assert_bitwise(ray.get(restored.full_state.remote()), saved)
    result = ray.get(restored.train.remote())
    state = ray.get(restored.full_state.remote())
    ray.kill(restored, no_restart=True)

    uninterrupted = _local_member()(dict(CONFIG))
    expected = [uninterrupted.train() for _ in range(3)]
    optimizer = uninterrupted.member.model.optimizer
    assert int(optimizer.iterations.numpy()) == int(optimizer.clock.step.numpy())
    assert int(optimizer.iterations.numpy()) == 3 * STEPS_PER_EPOCH
    assert _reported(result) == _reported(expected[-1])
    _assert_bitwise(state, full_state(uninterrupted.member.model))


@pytest.mark.parametrize("start", ["constructed with the new config", "reset to it"])
def test_an_exploit_into_a_fresh_actor_continues_as_the_source(actor_class, start) -> None:
    source, _ = _start(actor_class, CONFIG)
    ray.get(source.train.remote())
    checkpoint = ray.get(source.save.remote())
    source_state = ray.get(source.full_state.remote())
    ray.kill(source, no_restart=True)

    if start == "reset to it":  # a fresh actor that PBT reuses for another trial
        target, _ = _start(actor_class, {**CONFIG, "learning_rate": 0.05})
        assert ray.get(target.reset.remote(dict(EXPLORED)))
    else:  # a new actor for the exploiting trial, with the explored config
        target, _ = _start(actor_class, EXPLORED)
    ray.get(target.restore.remote(checkpoint))
    _assert_bitwise(ray.get(target.full_state.remote()), source_state)
    result = ray.get(target.train.remote())
    state = ray.get(target.full_state.remote())
    ray.kill(target, no_restart=True)

    # without Ray: one member trained one period with CONFIG, then one with EXPLORED
    reference = Member(docs_build, docs_data, epochs_per_report=1, metric="loss", apply="override")
    reference.build(CONFIG)
    reference.train(CONFIG)
    expected = reference.train(EXPLORED)
    assert result["step"] == expected["step"] == 2 * STEPS_PER_EPOCH
    for key in ("loss", "epoch", "hyperparameters"):
        assert result[key] == expected[key]
    assert result["hyperparameters"]["learning_rate"] == pytest.approx(1e-3)
    _assert_bitwise(state, full_state(reference.model))
