"""Logging hyperparameters: into ``fit``'s logs, a per-step CSV and TensorBoard."""

from __future__ import annotations

import csv
import importlib.util
import math
import os
from collections.abc import Callable
from typing import Any

import keras
import numpy as np
from keras import ops

from hyperstep import backends
from hyperstep.backends import require_tensorflow
from hyperstep.control import wrapped
from hyperstep.control.epochs import epoch_began, fit_began
from hyperstep.control.reading import collect, epoch_values
from hyperstep.errors import BackendError, InvalidArgumentError, received
from hyperstep.schedules.base import check_positive_int
from hyperstep.schedules.checks import check_choice
from hyperstep.schedules.expressions import Constant

__all__ = ["LogHyperparameters"]

#: each per-step column of a hyperparameter ``hp`` at ``step``, by its field name
FIELDS: dict[str, Callable[[Any, Any], Any]] = {
    "value": lambda hp, step: ops.reshape(hp.at(step), ()),
    "schedule": lambda hp, step: ops.reshape(hp.base_at(step), ()),
    "scale": lambda hp, step: hp.scale.value,
    "override": lambda hp, step: hp.override.value,
}


class LogHyperparameters(keras.callbacks.Callback):
    """Put hyperparameters into ``fit``'s logs; optionally write them per step.

    At each epoch end, ``logs[name] = value`` for every logged hyperparameter: the value the
    epoch trained with, whatever the callback order
    (:func:`~hyperstep.control.reading.epoch_values`; docs/runtime.md, "Logging", has what
    History, CSVLogger and TensorBoard then hold).

    With ``csv_path`` and/or ``log_dir``, every ``every`` training batches (at batch begin,
    so a row holds the values that batch's update uses) it writes one row: ``step`` (read
    from the shared clock), ``epoch``, and for each hyperparameter ``name`` (the effective
    value), plus with ``fields=("value", "schedule", "scale", "override")`` the columns
    ``name/schedule``, ``name/scale`` and ``name/override`` (empty when not set); and a
    TensorBoard scalar ``name`` at that step (TensorBoard needs the TensorFlow backend); the
    run's length ``total`` (``clock.total``) once per ``fit``, at its first step.
    The CSV is written anew by the first ``fit`` (with ``append=True``: appended to,
    without a second header, if it exists, e.g. when resuming an interrupted run; then
    its header decides the columns) and appended to by later ones. In a custom loop call
    :meth:`record` before each update and :meth:`close` at the end.

    Args:
        hyperparameters: A hyperparameter, a list or dict of them, or a scheduled
            optimizer (its ``.hyperparameters``).
        csv_path: File for the per-step rows, or None.
        log_dir: TensorBoard directory for per-step scalars, or None.
        every: Write a row every this many batches (a positive integer).
        append: Append to an existing ``csv_path`` instead of writing it anew.
        include: Which are logged: ``"moving"`` (those that can move: a schedule that is not a
            constant, a controller such as ``ReduceOnPlateau``, or a scale or override set
            when training starts), ``"all"``, or None: ``"moving"`` for an optimizer,
            ``"all"`` for hyperparameters given themselves.
        fields: The per-step columns of each hyperparameter: ``"value"`` first, then any
            of ``"schedule"``, ``"scale"`` and ``"override"``; default ``("value",)``.

    Raises:
        InvalidArgumentError: On ``every < 1``, or per-step logging of hyperparameters that do
            not share one clock.
        BackendError: For ``log_dir`` on a backend other than TensorFlow, or without the
            ``tensorboard`` package.

    Example:
        >>> import hyperstep as hs
        >>> lr = hs.Hyperparameter(0.1, name="learning_rate")
        >>> logs = {"loss": 1.0}
        >>> LogHyperparameters([lr]).on_epoch_end(0, logs)
        >>> round(logs["learning_rate"], 6)
        0.1

        In ``fit``, one row per step (the values each update used) on the optimizer's clock:

        >>> import csv, os, tempfile, keras, numpy as np
        >>> opt = hs.StepOptimizer("sgd", learning_rate="0.1 * 0.5 ** step")
        >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        >>> model.compile(opt, "mse")
        >>> path = os.path.join(tempfile.mkdtemp(), "hyperparameters.csv")
        >>> log = LogHyperparameters(opt, csv_path=path)
        >>> _ = model.fit(np.ones((6, 2)), np.ones((6, 1)), batch_size=2, verbose=0,
        ...               callbacks=[log])
        >>> with open(path) as f:
        ...     rows = list(csv.DictReader(f))
        >>> [(int(r["step"]), round(float(r["learning_rate"]), 6)) for r in rows]
        [(0, 0.1), (1, 0.05), (2, 0.025)]
    """

    def __init__(
        self,
        hyperparameters: Any,
        csv_path: str | os.PathLike[str] | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        every: int = 1,
        append: bool = False,
        *,
        include: str | None = None,
        fields: tuple[str, ...] | list[str] = ("value",),
    ) -> None:
        super().__init__()
        self.hyperparameters = collect(hyperparameters)
        if include is None:
            given = wrapped.hyperstep_optimizer(hyperparameters)
            include = "moving" if hasattr(given, "hyperparameters") else "all"
        check_choice("LogHyperparameters", "include", include, ("moving", "all"))
        fields = tuple(fields) if isinstance(fields, (tuple, list)) else (fields,)
        if not fields or fields[0] != "value" or not set(fields) <= set(FIELDS):
            raise InvalidArgumentError(
                f"`LogHyperparameters(fields=...)` must start with 'value', then any of "
                f"{list(FIELDS)[1:]}. {received('fields', fields)}"
            )
        self.include, self.fields = include, fields
        self._all = self.hyperparameters
        every = check_positive_int("LogHyperparameters", "every", every)
        if log_dir is not None:
            require_tensorflow("LogHyperparameters(log_dir=...) (TensorBoard summaries)")
            if importlib.util.find_spec("tensorboard") is None:
                raise BackendError(
                    "`LogHyperparameters(log_dir=...)` writes TensorBoard summaries, which needs "
                    "the `tensorboard` package (TensorFlow 2.21 no longer installs it). Install "
                    "it with `pip install tensorboard`, or log with `csv_path=...` and "
                    f"`log_dir=None`. {received('log_dir', log_dir)}"
                )
        self.csv_path, self.log_dir, self.every = csv_path, log_dir, every
        self.append = bool(append)
        self.clock = next(iter(self.hyperparameters.values())).clock
        others = [n for n, hp in self.hyperparameters.items() if hp.clock is not self.clock]
        if others and (csv_path is not None or log_dir is not None):
            raise InvalidArgumentError(
                "Per-step logging needs one clock for all hyperparameters (the row's step). "
                f"These do not share the first one's clock: {others}. Build them with the same "
                "`clock=` (hs.scheduled(..., clock=clock))."
            )
        self._file: Any = None
        self._writer: Any = None
        self._tf_writer: Any = None
        self._started = False
        self._batches = 0
        self._epoch: int | None = None
        self._read: Any = None
        self._selected = False
        self.total: int | None = None

    # ---- custom loops -------------------------------------------------------------------------
    def record(self, epoch: int | None = None) -> dict[str, float]:
        """Write one row (CSV and TensorBoard) for the current step and return it."""
        epoch = self._epoch if epoch is None else epoch
        row: dict[str, float] = {"step": int(ops.convert_to_numpy(self.clock.step))}
        if self._read is None:  # built at first use, once fit has set steps_per_epoch
            self._select()
            self._read = backends.compile_reads(self._read_fields)  # reads only: traced once
        read = self._read() if self.hyperparameters else []
        values = iter(float(v) for v in ops.convert_to_numpy(read))
        for name in self.hyperparameters:
            row.update({_column(name, f): next(values) for f in self.fields})
        if self.csv_path is not None:
            self._csv().writerow(
                [row["step"], "" if epoch is None else epoch]
                + [_cell(v) for k, v in row.items() if k != "step"]
            )
        if self.log_dir is not None:
            for name in self.hyperparameters:
                self._scalar(name, row[name], int(row["step"]))
        return row

    def _scalar(self, name: str, value: float, step: int) -> None:
        """Write TensorBoard's scalar ``name`` at ``step`` into ``log_dir``."""
        import tensorflow as tf

        if self._tf_writer is None:
            assert self.log_dir is not None
            self._tf_writer = tf.summary.create_file_writer(os.fspath(self.log_dir))
        with self._tf_writer.as_default():
            tf.summary.scalar(name, value, step=step)

    def _read_fields(self) -> Any:
        """Every logged hyperparameter's fields (``override`` nan when not set), stacked:
        one transfer per row."""
        step = self.clock.step.value
        found = [FIELDS[f](hp, step) for hp in self.hyperparameters.values() for f in self.fields]
        return ops.stack([ops.cast(f, "float32") for f in found])

    def _select(self) -> None:
        """Keep the hyperparameters to log (once): those that can move, or all; when
        appending to a CSV file, the ones its header names."""
        if self._selected:
            return
        self._selected = True
        header = _header(self.csv_path) if self.append and self.csv_path is not None else None
        if header is not None:
            chosen = [name for name in self._all if name in header]
        elif self.include == "all":
            chosen = list(self._all)
        else:
            chosen = [name for name, hp in self._all.items() if _moves(hp)]
        self.hyperparameters = {name: self._all[name] for name in chosen}

    def close(self) -> None:
        """Flush and close the CSV file and the TensorBoard writer."""
        if self._file is not None:
            self._file.close()
            self._file = self._writer = None
        if self._tf_writer is not None:
            self._tf_writer.flush()

    def _csv(self) -> Any:
        if self._writer is None:
            assert self.csv_path is not None
            resume = self.append and os.path.isfile(self.csv_path)
            resume = resume and os.path.getsize(self.csv_path) > 0
            mode = "a" if self._started or resume else "w"
            self._file = open(self.csv_path, mode, newline="")
            self._writer = csv.writer(self._file)
            if mode == "w":
                header = ["step", "epoch"]
                for name in self.hyperparameters:
                    header += [_column(name, f) for f in self.fields]
                self._writer.writerow(header)
            self._started = True
        return self._writer

    # ---- Keras callback -----------------------------------------------------------------------
    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._batches = 0
        fit_began(self.model, self.params, [hp.clock for hp in self._all.values()])
        self._select()
        #: the run's length (``clock.total``, which ``fit`` binds): logged once per ``fit``,
        #: to TensorBoard as the scalar ``total`` at the fit's first step
        self.total = self.clock.total
        if self.total is not None and self.log_dir is not None:
            self._scalar("total", self.total, int(ops.convert_to_numpy(self.clock.step)))

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._epoch = epoch
        epoch_began(self.model, epoch, [hp.clock for hp in self._all.values()])

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self.csv_path is None and self.log_dir is None:
            return
        if self._batches % self.every == 0:
            _ = self.model  # on JAX, Keras puts the training state back into the variables
            self.record()
        self._batches += 1

    def _logged_hyperparameters(self) -> dict[str, Any]:
        """What ``on_epoch_end`` logs (``fit`` puts it into the logs before any callback)."""
        self._select()
        return self.hyperparameters

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        if logs is not None and self._logged_hyperparameters():
            for name, value in epoch_values(self.hyperparameters, epoch).items():
                logs.setdefault(name, value)  # as Keras's ReduceLROnPlateau logged it already
        if self._file is not None:
            self._file.flush()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"LogHyperparameters({list(self._all)}, csv_path={self.csv_path!r}, "
            f"log_dir={self.log_dir!r}, every={self.every})"
        )


def _cell(value: float) -> str:
    return "" if math.isnan(value) else repr(float(np.float32(value)))


def _column(name: str, field: str) -> str:
    return name if field == "value" else f"{name}/{field}"


def _moves(hp: Any) -> bool:
    """Whether ``hp`` can change: a schedule that is not a constant, a controller's state,
    or a scale or override set."""
    if not isinstance(hp.schedule, Constant) or hp.state:
        return True
    scale, override = (float(ops.convert_to_numpy(v)) for v in (hp.scale, hp.override))
    return scale != 1.0 or not math.isnan(override)


def _header(path: str | os.PathLike[str]) -> list[str] | None:
    """The header row of an existing, non-empty CSV file, or None."""
    try:
        with open(path, newline="") as f:
            return next(csv.reader(f), None)
    except OSError:
        return None
