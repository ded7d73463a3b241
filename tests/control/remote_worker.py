"""A training run steered from outside (run by test_remote.py with KERAS_BACKEND set).

``remote_worker.py controlled DIR OUT [--backup B]``: fit with ``hs.Remote(DIR)``, sleeping a
little per step so a test can send commands mid-run (with ``--backup``, resumed from the last
epoch's backup in ``B`` if there is one; with ``--kill-in-command``, the process kills itself
with SIGKILL inside the first command it applies: its state assigned, its journal line not
yet written); ``remote_worker.py replay JOURNAL OUT``:
the same run from scratch with ``hs.Remote.replay(JOURNAL)``'s schedules and no Remote
(``main(argv)`` runs it in the calling process: the TensorFlow pass replays in its own).
Both save the weights after every update (``OUT``, an ``.npz``: ``history`` rows are the
flattened weights after updates 0, 1, ...; ``final`` the last) and print ``RESULT {...}``.
"""

import argparse
import json
import os
import signal
import time

import keras
import numpy as np

import hyperstep as hs

STEPS_PER_EPOCH = 8
EPOCHS = 25
LEARNING_RATE = "0.05 * (1 - step / 400)"


def data() -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(-1, 1, 64 * 3, dtype="float32").reshape(64, 3)
    y = (np.sin(3 * x[:, :1]) + x[:, 1:2] * x[:, 2:3]).astype("float32")
    return x, y


def main(argv: list[str] | None = None) -> dict:
    """Run as ``argv`` (default ``sys.argv[1:]``) says; the result printed after ``RESULT``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["controlled", "replay"])
    parser.add_argument("source")
    parser.add_argument("out")
    parser.add_argument("--sleep", type=float, default=0.02)
    parser.add_argument("--backup", default=None)
    parser.add_argument("--kill-in-command", action="store_true")
    args = parser.parse_args(argv)
    if args.kill_in_command:
        journal = hs.Remote._journal

        def killed(self, seq, command, status, step, **fields):  # type: ignore[no-untyped-def]
            if status == "applied":  # applied to the state, not journaled: killed here
                os.kill(os.getpid(), signal.SIGKILL)
            return journal(self, seq, command, status, step, **fields)

        hs.Remote._journal = killed  # type: ignore[method-assign]
    learning_rate: object = LEARNING_RATE
    if args.mode == "replay":
        learning_rate = hs.Remote.replay(args.source)["learning_rate"]
    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=learning_rate)
    keras.utils.set_random_seed(3)
    model = Counting(
        [keras.Input((3,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(1)]
    )
    model.compile(opt, "mse")
    history: list[np.ndarray] = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            flat = np.concatenate([np.ravel(w) for w in self.model.get_weights()])
            history.append(flat)
            if args.sleep:
                time.sleep(args.sleep)

    callbacks: list = []
    if args.mode == "controlled":
        callbacks.append(hs.Remote(args.source, status_every=0.05))
    initial_epoch = 0
    if args.backup:
        callbacks.append(Backup(args.backup))
        initial_epoch = Backup.restore(args.backup, model, opt)
    callbacks.append(Record())
    x, y = data()
    model.fit(
        x,
        y,
        batch_size=8,
        epochs=EPOCHS,
        shuffle=False,
        verbose=0,
        callbacks=callbacks,
        initial_epoch=initial_epoch,
    )
    final = np.concatenate([np.ravel(w) for w in model.get_weights()])
    np.savez(args.out, history=np.stack(history), final=final)
    step = int(keras.ops.convert_to_numpy(opt.iterations))
    return {"step": step, "updates": len(history), "traces": model.traces}


class Backup(keras.callbacks.Callback):
    """Weights and optimizer saved at each epoch end, atomically (a kill never leaves half a
    file, unlike Keras's BackupAndRestore, whose h5 a SIGKILL can truncate)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def on_epoch_end(self, epoch, logs=None):
        os.makedirs(self.path, exist_ok=True)
        tmp = os.path.join(self.path, "tmp.weights.h5")
        self.model.save_weights(tmp)
        os.replace(tmp, os.path.join(self.path, "backup.weights.h5"))
        with open(os.path.join(self.path, "epoch.tmp"), "w") as f:
            f.write(str(epoch + 1))
        os.replace(os.path.join(self.path, "epoch.tmp"), os.path.join(self.path, "epoch"))

    @staticmethod
    def restore(path: str, model: keras.Model, opt: keras.optimizers.Optimizer) -> int:
        """Load the last backup, if any; return the epoch to start at."""
        if not os.path.exists(os.path.join(path, "epoch")):
            return 0
        opt.build(model.trainable_variables)
        model.load_weights(os.path.join(path, "backup.weights.h5"))
        with open(os.path.join(path, "epoch")) as f:
            return int(f.read())


class Counting(keras.Sequential):
    """Counts calls of the train step's Python code: traces under tf.function and jax.jit."""

    traces = 0

    def train_step(self, *args, **kwargs):
        self.traces += 1
        return super().train_step(*args, **kwargs)


if __name__ == "__main__":
    print("RESULT " + json.dumps(main()))
