"""A tiny PBT member shared by the Ray adapter tests (in-process and on a Ray instance).

``build`` returns a model with an ``hs.StepOptimizer`` (AdamW rule, a "head" Group with its
own learning rate) and an ``hs.ReduceOnPlateau`` that halves the learning rate's scale after
every epoch (``min_delta=1``: nothing counts as an improvement), so checkpoints carry
weights, slots, the clock, overrides, scales and controller state that all change.
"""

from __future__ import annotations

import re
from typing import Any

import keras
import numpy as np

import hyperstep as hs

STEPS_PER_EPOCH = 4
X = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
Y = np.random.default_rng(1).normal(size=(32, 2)).astype("float32")
DATA = {
    "x": X,
    "y": Y,
    "batch_size": 8,
    "shuffle": False,
    "validation_data": (X[:8], Y[:8]),
}
CONFIG = {"learning_rate": 0.01, "head/learning_rate": 0.02, "weight_decay": 0.001, "units": 3}


def build(config: dict[str, Any]) -> tuple[keras.Model, list[Any]]:
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((4,)),
            keras.layers.Dense(config["units"], activation="tanh", name="body"),
            keras.layers.Dense(2, name="head"),
        ]
    )
    optimizer = hs.StepOptimizer(
        "adamw",
        groups=[hs.Group("head", match="*/head/*", learning_rate=0.02)],
        clock=hs.Clock(steps_per_epoch=STEPS_PER_EPOCH),
        learning_rate=hs.schedules.exponential(0.01, 0.5, every=8),
        weight_decay=0.001,
    )
    plateau = hs.ReduceOnPlateau(
        optimizer.hyperparameters["learning_rate"],
        monitor="loss",
        factor=0.5,
        patience=0,
        min_delta=1.0,
    )
    model.compile(optimizer, "mse")
    optimizer.build(model.trainable_variables)
    traces = [0]
    train_step = model.train_step

    def counted(data: Any) -> Any:  # called in Python only while the step is traced
        traces[0] += 1
        return train_step(data)

    model.train_step = counted
    object.__setattr__(model, "traces", traces)  # untracked: Keras would copy a list
    return model, [plateau]


def state(model: keras.Model) -> list[tuple[str, np.ndarray]]:
    """Every variable of the model and its optimizer (slots, clock, hyperparameters and
    their controllers' state), by path, as numpy arrays."""
    variables = [*model.variables, *model.optimizer.variables]
    for hyperparameter in model.optimizer.hyperparameters.values():
        variables.extend(hyperparameter.variables)
    seen: dict[int, Any] = {}
    for v in variables:
        seen.setdefault(id(v), v)
    # without Keras's uniquifying suffixes ("sequential_3/..."): comparable across models
    return [
        (
            re.sub(r"(sequential|step_optimizer)_\d+", r"\1", v.path),
            np.array(keras.ops.convert_to_numpy(v)),
        )
        for v in seen.values()
    ]


def assert_same_state(a: list[tuple[str, np.ndarray]], b: list[tuple[str, np.ndarray]]) -> None:
    assert [p for p, _ in a] == [p for p, _ in b]
    for (path, x), (_, y) in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y, err_msg=path)


