"""The demo run: callbacks, determinism, resume and summary (see :mod:`hyperstep.demo`)."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hyperstep.demo import state as demo_state
from hyperstep.demo.model import (
    BATCH_SIZE,
    DEFAULT_EPOCHS,
    TARGET_ACCURACY,
    build_training,
    load_data,
    training_batches,
)
from hyperstep.demo.state import paths


def _callbacks(
    model: Any,
    plateau: Any,
    out: Path,
    resume: bool,
    config: dict[str, Any],
    verbose: bool,
) -> list[Any]:
    """The callbacks, in the order they run: the hyperparameters' log, the plateau, the
    epoch's record, CSVLogger, TensorBoard, the checkpoint."""
    import keras

    import hyperstep as hs
    from hyperstep.demo import report as demo_report

    files = paths(out)
    optimizer = model.optimizer
    clock = optimizer.clock
    learning_rate = optimizer.hyperparameters["learning_rate"]

    class EpochRecord(keras.callbacks.Callback):
        """Into the logs, after the plateau decided: the temperature, the plateau's own
        count of reductions, the scale and the override in force; then the epoch's line and,
        after it, the line of the reduction the epoch's ``val_loss`` made, if any."""

        def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
            self.started = time.perf_counter()
            self.count, self.scale = plateau.reductions, float(learning_rate.scale.numpy())

        def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
            logs = logs if logs is not None else {}
            held = bool(learning_rate.is_set.numpy())
            logs["temperature"] = float(model.get_layer("temperature").temperature.numpy())
            logs["plateau_reductions"] = plateau.reductions
            logs["learning_rate_scale"] = float(learning_rate.scale.numpy())
            logs["learning_rate_override"] = (
                float(learning_rate.value.numpy()) if held else math.nan
            )
            if not verbose:
                return
            print(epoch_line(epoch, config["epochs"], logs, self.started), flush=True)
            if plateau.reductions > self.count:
                reduction = {
                    "epoch": epoch + 1,
                    "step": int(clock.step.numpy()),
                    "scale_before": self.scale,
                    "scale": logs["learning_rate_scale"],
                    "held": logs["learning_rate_override"] if held else None,
                }
                print(f"  ReduceOnPlateau: {demo_report.reduction_text(reduction)}", flush=True)

    class Checkpoint(keras.callbacks.Callback):
        def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
            step = int(clock.step.numpy())
            demo_state.save_checkpoint(model, out, epoch + 1, step, config)

    return [
        hs.callbacks.LogHyperparameters(
            optimizer,
            csv_path=files["hyperparameters"],
            log_dir=files["tensorboard"] / "hyperparameters",
            append=resume,
            fields=("value", "override"),
        ),
        plateau,
        EpochRecord(),
        keras.callbacks.CSVLogger(str(files["metrics"]), append=resume),
        keras.callbacks.TensorBoard(str(files["tensorboard"]), write_graph=False),
        Checkpoint(),
    ]


def epoch_line(epoch: int, epochs: int, logs: dict[str, Any], started: float) -> str:
    """``epoch  3/20  loss 0.2138  accuracy 94.2%  val_loss ...  lr 2.95e-03  ...  1.2 s``.

    Example:
        >>> logs = {"loss": 0.25, "accuracy": 0.9, "val_loss": 0.2, "val_accuracy": 0.95,
        ...         "learning_rate": 3e-3, "weight_decay": 0.01, "temperature": 1.02}
        >>> epoch_line(2, 20, logs, time.perf_counter())[:44]
        'epoch  3/20  loss 0.2500  accuracy 90.0%  va'
    """
    parts = [f"epoch {epoch + 1:>2}/{epochs}"]
    for key, label, form in _COLUMNS:
        if key in logs:
            parts.append(f"{label} {form.format(float(logs[key]))}")
    parts.append(f"{time.perf_counter() - started:.1f} s")
    return "  ".join(parts)


#: the epoch line's columns: (log key, label, format)
_COLUMNS = (
    ("loss", "loss", "{:.4f}"),
    ("accuracy", "accuracy", "{:.1%}"),
    ("val_loss", "val_loss", "{:.4f}"),
    ("val_accuracy", "val_accuracy", "{:.1%}"),
    ("learning_rate", "lr", "{:.2e}"),
    ("weight_decay", "wd", "{:.4f}"),
    ("temperature", "T", "{:.3f}"),
)


