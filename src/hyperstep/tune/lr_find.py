"""``hs.find_lr``: the learning-rate range test, run by ``model.fit`` itself.

How each step's learning rate is written without a retrace (:func:`setter`) and what is put
back afterwards (:class:`Snapshot`): docs/lr_find.md, "What it does".
"""

from __future__ import annotations

import inspect
import itertools
import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import keras
import numpy as np

from hyperstep.backends import internals as backends_internals
from hyperstep.backends import random_state
from hyperstep.control import wrapped
from hyperstep.control.hyperparameter import Hyperparameter
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.schedules.base import check_number, check_positive_int
from hyperstep.schedules.checks import check_positive
from hyperstep.tune.finding import LRFinding, ramp

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
    _check_options(model, stop_factor, smoothing, batch_size, verbose)
    writer = setter(model.optimizer, hyperparameter)
    every = wrapped.accumulation_steps(model.optimizer)
    progress = 1 if verbose == "auto" else int(verbose)
    flags = {name: getattr(model, name, None) for name in ("stop_training", "history")}
    batches = plan(x, y, int(batch_size or _KERAS_BATCH_SIZE), steps * every)
    builds = backends_internals.first_fit_builds(model)
    _build(model, batches.first)  # what fit would build: its random draws stay consumed
    snapshot = Snapshot(model, hyperparameter)  # the random state, the clocks' settings
    test = _RangeTest(rates, writer, stop_factor, smoothing, progress, every, snapshot)
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
        setter: Callable[[float], None],
        stop_factor: float | None,
        smoothing: float,
        verbose: int,
        every: int,
        snapshot: Snapshot,
    ) -> None:
        super().__init__()
        self.rates, self.setter, self.every = rates, setter, every
        self.stop_factor, self.smoothing = stop_factor, smoothing
        self.raw: list[float] = []
        self.smoothed: list[float] = []
        self.pending: list[float] = []  # the losses of the batches of this update
        self.average, self.best = 0.0, math.inf
        self.stopped = False
        self.snapshot = snapshot
        self.trackers: list[Any] = []
        self.progbar = keras.utils.Progbar(
            len(rates), verbose=verbose, stateful_metrics=["learning_rate", "loss"]
        )

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        # (find_lr built the optimizer of a built model; on JAX and torch `fit` builds both)
        model = self.model  # on JAX, reading `model` syncs its state into the variables
        self.snapshot.copy_variables()
        # reset before each step, `logs["loss"]` is that step's loss, not the epoch's mean
        self.trackers = [m for m in model.metrics if m.name == "loss"] or list(model.metrics)

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        step = len(self.raw)  # < len(rates): fit stops after the batch that sets stop_training
        self.model  # noqa: B018 (on JAX: state synced before the variables are written)
        if not self.pending:  # an update's first batch (every batch without accumulation)
            self.setter(float(self.rates[step]))
        for tracker in self.trackers:
            tracker.reset_state()

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        step = len(self.raw)
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


def _check_options(
    model: Any, stop_factor: Any, smoothing: Any, batch_size: Any, verbose: Any
) -> None:
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
    if stop_factor is not None:
        check_positive("find_lr", "stop_factor", stop_factor)
    if not 0 <= check_number("find_lr", "smoothing", smoothing) < 1:
        raise InvalidArgumentError(
            f"`find_lr(smoothing=...)` must be in [0, 1). {received('smoothing', smoothing)}"
        )
    if batch_size is not None:
        check_positive_int("find_lr", "batch_size", batch_size)
    if verbose not in ("auto", 0, 1, 2):
        raise InvalidArgumentError(
            f"`find_lr(verbose=...)` must be 'auto', 0, 1 or 2. {received('verbose', verbose)}"
        )


# ---- the batches ------------------------------------------------------------------------
class Plan(NamedTuple):
    """What to hand ``fit``: ``data()`` (``x`` and ``y``; arrays are drawn when it is called,
    from NumPy's global generator), ``fit``'s other arguments, a first batch to build with
    (the ``(x, y)`` tuple or the element data yield; ``None`` when there is none), and
    whether the data make one pass only (a generator)."""

    data: Callable[[], tuple[Any, Any]]
    fit: dict[str, Any]
    first: Any
    one_pass: bool = False