def probe(record: str, **options: Any) -> type:
    """The adapter's Trainable, recording into ``record`` (a JSON-lines file) what each
    actor did: every report (with the lineage's hyperparameter trace, carried through
    checkpoints like the state), and every restore (compared bitwise, in the actor, with the
    state the saving member held when it wrote the checkpoint)."""
    import json
    import os
    import signal

    import hyperstep.tune.ray as adapter
    from hyperstep.tune.ray import flatten

    builds = [0]

    class Counted(adapter.Member):
        def build(self, config: Any) -> None:
            builds[0] += 1
            super().build(config)

    base = hs.tune.trainable(build, DATA, **options)

    class Probe(base):  # type: ignore[misc, valid-type]
        def setup(self, config: dict[str, Any]) -> None:
            super().setup(config)
            builds[0] += 1
            self.member.__class__ = Counted
            self.lineage: list[dict[str, float]] = []
            self.periods = 0

        def reset_config(self, new_config: dict[str, Any]) -> bool:
            self.lineage = []  # a new trial on this actor (a restore replaces it)
            return super().reset_config(new_config)

        def _write(self, **event: Any) -> None:
            event.update(pid=os.getpid(), trial=self.trial_id, builds=builds[0])
            with open(record, "a") as f:
                f.write(json.dumps(event) + "\n")

        def step(self) -> dict[str, Any]:
            if self.config.get("kill_at") == self.iteration and not os.path.exists(
                record + ".killed"
            ):
                open(record + ".killed", "w").close()
                os.kill(os.getpid(), signal.SIGKILL)
            result = super().step()
            self.periods += 1
            self.lineage.append(result["hyperparameters"])
            model = self.member.model
            self._write(
                kind="report",
                iteration=self.iteration + 1,
                config={
                    k: v for k, v in flatten(self.config).items() if isinstance(v, (int, float))
                },
                result={k: result[k] for k in ("loss", "val_loss", "step", "hyperparameters")},
                lineage=self.lineage,
                traces=model.traces[0],
                model=id(model),
                state={p: a.tolist() for p, a in state(model)},
            )
            return result

        def save_checkpoint(self, checkpoint_dir: str) -> None:
            super().save_checkpoint(checkpoint_dir)
            np.savez(
                os.path.join(checkpoint_dir, "probe.npz"), *[a for _, a in state(self.member.model)]
            )
            with open(os.path.join(checkpoint_dir, "lineage.json"), "w") as f:
                json.dump(self.lineage, f)

        def load_checkpoint(self, checkpoint: Any) -> None:
            model_before = id(self.member.model)
            super().load_checkpoint(checkpoint)
            with np.load(os.path.join(checkpoint, "probe.npz")) as saved:
                expected = [saved[f"arr_{i}"] for i in range(len(saved.files))]
            restored = [a for _, a in state(self.member.model)]
            same = len(expected) == len(restored) and all(
                a.dtype == b.dtype and a.tobytes() == b.tobytes()  # bitwise (nan overrides)
                for a, b in zip(expected, restored, strict=False)
            )
            with open(os.path.join(checkpoint, "lineage.json")) as f:
                self.lineage = json.load(f)
            self._write(
                kind="restore",
                same=bool(same),
                periods_before=self.periods,
                same_model=model_before == id(self.member.model),
                traces=self.member.model.traces[0],
            )

    Probe.__name__ = Probe.__qualname__ = "Probe"
    return Probe


# ---- docs/tune.md's member, for the restores into fresh Ray actors -----------------------
def docs_build(config: dict[str, Any]) -> keras.Model:
    """docs/tune.md's ``build`` (it does not build the optimizer), seeded so that members in
    different processes start from the same weights."""
    keras.utils.set_random_seed(0)
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


def docs_data() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 8)).astype("float32")
    return {"x": x, "y": x[:, :3].argmax(1), "batch_size": 16, "shuffle": False}


def full_state(model: keras.Model) -> list[tuple[str, str, tuple[int, ...], bytes]]:
    """Every variable of the model, its optimizer (slots, ``iterations``), the clock and the
    hyperparameters, in a fixed order, as (path, dtype, shape, bytes): comparable bitwise
    across processes (paths only label a difference, their suffixes vary by process)."""
    optimizer = model.optimizer
    variables = [*model.variables, *optimizer.variables, *optimizer.clock.variables]
    for hyperparameter in optimizer.hyperparameters.values():
        variables.extend(hyperparameter.variables)
    seen: dict[int, Any] = {}
    for v in variables:
        seen.setdefault(id(v), v)
    arrays = [(v.path, np.asarray(keras.ops.convert_to_numpy(v))) for v in seen.values()]
    return [(p, str(a.dtype), a.shape, a.tobytes()) for p, a in arrays]


def docs_trainable() -> type:
    """``hs.tune.trainable`` of docs/tune.md's member, with two read-outs for a Ray actor:
    its process id and log directory, and :func:`full_state`."""
    import os

    base = hs.tune.trainable(docs_build, docs_data, metric="loss")

    class DocsMember(base):  # type: ignore[misc, valid-type]
        def where(self) -> tuple[int, str]:
            return os.getpid(), self.logdir

        def full_state(self) -> list[tuple[str, str, tuple[int, ...], bytes]]:
            return full_state(self.member.model)

    DocsMember.__name__ = DocsMember.__qualname__ = "DocsMember"
    return DocsMember
