"""``hs.find_lr``: the learning-rate range test, run by ``model.fit`` itself.

The learning rate of step ``k`` is written into the optimizer's variables before the step
(a plain Keras optimizer: its ``learning_rate`` variable; ``hs.scheduled`` and
``hs.StepOptimizer``: the hyperparameter's override, each :class:`~hyperstep.Group` at its
ratio to the main value), so the compiled train step is traced at most once for the whole
test. Every variable the test can change is copied first and written back afterwards, in a
``finally``: also after an early stop, an exception or Ctrl-C.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import keras
import numpy as np

from hyperstep.backends import internals as backends_internals
from hyperstep.control import wrapped
from hyperstep.control.hyperparameter import Hyperparameter
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.tune import lr_data, lr_setter
from hyperstep.tune.finding import LRFinding, ramp
from hyperstep.tune.lr_state import Snapshot

#: Keras's batch size when ``fit`` is given arrays and no ``batch_size``
_KERAS_BATCH_SIZE = 32


def find_lr(
    model: keras.Model,
    x: Any = None,
    y: Any = None,
    *,
    min_lr: float = 1e-8,
    max_lr: float = 1.0,
    steps: int = 100,
    mode: str = "exponential",
    stop_factor: float | None = 4.0,
    smoothing: float = 0.98,
    batch_size: int | None = None,
    hyperparameter: str | Hyperparameter = "learning_rate",
    callbacks: Sequence[keras.callbacks.Callback] | None = None,
    verbose: int | str = "auto",
) -> LRFinding:
    """Train ``steps`` batches at learning rates rising from ``min_lr`` to ``max_lr``; undo it.

    ``lr(k) = min_lr * (max_lr / min_lr) ** (k / (steps - 1))`` (``mode="exponential"``;
    ``"linear"``: evenly spaced), one batch per step through ``model.fit`` with the model's
    compiled optimizer. The smoothed loss ``avg(k) / (1 - smoothing ** (k + 1))`` with
    ``avg(k) = smoothing * avg(k - 1) + (1 - smoothing) * loss(k)`` ends the test early
    when, after the first step, it exceeds ``stop_factor`` times its best so far or is not
    finite. Afterwards the model's weights, the optimizer's slots and ``iterations``, the
    clock and every hyperparameter's state are what they were (bitwise), however it ended
    (an optimizer not built yet is built, its slots at their initial values).

    Args:
        model: A compiled Keras model (any optimizer whose learning rate is a number, or an
            ``hs.scheduled`` or ``hs.StepOptimizer`` optimizer).
        x: What ``model.fit`` accepts: arrays (trimmed to whole batches), a ``tf.data``
            dataset, a ``keras.utils.PyDataset`` or a generator. Data shorter than
            ``steps`` batches is repeated (a generator is not: the test ends with it).
        y: Targets, with arrays.
        min_lr: The first learning rate.
        max_lr: The last learning rate.
        steps: How many steps (and learning rates).
        mode: ``"exponential"`` or ``"linear"``.
        stop_factor: Divergence threshold; ``None`` runs every step.
        smoothing: The moving average's weight of the past, in ``[0, 1)``.
        batch_size: As in ``fit`` (arrays only; default 32).
        hyperparameter: The optimizer's hyperparameter to ramp (``hs.scheduled`` and
            ``hs.StepOptimizer``: any of ``optimizer.hyperparameters``), or an
            :class:`~hyperstep.Hyperparameter`.
        callbacks: More Keras callbacks for ``fit``, run after the test's own.
        verbose: ``"auto"``/1 a progress bar, 2 one line at the end, 0 silent.

    Returns:
        An :class:`~hyperstep.LRFinding`.

    Raises:
        ValueError: For a model that is not compiled, an optimizer whose learning rate is
            a Keras schedule (not settable), ``steps_per_execution > 1``, or bad ranges.
        TypeError: For arguments of the wrong type.

    Example:
        >>> import keras, numpy as np
        >>> x = np.random.default_rng(0).normal(size=(256, 4)).astype("float32")
        >>> y = x @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32")
        >>> model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> before = [w.copy() for w in model.get_weights()]
        >>> finding = find_lr(model, x, y, min_lr=1e-4, max_lr=10.0, steps=40, verbose=0)
        >>> 1e-3 < finding.suggestion() < 1.0
        True
        >>> all(np.array_equal(a, b) for a, b in zip(before, model.get_weights()))
        True
    """
    rates = ramp(min_lr, max_lr, steps, mode)
    _check_options(model, stop_factor, smoothing, batch_size)
    setter = lr_setter.setter(model.optimizer, hyperparameter)
    every = wrapped.accumulation_steps(model.optimizer)
    test = _RangeTest(rates, setter, stop_factor, smoothing, _verbosity(verbose), every)
    flags = {name: getattr(model, name, None) for name in ("stop_training", "history")}
    batches = lr_data.plan(x, y, batch_size or _KERAS_BATCH_SIZE, steps * every)
    builds = backends_internals.first_fit_builds(model)
    _build(model, batches.first)  # what fit would build: its random draws stay consumed
    snapshot = Snapshot(model, setter)  # the global random state and the clocks' settings
    test.snapshot = snapshot
    try:
        x, y = batches.data()
        with warnings.catch_warnings():
            if batches.one_pass:  # a generator shorter than the test ends it: no surprise
                warnings.filterwarnings("ignore", "Your input ran out of data", UserWarning)
            model.fit(
                x,
                y,
                verbose=0,
                callbacks=[test, *(callbacks or [])],
                **batches.fit,
            )
    finally:
        snapshot.restore()
        backends_internals.build_again_in_fit(builds)
        for name, value in flags.items():
            if value is not None:
                setattr(model, name, value)
    return LRFinding(
        rates[: len(test.raw)],
        np.array(test.smoothed),
        np.array(test.raw),
        steps=steps,
        mode=mode,
        stopped_early=test.stopped,
    )


def _build(model: keras.Model, batch: Any) -> None:
    """Build what ``fit`` builds (the model, its loss and metrics, the optimizer with every
    wrapped one) before the test copies the variables."""
    if not model.built and batch is not None:
        backends_internals.symbolic_build(model, batch if isinstance(batch, tuple) else (batch,))
    if model.built and not model.optimizer.built:
        model.optimizer.build(model.trainable_variables)


class _RangeTest(keras.callbacks.Callback):
    """Sets each update's learning rate, records and smooths the loss, stops on divergence;
    copies the variables at the start of training (``snapshot``, restored by find_lr)."""

    def __init__(
        self,
        rates: np.ndarray,
        setter: lr_setter.Setter,
        stop_factor: float | None,
        smoothing: float,
        verbose: int,
        every: int = 1,
    ) -> None:
        super().__init__()
        self.rates, self.setter, self.every = rates, setter, every
        self.stop_factor, self.smoothing = stop_factor, smoothing
        self.raw: list[float] = []
        self.smoothed: list[float] = []
        self.pending: list[float] = []  # the losses of the batches of this update
        self.average, self.best = 0.0, math.inf
        self.stopped = False
        self.snapshot: Snapshot | None = None
        self.trackers: list[Any] = []
        self.progbar = keras.utils.Progbar(
            len(rates), verbose=verbose, stateful_metrics=["learning_rate", "loss"]
        )

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        model = self.model  # on JAX, reading `model` syncs its state into the variables
        if not model.optimizer.built and model.built:  # else TF builds it in the first step
            model.optimizer.build(model.trainable_variables)
        if self.snapshot is not None:
            self.snapshot.copy_variables()
        # reset before each step, `logs["loss"]` is that step's loss, not the epoch's mean
        self.trackers = [m for m in model.metrics if m.name == "loss"] or list(model.metrics)

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        step = len(self.raw)
        if step >= len(self.rates):
            self.model.stop_training = True
            return
        self.model  # noqa: B018 (on JAX: state synced before the variables are written)
        if not self.pending:  # an update's first batch (every batch without accumulation)
            self.setter.set(float(self.rates[step]))
        for tracker in self.trackers:
            tracker.reset_state()

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        step = len(self.raw)
        if step >= len(self.rates):
            return
        if "loss" not in (logs or {}):
            raise InvalidArgumentError(
                "`find_lr` reads each step's loss from `logs['loss']`, and the model's "
                f"`train_step` returned none. Received: logs with keys {sorted(logs or {})}"
            )
        self.pending.append(float(logs["loss"]))  # type: ignore[index]
        if len(self.pending) < self.every:
            return
        loss = float(np.mean(self.pending)) if self.every > 1 else self.pending[0]
        self.pending = []
        self.average = self.smoothing * self.average + (1 - self.smoothing) * loss
        smoothed = self.average / (1 - self.smoothing ** (step + 1))
        self.raw.append(loss)
        self.smoothed.append(smoothed)
        if self.stop_factor is not None and step > 0:
            limit = self.stop_factor * self.best
            self.stopped = not math.isfinite(smoothed) or smoothed > limit
        if smoothed < self.best or step == 0:
            self.best = smoothed
        done = self.stopped or step + 1 == len(self.rates)
        values = [("learning_rate", float(self.rates[step])), ("loss", smoothed)]
        self.progbar.update(step + 1, values, finalize=done)
        if done:
            self.model.stop_training = True

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        if self.raw and not self.stopped and len(self.raw) < len(self.rates):  # data ran out
            self.progbar.update(len(self.raw), finalize=True)


def _check_options(model: Any, stop_factor: Any, smoothing: Any, batch_size: Any) -> None:
    if not isinstance(model, keras.Model):
        raise InvalidTypeError(
            f"`find_lr(model=...)` must be a Keras model. {received('model', model)}"
        )
    if getattr(model, "optimizer", None) is None or not getattr(model, "compiled", False):
        raise InvalidArgumentError(
            "`find_lr(model=...)` must be compiled with an optimizer and a loss: "
            f"`model.compile(optimizer=..., loss=...)`. {received('model', model)}"
        )
    if getattr(model, "steps_per_execution", 1) != 1:
        raise InvalidArgumentError(
            "`find_lr` sets the learning rate between steps, so it needs "
            "`model.compile(steps_per_execution=1)`. Received: steps_per_execution="
            f"{model.steps_per_execution}"
        )
    if stop_factor is not None and (
        isinstance(stop_factor, bool)
        or not isinstance(stop_factor, (int, float))
        or not stop_factor > 0
    ):
        raise InvalidArgumentError(
            "`find_lr(stop_factor=...)` must be a positive number or None. "
            f"{received('stop_factor', stop_factor)}"
        )
    if (
        isinstance(smoothing, bool)
        or not isinstance(smoothing, (int, float))
        or not (0 <= smoothing < 1)
    ):
        raise InvalidArgumentError(
            f"`find_lr(smoothing=...)` must be in [0, 1). {received('smoothing', smoothing)}"
        )
    if batch_size is not None and (
        isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
    ):
        raise InvalidArgumentError(
            f"`find_lr(batch_size=...)` must be a positive integer or None. "
            f"{received('batch_size', batch_size)}"
        )


def _verbosity(verbose: int | str) -> int:
    if verbose == "auto":
        return 1
    if verbose in (0, 1, 2):
        return int(verbose)
    raise InvalidArgumentError(
        f"`find_lr(verbose=...)` must be 'auto', 0, 1 or 2. {received('verbose', verbose)}"
    )