def plan(x: Any, y: Any, batch_size: int, batches: int) -> Plan:
    """How ``fit`` trains ``batches`` batches of ``x`` (and ``y``).

    NumPy arrays are drawn as ``fit`` draws them, in one ``fit`` epoch: passes over the
    data, each a permutation from NumPy's global generator cut to whole batches (a batch of
    all the samples when there are fewer than ``batch_size``), until the test has its
    batches. A ``tf.data`` dataset is repeated (``dataset.repeat()``) in one epoch too.
    Other data (a ``keras.utils.PyDataset``, a ``torch`` ``DataLoader``) run one ``fit``
    epoch per pass; a generator is not repeated.
    """
    leaves = keras.tree.flatten((x, y))
    if leaves and all(isinstance(leaf, np.ndarray) and leaf.ndim > 0 for leaf in leaves):
        sizes = [int(leaf.shape[0]) for leaf in leaves]
        if len(set(sizes)) > 1:
            raise InvalidArgumentError(
                "`find_lr(x=..., y=...)` needs as many samples in each array. "
                f"Received: sizes {sizes}"
            )
        return _arrays(x, y, batch_size, batches, int(leaves[0].shape[0]))
    if _is_dataset(x):
        first = next(iter(x.take(1)), None)
        fit = {"steps_per_epoch": batches, "epochs": 1, "shuffle": False}
        return Plan(lambda: (x.repeat(), None), fit, first)
    if inspect.isgenerator(x) or isinstance(x, Iterator):
        first = next(x, None)
        generator = (item for item in itertools.chain([] if first is None else [first], x))
        return Plan(lambda: (generator, None), {"epochs": 1, "shuffle": False}, first, True)
    if isinstance(x, keras.utils.PyDataset):
        fit = {"epochs": batches, "shuffle": False}  # a PyDataset shuffles itself
        return Plan(lambda: (x, y), fit, x[0] if _length(x) else None)
    if leaves and all(hasattr(a, "shape") and len(a.shape) > 0 for a in leaves):
        # other arrays (tensors): fit shuffles them, one epoch per pass
        first = keras.tree.map_structure(lambda a: a[:batch_size], (x, y))
        x, y = _whole_batches(x, y, batch_size)
        fit = {"epochs": batches, "shuffle": True, "batch_size": batch_size}
        return Plan(lambda: (x, y), fit, first)
    first = next(iter(x), None) if hasattr(x, "__iter__") else None  # a DataLoader
    return Plan(lambda: (x, y), {"epochs": batches, "shuffle": False}, first)


