"""Exact resume: a run killed with SIGKILL and resumed equals the uninterrupted run.

A subprocess trains with a schedule x plateau x override, saves after every update (a
``tf.train.Checkpoint`` in a custom loop, or ``BackupAndRestore`` in ``fit``) and kills
itself with SIGKILL. This process resumes from what was saved and must produce the same
per-step learning rates and bit-identical final weights as an uninterrupted run.
Each subprocess costs a TensorFlow import (~10 s); five kill points are tested.
"""

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

#: shared by the subprocess (run as a script) and this test (exec'd below)
WORKER = r'''
import os, signal, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras
import numpy as np
import tensorflow as tf
import hyperstep as hs

STEPS = 24
X = np.random.default_rng(0).normal(size=(32, 4)).astype("float32")
Y = np.random.default_rng(1).normal(size=(32, 2)).astype("float32")


def build():
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="tanh"), keras.layers.Dense(2)]
    )
    opt = hs.scheduled(
        keras.optimizers.AdamW(),
        learning_rate=hs.schedules.exponential(0.05, 0.5, every=8),
        beta_1="0.95 - 0.1 * min(step / 20, 1)",
    )
    lr = opt.hyperparameters["learning_rate"]
    # min_delta=1: no "improvement" after the first, so the scale halves at every update
    plateau = hs.ReduceOnPlateau(lr, monitor="loss", factor=0.5, patience=0, min_delta=1.0)
    model.compile(opt, "mse")
    opt.build(model.trainable_variables)
    return model, opt, lr, plateau


def override(lr, t):  # an override between steps 9 and 14
    if t == 9:
        lr.set(0.003)
    if t == 14:
        lr.clear()


def loop(directory, kill_at=None):
    """Custom loop, checkpoint after every update; return {step: lr used} and weights."""
    model, opt, lr, plateau = build()
    checkpoint = tf.train.Checkpoint(model=model, optimizer=opt)
    manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=2)
    if manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint)

    @tf.function
    def step(x, y):
        used = lr.value
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        opt.apply(tape.gradient(loss, model.trainable_variables), model.trainable_variables)
        return loss, used

    trace = {}
    while (t := int(opt.clock.step)) < STEPS:
        override(lr, t)
        batch = slice(8 * (t % 4), 8 * (t % 4) + 8)
        loss, used = step(X[batch], Y[batch])
        trace[t] = float(used)
        if t % 4 == 3:
            plateau.update(loss)  # one controller update per "epoch" of 4 steps
        manager.save()
        if t == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    return trace, [v.numpy() for v in model.weights]


class Trace(keras.callbacks.Callback):
    def __init__(self, lr, kill_at):
        super().__init__()
        self.lr, self.kill_at, self.trace = lr, kill_at, {}

    def on_train_batch_begin(self, batch, logs=None):
        t = int(self.lr.clock.step)
        override(self.lr, t)
        self.trace[t] = float(self.lr.value)

    def on_epoch_end(self, epoch, logs=None):
        if int(self.lr.clock.step) - 1 == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)


def fit(directory, kill_at=None):
    """fit() with BackupAndRestore every epoch; killed at the end of an epoch."""
    model, opt, lr, plateau = build()
    trace = Trace(lr, kill_at)
    backup = keras.callbacks.BackupAndRestore(directory, delete_checkpoint=False)
    model.fit(X, Y, batch_size=8, epochs=STEPS // 4, verbose=0, shuffle=False,
              callbacks=[plateau, backup, trace])
    return trace.trace, [v.numpy() for v in model.weights]


if __name__ == "__main__":
    {"loop": loop, "fit": fit}[sys.argv[1]](sys.argv[2], int(sys.argv[3]))
'''


def _worker(tmp_path):
    path = tmp_path / "worker.py"
    path.write_text(WORKER)
    namespace = {"__name__": "resume_worker"}
    exec(compile(WORKER, str(path), "exec"), namespace)  # the same builders, in-process
    return path, namespace


@pytest.mark.parametrize(
    ("mode", "kill_at"),
    # five kill points: before, inside and after the override window (9..14), in a custom
    # loop with tf.train.Checkpoint and in fit() with BackupAndRestore (epoch ends: 4k + 3)
    # (four in `make test-slow`: each kills and restarts a process, 5-9 s on 2 cores)
    [
        pytest.param("loop", 2, marks=pytest.mark.slow),
        pytest.param("loop", 10, marks=pytest.mark.slow),
        pytest.param("loop", 17, marks=pytest.mark.slow),
        ("fit", 7),
        pytest.param("fit", 11, marks=pytest.mark.slow),
    ],
)
def test_resume_after_sigkill_equals_the_uninterrupted_run(tmp_path, mode, kill_at, hang_timeout):
    path, worker = _worker(tmp_path)
    directory = str(tmp_path / "state")
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    killed = subprocess.run(
        [sys.executable, str(path), mode, directory, str(kill_at)],
        env=env,
        capture_output=True,
        text=True,
        timeout=hang_timeout,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    resumed_trace, resumed_weights = worker[mode](directory)
    trace, weights = worker[mode](str(tmp_path / "uninterrupted"))
    assert min(resumed_trace) == kill_at + 1  # it really resumed mid-run
    # the plateau keeps lowering the scale after the kill, so its restored state matters
    assert any(v < 0.6 * 0.05 * 0.5 ** (t / 8) for t, v in trace.items() if t > kill_at + 4)
    assert resumed_trace == {t: v for t, v in trace.items() if t > kill_at}
    for a, b in zip(resumed_weights, weights, strict=True):
        np.testing.assert_array_equal(a, b)
