"""Randomized kill and resume of a steered ``fit`` (in one process, over 20 runs).

Each run draws commands with random ``--at`` steps, the epochs whose end saves a backup,
and the step the run dies at (an exception out of ``fit``, the process's death as far as the
run's files go: no journal line, status or checkpoint after it, and its lock released). The
run resumed from its last backup ends bitwise equal to the same run never interrupted, and
to a fresh run given ``hs.Remote.replay``'s schedules.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.control.directory import check_directory, submit

STEPS_PER_EPOCH, EPOCHS = 4, 6
RUNS = 20


class Died(Exception):
    """The run's process died here."""


class Backup(keras.callbacks.Callback):
    """The weights (with the optimizer's, the Remote's state among them) at chosen epoch ends."""

    def __init__(self, path: Path, epochs: set[int]) -> None:
        super().__init__()
        self.path, self.epochs = path, epochs

    def on_epoch_end(self, epoch, logs=None):
        if epoch + 1 in self.epochs:
            self.model.save_weights(self.path / "tmp.weights.h5")
            os.replace(self.path / "tmp.weights.h5", self.path / "backup.weights.h5")
            (self.path / "epoch").write_text(str(epoch + 1))


class Kill(keras.callbacks.Callback):
    def __init__(self, step: int | None) -> None:
        super().__init__()
        self.step, self.updates = step, 0

    def on_train_batch_end(self, batch, logs=None):
        self.updates += 1
        if self.updates == self.step:
            raise Died


def run(
    learning_rate: object, directory: Path | None, backup: Path | None, epochs: set[int], kill=None
) -> list[np.ndarray]:
    keras.utils.set_random_seed(11)
    x = np.linspace(-1, 1, STEPS_PER_EPOCH * 2 * 2, dtype="float32").reshape(-1, 2)
    y = np.sin(3 * x[:, :1]).astype("float32")
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=learning_rate)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    model.compile(opt, "mse")
    initial = 0
    if backup is not None and (backup / "epoch").exists():
        opt.build(model.trainable_variables)
        model.load_weights(backup / "backup.weights.h5")
        initial = int((backup / "epoch").read_text())
    callbacks: list = []
    remote = None
    if directory is not None:
        remote = hs.Remote(directory)
        callbacks.append(remote)
    if backup is not None:
        callbacks.append(Backup(backup, epochs))
    callbacks.append(Kill(kill))
    try:
        model.fit(
            x, y, batch_size=2, epochs=EPOCHS, initial_epoch=initial, shuffle=False, verbose=0,
            callbacks=callbacks,
        )  # fmt: skip
    except Died:
        assert remote is not None
        remote.close()  # the dead process's lock is gone with it
        return []
    return model.get_weights()


def commands(rng: random.Random) -> list[dict]:
    found = []
    for _ in range(3):
        verb = rng.choice(["set", "scale", "schedule", "clear"])
        at = rng.randrange(STEPS_PER_EPOCH * EPOCHS)
        if verb == "clear":
            found.append({"verb": "clear", "names": ["learning_rate"], "at": at})
            continue
        value = {"set": rng.uniform(0.01, 0.1), "scale": rng.uniform(0.5, 2.0)}.get(verb)
        if verb == "schedule":
            value = rng.choice(["0.05", "0.08 * (1 - step / 50)"])
        found.append({"verb": verb, "values": {"learning_rate": value}, "at": at})
    return found


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(RUNS))
def test_a_run_killed_at_a_random_step_resumes_bitwise_the_uninterrupted_run(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    plan = commands(rng)
    epochs = {1} | {e for e in range(2, EPOCHS) if rng.random() < 0.5}  # backups after these
    kill = rng.randrange(STEPS_PER_EPOCH + 1, STEPS_PER_EPOCH * EPOCHS)  # after the first
    results = {}
    for name, killed in (("uninterrupted", None), ("killed", kill)):
        directory = check_directory(tmp_path / name, create=True)
        for command in plan:
            submit(directory, {**command, "queued": True})
        backup = tmp_path / f"{name}-backup"
        backup.mkdir()
        results[name] = run(0.03, directory, backup, epochs, killed)
    assert results["killed"] == []  # it died
    resumed = run(0.03, tmp_path / "killed", tmp_path / "killed-backup", epochs)
    replayed = run(
        hs.Remote.replay(tmp_path / "killed").get("learning_rate", 0.03), None, None, set()
    )
    for a, b, c in zip(resumed, results["uninterrupted"], replayed, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(a, c)
