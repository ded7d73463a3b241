"""Fit's epochs on hyperstep clocks: ``epoch`` is the index ``model.fit`` gives its callbacks.

What every ``fit`` does by itself (:mod:`hyperstep.backends.fit`), and every hyperstep
callback explicitly: :func:`fit_began` and :func:`epoch_began`, as :class:`FollowEpochs`
describes. A layer fit's start may move onto the optimizer's clock is a
:class:`FitFollower` (a :class:`~hyperstep.Hyperparameter` is one): this module sits below
the hyperparameter, whose constructor registers :func:`fit_began` and :func:`epoch_began`
with :func:`hyperstep.backends.fit.follow_fit`.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import keras

from hyperstep.backends.fit import layers_of
from hyperstep.clock import Clock
from hyperstep.control.wrapped import hyperstep_optimizers
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.iteration import claimed
from hyperstep.schedules.expressions import Constant, bind_total

__all__ = ["FitFollower", "FollowEpochs", "epoch_began", "fit_began"]


class FitFollower:
    """A model's layer on a clock that fit's start may move onto the model's optimizer's
    clock: a base of :class:`~hyperstep.Hyperparameter`, which sets these attributes.

    Attributes:
        name: The layer's name (in warnings).
        clock: The clock the layer reads.
        follows_optimizer: Whether it was created without a clock: in a model, it reads the
            optimizer's clock from fit's start on (unless an optimizer advances its own).
        schedule: Its schedule (one that moves warns when nothing advances the clock).
    """

    name: str
    clock: Clock
    follows_optimizer: bool
    schedule: Any
    _uses_total: bool

    def check_total(self, total: int | None) -> None:
        """Raise where a length of the schedule is one its word refuses with the run's length
        ``total`` (``cosine(1e-3, steps=total - 200)`` at 100: -100 steps), naming both."""
        if total is not None and self._uses_total:
            bind_total(self.schedule, total)


def optimizer_clock(model: Any) -> Clock | None:
    """The clock of ``model.optimizer`` (or of the first hyperstep optimizer it wraps), or None."""
    found = hyperstep_optimizers(getattr(model, "optimizer", None))  # through its wrappers
    return found[0].clock if found else None


def clocks_of(model: Any, extra: Iterable[Clock] = ()) -> list[Clock]:
    """Every clock ``model`` reads: its optimizer's and its layers' (hyperparameters'),
    then ``extra``; each once."""
    found: dict[int, Clock] = {}
    own = optimizer_clock(model)
    candidates: list[Any] = [own] if own is not None else []
    if model is not None:
        for layer in layers_of(model):
            if isinstance(layer, FitFollower):
                candidates.append(layer.clock)
            elif isinstance(layer, Clock):
                candidates.append(layer)
    for clock in [*candidates, *extra]:
        found.setdefault(id(clock), clock)
    return list(found.values())


def fit_began(model: Any, params: Mapping[str, Any] | None, extra: Iterable[Clock] = ()) -> None:
    """At ``fit``'s start: hyperparameters created without a clock move onto the optimizer's;
    each clock takes fit's epoch length (``params["steps"]``: ``epoch_length``, and
    ``steps_per_epoch`` if unset) and follows fit's epochs."""
    own = optimizer_clock(model)
    moved = False
    for layer in layers_of(model) if model is not None else []:
        # a hyperparameter created without a clock, on a clock no optimizer advances
        if not isinstance(layer, FitFollower) or not layer.follows_optimizer:
            continue
        if claimed(layer.clock):
            continue
        if own is not None and layer.clock is not own:  # it reads the optimizer's clock
            layer.clock = own
            moved = True
        elif own is None and not isinstance(layer.schedule, Constant):  # it stands still
            warnings.warn(
                f"Hyperparameter {layer.name!r} is read in the model, but nothing advances "
                f"its clock: the model's optimizer ({type(model.optimizer).__name__}) has no "
                "hyperstep clock, so its value stays at step "
                f"{int(layer.clock.step.numpy())} during fit. Compile with "
                "`hs.scheduled(optimizer)` (it needs nothing else to schedule): the "
                "hyperparameter then reads its clock.",
                UserWarning,
                stacklevel=3,
            )
            layer.follows_optimizer = False  # said once
    if moved:  # functions traced with the old clock are traced again
        for name in ("test_function", "predict_function"):
            if getattr(model, name, None) is not None:
                setattr(model, name, None)
    warn_unread(model)
    given = (params or {}).get("steps")
    steps = given if isinstance(given, int) and not isinstance(given, bool) else 0
    clocks = clocks_of(model, extra)
    for clock in clocks:
        if steps > 0:
            if clock.steps_per_epoch is None:
                clock.steps_per_epoch = steps
            # this fit's length, whatever the last's
            if int(clock.epoch_length.numpy()) != steps:
                clock.epoch_length.assign(steps)
        clock.follows_fit = True
    epochs = (params or {}).get("epochs")
    length = steps * epochs if steps > 0 and isinstance(epochs, int) else None
    bind_length(model, clocks, length, params)