def _arrays(x: Any, y: Any, batch_size: int, batches: int, size: int) -> Plan:
    batch = min(batch_size, size)
    per_pass = size - size % batch

    def draw() -> tuple[Any, Any]:
        passes = [np.random.permutation(size)[:per_pass] for _ in range(-(-needed // per_pass))]
        order = np.concatenate(passes)[:needed]
        return keras.tree.map_structure(lambda a: a[order], (x, y))

    needed = batches * batch
    first = keras.tree.map_structure(lambda a: a[:batch], (x, y))
    return Plan(draw, {"batch_size": batch, "epochs": 1, "shuffle": False}, first)


def _whole_batches(x: Any, y: Any, batch_size: int) -> tuple[Any, Any]:
    """Arrays cut to a whole number of batches (a last, smaller batch would retrace)."""
    size = int(keras.tree.flatten((x, y))[0].shape[0])
    keep = size - size % batch_size
    if keep == size or keep == 0:
        return x, y
    return keras.tree.map_structure(lambda a: a[:keep], (x, y))


def _is_dataset(x: Any) -> bool:
    return all(hasattr(x, name) for name in ("repeat", "take", "element_spec"))


def _length(x: Any) -> int:
    try:
        return len(x)
    except TypeError:
        return 0


# ---- the learning rate's writer ---------------------------------------------------------
def setter(optimizer: Any, hyperparameter: Any) -> Callable[[float], None]:
    """``write(value)`` setting ``hyperparameter`` of ``optimizer`` and of the optimizers it
    wraps: through a wrapper (``LossScaleOptimizer``, ``hs.SkipNonFinite``) the wrapped
    optimizer's; a hyperstep optimizer's by its override; the first value found (in a
    ``MultiOptimizer``, the first sub-optimizer's) takes the test's, and every other (a
    group's, another sub-optimizer's) keeps its current ratio to it
    (``lr_i = lr * lr_i(now) / lr_0(now)``)."""
    if isinstance(hyperparameter, Hyperparameter):
        return hyperparameter.set
    if not isinstance(hyperparameter, str):
        raise InvalidTypeError(
            "`find_lr(hyperparameter=...)` must be a hyperparameter name such as "
            f"'learning_rate' or an `hs.Hyperparameter`. "
            f"{received('hyperparameter', hyperparameter)}"
        )
    leaves = wrapped.leaf_optimizers(optimizer)
    (_, first, main), *others = [t for leaf in leaves for t in _targets(leaf, hyperparameter)]
    targets = [(first, 1.0)]
    for key, write, value in others:
        if main == 0.0 or not math.isfinite(value / main):
            raise InvalidArgumentError(
                f"`find_lr`: {key} keeps its ratio to the first {hyperparameter}, which is "
                f"{main}. Set a nonzero value first (on a hyperstep optimizer: "
                f"`optimizer.hyperparameters[{hyperparameter!r}].set(x)`). "
                f"Received: {key}={value}, {hyperparameter}={main}"
            )
        targets.append((write, value / main))

    def write_all(value: float) -> None:
        for write, ratio in targets:
            write(value * ratio)

    return write_all


def _targets(optimizer: Any, name: str) -> list[tuple[str, Callable[[float], None], float]]:
    """``(key, write, value now)`` for ``name`` in ``optimizer`` (no wrapper): a hyperstep
    optimizer's hyperparameter, then each group's; a plain optimizer's learning rate."""
    if wrapped.is_hyperstep_optimizer(optimizer):
        found = optimizer.hyperparameters
        if name not in found:
            raise InvalidArgumentError(
                f"`find_lr(hyperparameter=...)` is not a hyperparameter of this "
                f"{type(optimizer).__name__}. Valid: {sorted(k for k in found if '/' not in k)}. "
                f"{received('hyperparameter', name)}"
            )
        keys = [name, *(key for key in found if key.endswith(f"/{name}"))]
        return [
            (key, found[key].set, float(keras.ops.convert_to_numpy(found[key].value)))
            for key in keys
        ]
    if name != "learning_rate":
        raise InvalidArgumentError(
            f"`find_lr(hyperparameter=...)`: a plain {type(optimizer).__name__} keeps only "
            "its learning rate in a variable. Wrap it with `hs.scheduled(...)` to ramp "
            f"another hyperparameter. {received('hyperparameter', name)}"
        )
    if isinstance(optimizer.get_config().get("learning_rate"), dict):
        raise InvalidArgumentError(
            f"`find_lr`: the {type(optimizer).__name__}'s learning rate is a Keras "
            "schedule, which cannot be set while training. Compile with "
            "`hs.scheduled(optimizer, learning_rate=schedule)` (settable, same values) or a "
            "number. Received: learning_rate="
            f"{optimizer.get_config()['learning_rate'].get('class_name')}"
        )

    def write(value: float) -> None:
        optimizer.learning_rate = value

    current = float(keras.ops.convert_to_numpy(optimizer.learning_rate))
    return [(f"{optimizer.name}/{name}", write, current)]


# ---- what the test puts back ------------------------------------------------------------
class Snapshot:
    """Copies the random state, the clocks' settings and the variables when made (and the
    variables made since in :meth:`copy_variables`); :meth:`restore` writes them back. What
    that covers: docs/lr_find.md, "What it does" (nothing changes)."""

    def __init__(self, model: Any, hyperparameter: Any) -> None:
        self.model = model
        self.random = random_state.capture()
        owners = [
            o for o in wrapped.every_optimizer(model.optimizer) if wrapped.is_hyperstep_optimizer(o)
        ]
        self.hyperparameters = [hp for o in owners for hp in o.hyperparameters.values()]
        if isinstance(hyperparameter, Hyperparameter):  # find_lr's, maybe of no optimizer
            self.hyperparameters.append(hyperparameter)
        clocks = [*(o.clock for o in owners), *(hp.clock for hp in self.hyperparameters)]
        self.clocks = [
            (c, c._steps_per_epoch, c.follows_fit, c.total_given)
            for c in {id(clock): clock for clock in clocks}.values()
        ]
        for clock, *_ in self.clocks:  # the run's length stays: the test's fit keeps it
            clock.total_given = clock.total_given or clock.total is not None
        self.saved: list[tuple[Any, np.ndarray]] = []
        self.copy_variables()

    def variables(self) -> list[Any]:
        """Every variable the test may change, each once."""
        model = self.model
        found = [*model.variables, *model.metrics_variables]
        for optimizer in wrapped.every_optimizer(model.optimizer):
            found.extend(optimizer.variables)
        for hyperparameter in self.hyperparameters:
            found.extend(hyperparameter.variables)
        for clock, *_ in self.clocks:
            found.extend(clock.variables)
        return list({id(variable): variable for variable in found}.values())

    def copy_variables(self) -> None:
        """Copy every variable not copied yet (made, then at the start of ``fit``: before
        hyperstep's fit hook binds the clocks' epochs, and then what fit built)."""
        known = {id(v) for v, _ in self.saved}
        for variable in self.variables():
            if id(variable) not in known:
                self.saved.append((variable, np.array(variable.numpy(), copy=True)))

    def restore(self) -> None:
        """Write every copy back (variables only if they were copied)."""
        for variable, value in self.saved:
            variable.assign(value)
        for clock, steps_per_epoch, follows_fit, total_given in self.clocks:
            clock._steps_per_epoch = steps_per_epoch
            clock.follows_fit = follows_fit
            clock.total_given = total_given
        random_state.restore(self.random)
