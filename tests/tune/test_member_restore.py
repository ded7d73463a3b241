"""A PBT member restored from a checkpoint into a freshly built model (a trial restored in a
new actor after a failure, an exploit into a new actor) continues bitwise, with the
``build`` of ``docs/tune.md``, which does not build the optimizer itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import keras
import numpy as np

import hyperstep as hs
from hyperstep.tune.ray import Member


def docs_build(config: dict[str, Any]) -> keras.Model:  # as docs/tune.md's `build`
    model = keras.Sequential(
        [
            keras.Input((8,)),
            keras.layers.Dense(16, activation="relu"),
            keras.layers.Dense(3, name="head"),
        ]
    )
    opt = hs.scheduled(
        keras.optimizers.AdamW(),
        learning_rate="cosine(1e-3, steps=1000)",
        groups=[hs.Group("head", match="*head*", learning_rate=1e-2)],
    )
    model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    return model


def _data() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8)).astype("float32")
    return {"x": x, "y": (x[:, :3].argmax(1)), "batch_size": 16, "shuffle": False}


def _member() -> Member:
    return Member(docs_build, _data(), epochs_per_report=1, metric="loss", apply="override")


def _state(member: Member) -> list[bytes]:
    optimizer = member.model.optimizer
    variables = [*member.model.variables, *optimizer.variables, *optimizer.clock.variables]
    return [np.asarray(v.numpy()).tobytes() for v in variables]


def test_a_member_restored_in_a_fresh_model_continues_bitwise(tmp_path: Path) -> None:
    config = {"learning_rate": 3e-3, "head/learning_rate": 2e-2}
    uninterrupted = _member()
    uninterrupted.build(config)
    uninterrupted.train(config)
    uninterrupted.save(str(tmp_path))
    saved_step = int(uninterrupted.model.optimizer.clock.step.numpy())
    uninterrupted.train(config)

    restored = _member()  # a new actor: the model is built from config, then restored
    restored.load(str(tmp_path), config)
    assert restored.model.optimizer.built
    assert int(restored.model.optimizer.clock.step.numpy()) == saved_step == 4
    assert int(restored.model.optimizer.iterations.numpy()) == saved_step
    restored.train(config)
    assert _state(restored) == _state(uninterrupted)


def test_an_exploit_into_a_fresh_model_continues_as_the_source_with_the_new_config(
    tmp_path: Path,
) -> None:
    source_config = {"learning_rate": 3e-3, "head/learning_rate": 2e-2}
    explored = {"learning_rate": 1e-3, "head/learning_rate": 5e-3}
    source = _member()
    source.build(source_config)
    source.train(source_config)
    source.save(str(tmp_path))
    source.train(explored)  # the source itself continued with the explored values

    target = _member()  # exploit: the source's checkpoint into a new actor, a new config
    target.load(str(tmp_path), explored)
    target.train(explored)
    assert _state(target) == _state(source)