def bind_length(
    model: Any, clocks: Iterable[Clock], length: int | None, params: Mapping[str, Any] | None
) -> None:
    """At ``fit``'s start: each clock's ``total`` becomes fit's ``length`` (``epochs`` x steps
    per epoch) unless the user set it; refused where a schedule reads ``total`` and the length
    is unknown, or differs from one an earlier ``fit`` bound (or a checkpoint restored)."""
    readers = {id(hp.clock) for _, hp in _hyperparameters(model) if hp._uses_total}
    figures = f"epochs={(params or {}).get('epochs')}, steps={(params or {}).get('steps')}"
    for clock in clocks:
        bound, reads = clock.total, id(clock) in readers
        if length is None or length <= 0:  # unknown, or no step to run (epochs=0)
            if reads and bound is None:
                why = "the data has no known length" if length is None else "it runs no step"
                raise InvalidArgumentError(
                    f"A schedule on `Clock(name={clock.name!r})` reads `total`, the run's "
                    f"length, but `model.fit` cannot tell it: {why}. Pass "
                    "`steps_per_epoch=` and `epochs=` (>= 1) to `fit`, or set `clock.total = "
                    f"n` (the number of training steps in the run) before it. "
                    f"Received: total={length}, {figures}"
                )
        elif bound is None or (bound != length and not clock.total_given and not reads):
            clock.bind_total(length)
        elif bound != length and not clock.total_given:
            raise InvalidArgumentError(
                f"`model.fit` runs a length of {length} steps ({figures}), but "
                f"`Clock(name={clock.name!r}).total` is {bound}, bound by an earlier `fit` or "
                "restored with the clock; the schedules that read `total` would change at "
                f"every step. Set `clock.total = {length}` before `fit` to re-bind them to "
                f"this fit's length, or `clock.total = {bound}` to keep the run's length. "
                f"Received: total={bound}, {figures}"
            )
    for _, hp in _hyperparameters(model):  # each length its word takes, before any step
        hp.check_total(hp.clock.total)


def _hyperparameters(model: Any) -> list[tuple[str, Any]]:
    """``(name, hyperparameter)`` of each one ``model`` reads, once: its optimizers' (by
    key) and its layers'."""
    found: dict[int, tuple[str, Any]] = {}
    for optimizer in hyperstep_optimizers(getattr(model, "optimizer", None)):
        for key, hp in optimizer.hyperparameters.items():
            found.setdefault(id(hp), (key, hp))
    for layer in layers_of(model) if model is not None else []:
        if isinstance(layer, FitFollower):
            found.setdefault(id(layer), (layer.name, layer))
    return list(found.values())


def warn_unread(model: Any) -> None:
    """One warning per hyperparameter naming the saved state no object reads (loaded, but the
    controller that owns it was not built again), at the first ``fit`` that finds it."""
    for key, hp in _hyperparameters(model):
        unread = hp.unread_state()
        if not unread or getattr(hp, "_hs_warned_unread", None) == unread:
            continue
        object.__setattr__(hp, "_hs_warned_unread", unread)
        names = [f"{key}/{name}" for name in unread]
        warnings.warn(
            f"The saved state {names} was restored but is read by no object: the "
            "controller that keeps it was not created again, so this fit does not continue "
            "it. Create it (e.g. `hs.ReduceOnPlateau(..., name=...)` with the same name) "
            "before `fit`.",
            UserWarning,
            stacklevel=4,
        )


def epoch_began(model: Any, epoch: int, extra: Iterable[Clock] = ()) -> None:
    """At each of fit's epochs: every clock starts epoch ``epoch`` at its current step."""
    for clock in clocks_of(model, extra):
        clock.begin_epoch(int(epoch))


class FollowEpochs(keras.callbacks.Callback):
    """Make ``epoch`` fit's epoch: what hyperstep does in every ``model.fit`` by itself.

    At ``on_train_begin`` every clock the model reads (its optimizer's, its hyperparameters')
    takes fit's epoch length if it has none, and a hyperparameter created without a clock
    moves onto the optimizer's; at ``on_epoch_begin(epoch)`` each clock records fit's epoch
    index and the current step (:meth:`hyperstep.Clock.begin_epoch`), so ``epoch`` follows
    fit also when epochs differ in length. Every hyperstep callback does the same; pass this
    one for a clock the model does not reach (``FollowEpochs(clock)``), or where fit runs
    with a ``CallbackList`` subclass that replaces ``on_epoch_begin``.

    Args:
        clocks: Clocks to follow besides the model's: one :class:`~hyperstep.Clock`, a list
            of them, or None.

    Example:
        >>> import hyperstep as hs, keras, numpy as np
        >>> clock = hs.Clock()
        >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
        >>> model.compile("sgd", "mse")
        >>> _ = model.fit(np.ones((6, 1)), np.ones((6, 1)), batch_size=2, epochs=2, verbose=0,
        ...               callbacks=[hs.callbacks.FollowEpochs(clock)])
        >>> clock.steps_per_epoch, int(clock.epoch_index)
        (3, 1)
    """

    def __init__(self, clocks: Clock | Iterable[Clock] | None = None) -> None:
        super().__init__()
        given = [] if clocks is None else [clocks] if isinstance(clocks, Clock) else clocks
        try:
            self.clocks = list(given)
        except TypeError:
            self.clocks = [given]
        bad = [c for c in self.clocks if not isinstance(c, Clock)]
        if bad:
            raise InvalidTypeError(
                "`FollowEpochs(clocks=...)` takes an `hs.Clock`, a list of them, or None. "
                + received("clocks", clocks)
            )

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        fit_began(self.model, self.params, self.clocks)

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        epoch_began(self.model, epoch, self.clocks)

    def __repr__(self) -> str:
        return f"FollowEpochs({self.clocks!r})"