def train(
    out: str | Path,
    epochs: int = DEFAULT_EPOCHS,
    seed: int = 0,
    *,
    fresh: bool = False,
    verbose: bool = True,
    plateau_min_delta: float | None = None,
    train_size: int | None = None,
    callbacks: Sequence[Any] = (),
    control: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """Train (or resume, or report a finished run) in ``out``; return the summary.

    ``plateau_min_delta`` (default: the controller's 1e-4) and ``train_size`` (the first
    images of the training split only) make short runs that exercise the plateau;
    ``callbacks`` run after the demo's own (a test's interruption, say). ``control`` steers
    the run from outside through that directory (an :class:`hyperstep.Remote`, run first:
    ``hyperstep set CONTROL learning_rate=1e-4``; see docs/steering.md). The run directory
    is locked while training: a second run on the same ``out`` is refused.

    Returns:
        The summary written to ``summary.json``: ``status`` (``"complete"``,
        ``"interrupted"`` or ``"already-complete"`` when nothing was trained),
        ``val_accuracy``, ``doctor``, ``plateau_reductions``, ``files``, ...

    Raises:
        InvalidArgumentError: If ``out`` holds a run made with other arguments (and not
            ``fresh``), is not a directory, or another run holds its lock.
        DamagedRunError: If a file of an interrupted run in ``out`` is damaged.
    """

    out = Path(out)
    config: dict[str, Any] = {"epochs": epochs, "seed": seed, "batch_size": BATCH_SIZE}
    if plateau_min_delta is not None:
        config["plateau_min_delta"] = plateau_min_delta
    if train_size is not None:
        config["train_size"] = train_size
    extra = list(callbacks)
    if control is not None:
        import hyperstep as hs

        extra.insert(0, hs.Remote(control))
    with demo_state.locked(out):
        return _resume_or_train(out, config, fresh, verbose, extra)


def _resume_or_train(
    out: Path, config: dict[str, Any], fresh: bool, verbose: bool, extra: list[Any]
) -> dict[str, Any]:
    import keras

    from hyperstep import backends
    from hyperstep.errors import InvalidArgumentError

    if fresh:
        demo_state.clear(out)
    summary = demo_state.read_summary(paths(out)["summary"])
    if summary is not None and summary.get("status") == "complete":
        if summary.get("config") != config:
            raise InvalidArgumentError(
                f"{out} holds a finished run made with {summary.get('config')}; this one asks "
                f"for {config}. Pass --fresh to replace it, or another --out."
            )
        return {**summary, "status": "already-complete"}
    checkpoint = demo_state.latest_checkpoint(out)
    if checkpoint is not None and checkpoint.config != config:
        raise InvalidArgumentError(
            f"{out} holds an interrupted run made with {checkpoint.config}; this one asks for "
            f"{config}. Run it with those arguments to resume, or pass --fresh to start over."
        )
    if checkpoint is None:
        demo_state.clear(out)  # a run killed in its first epoch left nothing to resume
    else:
        demo_state.check_logs(out, checkpoint)
    keras.utils.set_random_seed(config["seed"])  # Keras, NumPy and Python
    with backends.deterministic_ops():
        return _train(out, config, checkpoint, verbose, extra)


def _train(
    out: Path,
    config: dict[str, Any],
    checkpoint: demo_state.Checkpoint | None,
    verbose: bool,
    extra: list[Any],
) -> dict[str, Any]:
    import hyperstep as hs
    from hyperstep.demo import report as demo_report
    from hyperstep.schedules.expressions import Constant
    from hyperstep.schedules.sample import sample

    say = print if verbose else lambda *args, **kwargs: None
    started = time.perf_counter()
    files = paths(out)
    epochs, seed = config["epochs"], config["seed"]
    data = load_data(seed, config.get("train_size"))
    steps_per_epoch = -(-len(data.x_train) // BATCH_SIZE)
    model, optimizer, plateau = build_training(
        steps_per_epoch, epochs, config.get("plateau_min_delta")
    )
    expressions = {
        name: repr(hp.schedule)
        for name, hp in optimizer.hyperparameters.items()
        if not isinstance(hp.schedule, Constant)
    }
    say(
        f"hyperstep demo: an MLP on scikit-learn's 8x8 digits ({len(data.x_train)} training, "
        f"{len(data.x_val)} validation images), {epochs} epochs x {steps_per_epoch} steps, "
        f"AdamW on one clock:"
    )
    for name, expression in expressions.items():
        say(f"  {name:<26} {expression}")
    say(
        f"  {'':<26} learning_rate x ReduceOnPlateau(factor={plateau.factor}, "
        f"patience={plateau.patience}, cooldown={plateau.cooldown}) on {plateau.monitor}"
    )
    first = 0
    if checkpoint is not None:
        demo_state.load_checkpoint(model, out, checkpoint)
        demo_state.truncate_logs(out, checkpoint.epoch, checkpoint.step)
        first = checkpoint.epoch
        say(f"resuming from epoch {checkpoint.epoch} / step {checkpoint.step} (saved in {out})")
    diagnosis = hs.doctor(model, (data.x_train[:BATCH_SIZE], data.y_train[:BATCH_SIZE]))
    say(f"pre-flight check: {diagnosis}")
    own = _callbacks(model, plateau, out, checkpoint is not None, config, verbose)
    # an hs.Remote first: a command applies before the step's row of values is logged
    steering = [c for c in extra if isinstance(c, hs.Remote)]
    callbacks = steering + own + [c for c in extra if c not in steering]
    base = {
        "config": config,
        "resumed_from": None
        if checkpoint is None
        else {"epoch": checkpoint.epoch, "step": checkpoint.step},
        "doctor": {**diagnosis.to_dict(), "verdict": str(diagnosis)},
        "schedules": expressions,
    }
    try:
        if first < epochs:
            model.fit(
                training_batches(data, seed, first, epochs),
                epochs=epochs,
                initial_epoch=first,
                steps_per_epoch=steps_per_epoch,
                validation_data=(data.x_val, data.y_val),
                validation_batch_size=len(data.x_val),
                shuffle=False,  # the batches are already in each epoch's own order
                verbose=0,  # the epoch line instead of Keras's progress bar
                callbacks=callbacks,
            )
    except KeyboardInterrupt:
        for callback in own[0], own[3], own[4]:  # close files and writers
            callback.on_train_end()
        saved = demo_state.latest_checkpoint(out)
        done = {"epoch": 0, "step": 0} if saved is None else vars(saved)
        demo_state.truncate_logs(out, int(done["epoch"]), int(done["step"]))
        summary = {"status": "interrupted", **base, "epoch": done["epoch"], "step": done["step"]}
        demo_state.write_json(files["summary"], summary)
        return summary
    model.save_weights(files["weights"])
    val_loss, val_accuracy = model.evaluate(
        data.x_val, data.y_val, batch_size=len(data.x_val), verbose=0
    )
    history = demo_report.read_csv(files["metrics"])
    steps = demo_report.read_csv(files["hyperparameters"])
    planned = optimizer.hyperparameters["learning_rate"].schedule
    schedule = sample(planned, epochs * steps_per_epoch)[1][steps["step"].astype(int)]
    reductions = demo_report.plateau_reductions(history, steps_per_epoch)
    held = demo_report.overrides(steps)
    journaled = demo_report.commands(_journal(extra))
    notes = [
        "",
        f"final validation accuracy {float(val_accuracy):.1%}",
        f"pre-flight doctor: {'no findings' if diagnosis.ok else 'FINDINGS'}",
        "",
        "schedules (hyperstep expressions):",
        *(f"  {name}:\n    {expression}" for name, expression in expressions.items()),
    ]
    demo_report.write_report(
        files["report"], history, steps, schedule, reductions, steps_per_epoch, notes,
        held=held, steering=journaled,
    )  # fmt: skip
    summary = {
        "status": "complete",
        **base,
        "val_accuracy": float(val_accuracy),
        "val_loss": float(val_loss),
        "target_accuracy": TARGET_ACCURACY,
        "epochs": epochs,
        "steps": epochs * steps_per_epoch,
        "steps_per_epoch": steps_per_epoch,
        "temperature": float(model.get_layer("temperature").temperature.numpy()),
        "learning_rate_scale": float(optimizer.hyperparameters["learning_rate"].scale.numpy()),
        "plateau_reductions": reductions,
        "overrides": held,
        "commands": journaled,
        "seconds": round(time.perf_counter() - started, 1),
        "files": {role: str(path) for role, path in files.items() if role != "checkpoint"},
    }
    demo_state.write_json(files["summary"], summary)
    demo_state.clear(out, ["checkpoint"])  # a finished run's weights: model.weights.h5
    return summary


def _journal(callbacks: Sequence[Any]) -> list[dict[str, Any]]:
    """The steering journal of this run (an ``hs.Remote`` among ``callbacks``): its entries
    since the run began at step 0 (a resumed run's included), else none."""
    import hyperstep as hs
    from hyperstep.control.directory import read_journal

    remotes = [c for c in callbacks if isinstance(c, hs.Remote)]
    path = Path(remotes[0].directory) / "journal.jsonl" if remotes else None
    if path is None or not path.exists():
        return []
    entries = read_journal(path)
    starts = [i for i, e in enumerate(entries) if e.get("event") == "begin" and e.get("step") == 0]
    return entries[starts[-1] if starts else 0 :]
