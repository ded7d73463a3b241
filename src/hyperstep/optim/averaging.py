"""Weights to evaluate: schedule-free's ``x``, SWA's equal average, an EMA on a schedule.

Training updates one sequence of weights; evaluation and checkpoints often want another.
:class:`SWA` and :class:`EMA` keep one, ``avg = avg + (w - avg) * share`` after each due
update (:class:`Average`); ``with averaged_weights(source):`` and the callback
:class:`AveragedWeights` exchange it with the model's variables (:func:`exchange`), bit for
bit (a schedule-free rule's ``x`` too). Usage: docs/recipes.md, "Weight averaging".

The state (:class:`AverageState`) is one Keras layer attached to the optimizer, holding
``n_averaged``, ``swapped``, one average per trained variable (a teacher network's variables
too, :meth:`EMA.network`) and EMA's ``decay`` (a :class:`~hyperstep.Hyperparameter`), so
the average is saved and restored with the optimizer: by ``.keras`` (its config in the
optimizer's), ``save_weights`` and ``tf.train.Checkpoint`` (docs/backends.md, "Saving"). The
averages exist once the optimizer is built (created at the first update, save or load).
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

import keras
from keras import ops

from hyperstep import backends
from hyperstep.backends import integer_dtype
from hyperstep.backends.fit import layers_of
from hyperstep.clock import Clock
from hyperstep.control.epochs import epoch_began, fit_began
from hyperstep.control.hyperparameter import Hyperparameter, copy_of, track
from hyperstep.control.wrapped import hyperstep_optimizer
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.iteration import open_iteration
from hyperstep.optim.core import check_arguments
from hyperstep.optim.rules import Values
from hyperstep.schedules import combinators, families
from hyperstep.schedules.base import check_number
from hyperstep.schedules.checks import check_choice
from hyperstep.schedules.expressions import as_schedule

__all__ = [
    "ATTRIBUTE",
    "EMA",
    "SWA",
    "Average",
    "AverageState",
    "AveragedWeights",
    "attach",
    "average_of",
    "averaged_weights",
    "config_of",
    "exchange",
    "given_values",
    "refresh_batch_norm",
    "restore",
    "swa_learning_rate",
]

ATTRIBUTE = "_hs_average_state"  # the optimizer's attribute (and .keras path) that holds it


@keras.saving.register_keras_serializable(package="hyperstep")
class AverageState(keras.layers.Layer):
    """``n_averaged``, ``swapped``, the averages and EMA's decay of one weight average.

    Example:
        >>> import hyperstep as hs
        >>> opt = hs.StepOptimizer("sgd")
        >>> state = hs.SWA(opt, start=5).state
        >>> state.get_config()["start"], int(state.n_averaged)
        (5, 0)
    """

    def __init__(
        self,
        kind: str,
        start: int = 0,
        every: int = 1,
        decay: Any = None,
        clock: Any = None,
        name: str = "average",
        init: str = "copy",
        form: str = "difference",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        for key, value in (("start", start), ("every", every)):  # (also as loaded from a file)
            low = 1 if key == "every" else 0
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value < 2**63:
                raise InvalidArgumentError(
                    f"`{kind.upper()}({key}=...)` must be an integer >= {low} and below 2**63 "
                    f"(a step). {received(key, value)}"
                )
        self.kind, self.start, self.every = kind, start, every
        self.init, self.form = init, form  # EMA: how it starts, which formula (EMA's docs)
        self.n_averaged = self.add_weight(
            shape=(), dtype=integer_dtype(), initializer="zeros", trainable=False, name="n_averaged"
        )
        self.swapped = self.add_weight(
            shape=(), dtype="bool", initializer="zeros", trainable=False, name="swapped"
        )
        self.decay: Hyperparameter | None = None
        if kind == "ema":
            self.decay = Hyperparameter(decay, clock=clock, name="ema_decay")
        self.averages: list[Any] = []
        self._optimizer: Any = None  # a weak reference, set by `attach`
        self._pending: tuple[Any, ...] = ()  # saved averages loaded before they existed
        self.built = True

    def build_averages(
        self, variables: Iterable[Any], initial: Sequence[Any] | None = None
    ) -> list[Any]:
        """Create one average per variable, zeros or the values ``initial`` (read when the
        averages are created), unless they exist; return them."""
        if not self.averages:
            variables = list(variables)
            values = [None] * len(variables) if initial is None else list(initial)
            self.averages = [
                self.add_weight(
                    shape=v.shape,
                    dtype=v.dtype,
                    initializer="zeros" if value is None else copy_of(value),
                    trainable=False,
                    name=f"{v.name.split('/')[-1]}_average",
                )
                for v, value in zip(variables, values, strict=True)
            ]
            self._track_averages()
        return self.averages

    def use_averages(self, variables: Sequence[Any]) -> None:
        """Make ``variables`` (a teacher network's) the averages: the values saved or held so
        far move into them first, and they are saved as this state's averages."""
        held = [ops.copy(a.value) for a in self.averages] if self.averages else None
        if held is not None:
            for variable, value in zip(variables, held, strict=True):
                variable.assign(value)
            for average in self.averages:  # no longer this layer's own weights
                self._untrack_variable(average)
        self.averages = list(variables)
        self._track_averages()

    def _track_averages(self) -> None:
        for index, average in enumerate(self.averages):  # restored now if pending
            track(self, f"average_{index}", average)
        pending, self._pending = self._pending, ()
        for average, value in zip(self.averages, pending, strict=False):
            average.assign(value)

    @property
    def stored(self) -> list[Any]:
        """What is saved, in order: ``n_averaged``, ``swapped``, then the averages."""
        return [self.n_averaged, self.swapped, *self.averages]

    def _build_if_possible(self) -> None:
        optimizer = self._optimizer() if self._optimizer is not None else None
        if not self.averages and optimizer is not None and optimizer.built:
            self.build_averages(optimizer._trainable_variables)

    def save_own_variables(self, store: Any) -> None:
        self._build_if_possible()
        for index, variable in enumerate(self.stored):
            store[str(index)] = variable

    def load_own_variables(self, store: Any) -> None:
        self._build_if_possible()
        own = self.stored
        if len(store.keys()) != len(own) and (self.averages or len(store.keys()) < len(own)):
            raise InvalidArgumentError(
                f"{self.kind.upper()}: the saved average holds {len(store.keys())} values and "
                f"this one {len(own)} (2 counters and one average per variable)."
            )
        # the optimizer is not built yet (an optimizer loaded on its own, as `pickle` does):
        # the counters now, the averages when they are created
        for index, variable in enumerate(own):
            variable.assign(store[str(index)])
        self._pending = tuple(store[str(i)][...] for i in range(len(own), len(store.keys())))

    def matches(self, other: AverageState) -> bool:
        """Whether ``other`` describes the same average (then it continues this one)."""
        return self.get_config() == other.get_config()

    def get_config(self) -> dict[str, Any]:
        decay = None
        if self.decay is not None:
            decay = keras.saving.serialize_keras_object(self.decay._raw_schedule)
        config = {
            "name": self.name,
            "kind": self.kind,
            "start": self.start,
            "every": self.every,
            "decay": decay,
        }
        if self.kind == "ema":
            config.update(init=self.init, form=self.form)
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> AverageState:
        config = dict(config)
        if config.get("decay") is not None:
            config["decay"] = keras.saving.deserialize_keras_object(config["decay"])
        return cls(**config)


def attach(optimizer: Any, state: AverageState) -> AverageState:
    """Make ``state`` the average saved with ``optimizer``; returns it."""
    state._optimizer = weakref.ref(optimizer)
    setattr(optimizer, ATTRIBUTE, state)  # on TensorFlow, also a checkpoint dependency
    return state


def config_of(optimizer: Any) -> dict[str, Any]:
    """``{"average": config}`` for an optimizer with an average, else ``{}``."""
    state = getattr(optimizer, ATTRIBUTE, None)
    return {} if state is None else {"average": state.get_config()}


def restore(optimizer: Any, config: Mapping[str, Any] | None) -> Any:
    """Attach the average ``config`` describes (:func:`config_of`); return ``optimizer``."""
    if config is not None:
        attach(optimizer, AverageState.from_config({**config, "clock": optimizer.clock}))
    return optimizer


class Average(keras.callbacks.Callback):
    """An average of an optimizer's variables (the base of ``hs.SWA`` and ``hs.EMA``), updated
    by :meth:`update` after each update (or by the optimizer's own update once it is a
    network, see :meth:`hyperstep.EMA.network`).

    Its state (:class:`AverageState`) is saved with the
    optimizer; constructing the same average on an optimizer that holds one (after
    ``load_model`` or a restore) continues it.
    """

    kind = ""

    def __init__(
        self,
        optimizer: Any,
        start: int,
        every: int,
        decay: Any = None,
        init: Any = "copy",
        form: str = "difference",
        clock: Any = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        #: without an optimizer: the clock given, or one of its own that `update` advances
        self._own_clock = optimizer is None and clock is None
        check_arguments(name, clock, None)  # a clock, if given
        if optimizer is None and clock is None:
            clock = Clock(name=f"{name.lower()}_clock")
        elif optimizer is not None:
            if getattr(optimizer, "clock", None) is None:  # LossScaleOptimizer: the one inside
                optimizer = hyperstep_optimizer(optimizer)
            own = getattr(optimizer, "clock", None)
            if own is None:
                raise InvalidTypeError(
                    f"`{name}(optimizer=...)` takes a hyperstep optimizer (`hs.StepOptimizer` "
                    f"or `hs.scheduled(...)`), or None. {received('optimizer', optimizer)}"
                )
            if clock is not None and clock is not own:
                raise InvalidArgumentError(
                    f"`{name}(clock=...)` is for an average without an optimizer; with one it "
                    f"reads the optimizer's clock. Drop `clock=`. Received: clock={clock!r}"
                )
            clock = own
        init_name = _init_name(name, init)
        check_choice(name, "form", form, ("difference", "momentum"))
        self.optimizer, self.clock, self.start, self.every = optimizer, clock, start, every
        self.variables: list[Any] = []
        self._given = None if isinstance(init, str) else init
        self.follows_apply = False  # set by `network`: the optimizer's update updates it
        self._network: Any = None
        self._student: Any = None
        self.fit_model: Any = None  # set while a `fit` lists this average among its callbacks
        state = AverageState(self.kind, start, every, decay, clock=clock, init=init_name, form=form)
        if optimizer is None:  # built by `build(variables)` or `network(model)`
            self.state = state
            return
        # the state goes with the wrapped optimizer's config and variables (hs.SkipNonFinite)
        owner = hyperstep_optimizer(optimizer)
        held = getattr(owner, ATTRIBUTE, None)
        self.state = held if held is not None and held.matches(state) else attach(owner, state)
        owner._hs_average = self  # found by `averaged_weights(optimizer)` and `apply`
        if init_name != "copy":  # the averages start from weights read before any update
            if optimizer.built:
                self.build()
            else:
                _build_when_built(owner, self)

    @property
    def n_averaged(self) -> Any:
        """The number of weights averaged so far (an int64 variable)."""
        return self.state.n_averaged

    @property
    def swapped(self) -> Any:
        """Whether the averaged weights are in the model's variables (a bool variable)."""
        return self.state.swapped

    @property
    def averages(self) -> list[Any]:
        """One average per variable (empty until built)."""
        return self.state.averages

    def build(self, variables: Iterable[Any] | None = None) -> None:
        """Create one average per variable (the optimizer's, once it is built): zeros for
        ``init="copy"``, else the weights ``init`` names, read now."""
        if self.variables:
            return
        if variables is None and (self.optimizer is None or not self.optimizer.built):
            raise InvalidArgumentError(
                f"{type(self).__name__}: "
                + (
                    "build the optimizer first (or pass `variables`)."
                    if self.optimizer is not None
                    else "without an optimizer, pass the variables to average "
                    "(`build(model.trainable_variables)`) or call `network(model)`."
                )
            )
        self.variables = list(
            self.optimizer._trainable_variables if variables is None else variables
        )
        initial: list[Any] | None = None
        if self.state.init == "initial":
            initial = self.variables
        elif self.state.init == "given":
            initial = given_values(self._given, self.variables, type(self).__name__)
        self.state.build_averages(self.variables, initial)

    def update(self) -> None:
        """Average the current weights in if the clock's step is due; call after each update.

        With neither an optimizer nor ``clock=``, the average's own clock then advances by
        one (outside a :meth:`hyperstep.Clock.iteration` on it, which does it at its end).

        Raises:
            ValueError: Once the average is a network (:meth:`hyperstep.EMA.network`): the
                optimizer's update then updates it.
        """
        if self.follows_apply:
            raise InvalidArgumentError(
                f"`{type(self).__name__}.update()`: this average is a network "
                "(`.network(model)`), updated by the optimizer's own update at its step; "
                "drop the call (and the callback)."
            )
        self._average_at(self.clock.step.value)
        if self._own_clock and open_iteration(self.clock) is None:
            self.clock.advance()

    def after_update(self) -> None:
        """The optimizer's update just ran (before the clock advances): a network average
        takes the new weights at the update's step (hyperstep's optimizers call this)."""
        if not self.follows_apply:
            return
        if backends.in_stateless_scope():
            raise InvalidArgumentError(
                f"`{type(self).__name__}.network(...)`: the teacher's weights cannot be "
                "updated inside a stateless update (`optimizer.stateless_apply`, JAX's "
                "`fit`), which returns only the optimizer's variables. Train with the "
                "stateful `optimizer.apply`, or keep the average without a network "
                "(`ema.update()` after each update, or the EMA as a callback)."
            )
        self._average_at(self.clock.step.value)

    def _average_at(self, step: Any) -> None:
        """``avg = avg + (w - avg) * share`` (``form="difference"``) or
        ``avg = keep * avg + share * w`` (``"momentum"``) at ``step`` if it is due, with
        ``share = 1 - keep = 1 - decay(step)`` (EMA) or ``1 / (n + 1)`` (SWA)."""
        self.build()
        due = ops.logical_and(step >= self.start, ops.equal((step - self.start) % self.every, 0))
        n = self.n_averaged
        t = ops.cast(step, "float32")
        copies = self.state.init == "copy"  # the first due update copies the weights
        pairs = list(zip(self.variables, self.averages, strict=True))
        decay = self.state.decay  # EMA's (SWA's is None)
        if decay is not None and self.state.form == "momentum":
            keep = ops.cast(decay.at(t), "float32")
            if copies:
                keep = ops.where(ops.equal(n, 0), 0.0, keep)
            share = 1.0 - keep
            keep, share = ops.where(due, keep, 1.0), ops.where(due, share, 0.0)
            for variable, average in pairs:
                average.assign(
                    ops.cast(keep, average.dtype) * average
                    + ops.cast(share, average.dtype) * variable
                )
        else:
            share = 1.0 / (ops.cast(n, "float32") + 1.0) if decay is None else 1.0 - decay.at(t)
            if copies:
                share = ops.where(ops.equal(n, 0), 1.0, share)
            share = ops.where(due, share, 0.0)
            for variable, average in pairs:
                average.assign(average + (variable - average) * ops.cast(share, average.dtype))
        n.assign(n + ops.cast(due, n.dtype))

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        self.fit_model = model  # the model whose `fit` lists this average, until it ends

    def on_train_end(self, logs: Any = None) -> None:
        self.fit_model = None

    def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
        if self.follows_apply:  # the optimizer's update did it
            return
        _ = self.model  # on JAX, Keras writes fit's state back into the variables on access
        self.update()


def _init_name(where: str, init: Any) -> str:
    """``"copy"``, ``"initial"`` or ``"given"`` (weights or a model); raises otherwise."""
    if isinstance(init, str):
        if init in ("copy", "initial"):
            return init
    elif isinstance(init, (keras.Model, list, tuple)):
        return "given"
    raise InvalidArgumentError(
        f"`{where}(init=...)` must be 'copy' (the weights after the first update), 'initial' "
        "(the weights before the first update), a list of weights (one per trained "
        f"variable) or a `keras.Model` holding them. {received('init', init)}"
    )


def given_values(given: Any, variables: list[Any], where: str) -> list[Any]:
    """The start values ``init=`` gives, one per variable (a model's trainable weights)."""
    values = list(given.trainable_variables if isinstance(given, keras.Model) else given)
    shapes = [tuple(v.shape) for v in variables]
    found = [tuple(ops.shape(v)) for v in values]
    if found != shapes:
        raise InvalidArgumentError(
            f"`{where}(init=...)` must give one weight per trained variable, of its shape. "
            f"Received: shapes {found} for variables of shapes {shapes}."
        )
    return values


def _build_when_built(owner: Any, average: Average) -> None:
    """Build ``average`` right after ``owner.build`` (before its first update)."""
    build = owner.build

    def build_then_average(*args: Any, **kwargs: Any) -> Any:
        result = build(*args, **kwargs)
        owner.__dict__.pop("build", None)  # once: Keras's own method from now on
        if owner.built:
            average.build()
        return result

    owner.__dict__["build"] = build_then_average


# ---- the exchange ----------------------------------------------------------------------


def average_of(source: Any) -> Average | None:
    """The ``SWA``/``EMA`` constructed on ``source`` (an optimizer, wrapped or not, or the
    average itself), or None."""
    if isinstance(source, Average):
        return source
    source = hyperstep_optimizer(source)  # inside a wrapper such as hs.SkipNonFinite
    average = getattr(source, "_hs_average", None)
    if average is not None and average.state is getattr(source, ATTRIBUTE, None):
        return average
    return None


def _unwrap(source: Any) -> Any:
    average = average_of(source)
    if average is not None:
        return average
    source = hyperstep_optimizer(source)
    if getattr(source, ATTRIBUTE, None) is not None:  # restored, not constructed again yet
        return getattr(source, ATTRIBUTE)
    rule = getattr(source, "rule", None)
    if isinstance(source, AverageState) or (
        getattr(source, "built", False)
        and (getattr(rule, "averaged_slot", None) or getattr(rule, "memory_efficient", False))
    ):
        return source
    raise InvalidArgumentError(
        "`averaged_weights(source)` takes a built optimizer with a schedule-free rule, "
        "an optimizer given to `hs.SWA`/`hs.EMA`, or one of those. " + received("source", source)
    )


def exchange(source: Any, averaged: bool, *, warn: bool = True) -> bool:
    """Put the averaged (``True``) or the training (``False``) weights in the variables.

    Returns whether anything moved. Exchanges are exact; a ``memory_efficient``
    schedule-free rule computes ``x`` from ``y`` and ``z`` and restores the ``y`` it held
    (or, after a restore from a checkpoint written with ``x`` in, computes ``y``). An
    ``SWA``/``EMA`` that has averaged nothing yet moves nothing: the training weights stay
    (with a warning when ``warn``).
    """
    source = _unwrap(source)
    pairs: list[tuple[Any, Any]] | None = None  # None: x computed from y and z
    if isinstance(source, Average | AverageState):
        state = source.state if isinstance(source, Average) else source
        if averaged and int(ops.convert_to_numpy(state.n_averaged)) == 0:
            if warn and not bool(ops.convert_to_numpy(state.swapped)):
                kind = state.kind
                warnings.warn(
                    f"`hs.{kind.upper()}(start={state.start}, every={state.every})` has "
                    "averaged no weights yet, so the model keeps its training weights. It "
                    f"averages after each due update when it is among `fit`'s callbacks "
                    f"(`callbacks=[{kind}, ...]`) or when `{kind}.update()` follows each "
                    "update, from step `start` on.",
                    stacklevel=3,
                )
            return False
        if isinstance(source, Average):
            source.build()
            variables = source.variables
        else:  # restored, not constructed again yet
            variables = source._optimizer()._trainable_variables
        pairs = list(zip(variables, state.build_averages(variables), strict=True))
        flags = [state.swapped]
    else:
        variables = source._trainable_variables
        flags = [f for f in source._slots["swapped"] if f is not None]
        key = source.rule.averaged_slot
        if key is not None:
            pairs = [
                (v, s) for v, s in zip(variables, source._slots[key], strict=True) if s is not None
            ]
    if bool(ops.convert_to_numpy(flags[0])) == averaged:
        return False
    if pairs is None:
        _compute(source, variables, averaged)
    for variable, other in pairs or ():
        held = ops.copy(variable.value)
        variable.assign(other)
        other.assign(held)
    for flag in flags:
        flag.assign(ops.cast(averaged, flag.dtype))
    return True


def _compute(optimizer: Any, variables: list[Any], averaged: bool) -> None:
    rule, held = optimizer.rule, optimizer.__dict__.pop("_hs_held", None)
    if averaged:
        optimizer.__dict__["_hs_held"] = [ops.copy(v.value) for v in variables]
    for index, variable in enumerate(variables):
        if optimizer._slots["z"][index] is None:
            continue
        slots = Values({key: found[index] for key, found in optimizer._slots.items()})
        if averaged:
            variable.assign(rule.to_averaged(variable.value, slots))
        elif held is not None:
            variable.assign(held[index])
        else:
            variable.assign(rule.from_averaged(variable.value, slots))


@contextlib.contextmanager
def averaged_weights(source: Any) -> Iterator[None]:
    """Hold the averaged weights in the model's variables inside the block.

    ``source`` is an optimizer with a schedule-free rule (``x``), an optimizer given to
    :class:`SWA` or :class:`EMA`, or the averager itself. On exit the training weights come
    back, exactly. Do not apply the optimizer inside the block.

    Example:
        See :class:`SWA`.
    """
    moved = exchange(source, True)
    try:
        yield
    finally:
        if moved:
            exchange(source, False)


# ---- the averages: SWA and EMA, the SWA learning rate, the callback, BatchNorm --------
class SWA(Average):
    """Stochastic weight averaging: the equal average of the weights at due steps.

    ``avg = avg + (w - avg) / (n + 1)``, taken after the update that brings the clock to a
    step ``s`` with ``s >= start`` and ``(s - start) % every == 0``; ``n`` counts the
    weights averaged so far (``torch.optim.swa_utils.AveragedModel``). Pair it with
    :func:`swa_learning_rate`. As a Keras callback it updates after each batch of ``fit``;
    in a custom loop call :meth:`update` after each optimizer update. Saved with the
    optimizer; the same ``SWA(...)`` on a loaded optimizer continues it.

    Args:
        optimizer: A hyperstep optimizer (its clock decides the steps).
        start: The first step averaged.
        every: Average every ``every`` steps.

    Example:
        >>> import hyperstep as hs, keras
        >>> opt = hs.StepOptimizer("sgd", learning_rate=1.0)
        >>> w = keras.Variable([0.0])
        >>> swa = hs.SWA(opt, start=1)
        >>> for _ in range(3):
        ...     opt.apply([keras.ops.ones(1)], [w])
        ...     swa.update()
        >>> with hs.averaged_weights(opt):      # the average of -1, -2, -3
        ...     float(w.numpy()[0])
        -2.0
    """

    kind = "swa"

    def __init__(self, optimizer: Any, start: int = 0, every: int = 1) -> None:
        super().__init__(optimizer, start, every)


class EMA(Average):
    """An exponential moving average whose decay follows a schedule of the step.

    ``avg = avg + (w - avg) * (1 - decay(step))`` (``form="difference"``, TF1's
    ``ExponentialMovingAverage``) or ``avg = decay(step) * avg + (1 - decay(step)) * w``
    (``form="momentum"``: Keras's ``use_ema``, BYOL's and DINO's teachers) after each due
    update; ``decay`` is a number, a schedule or an expression, read on the optimizer's clock
    as a :class:`hyperstep.Hyperparameter` (so it can be set or scaled).

    The average starts (``init``) as a copy of the weights at the first due update
    (``"copy"``), as the weights before the first update (``"initial"``: TF1's
    ``ExponentialMovingAverage`` with ``num_updates=step`` bit for bit), or as given weights.
    Updated by :meth:`update` after each update (or as a callback in ``fit``); a teacher
    (:meth:`network`) is updated by the optimizer's update. Without an optimizer, it reads
    ``clock`` or a clock of its own that :meth:`update` advances (docs/recipes.md,
    "Teachers").

    Args:
        optimizer: A hyperstep optimizer, or ``None``.
        decay: The decay, e.g. ``"min(0.999, (1 + step) / (10 + step))"``.
        start: The first step averaged.
        every: Average every ``every`` steps.
        init: ``"copy"``, ``"initial"``, a list of weights or a ``keras.Model``.
        form: ``"difference"`` or ``"momentum"`` (the two roundings of the formula above).
        clock: Without an optimizer, the clock whose step the decay reads.

    Example:
        >>> import hyperstep as hs, keras
        >>> opt = hs.StepOptimizer("sgd", learning_rate=1.0)
        >>> ema = hs.EMA(opt, decay=0.5)
        >>> ema.decay.value.numpy().item()
        0.5
    """

    kind = "ema"

    def __init__(
        self,
        optimizer: Any = None,
        decay: Any = 0.999,
        start: int = 0,
        every: int = 1,
        init: Any = "copy",
        form: str = "difference",
        clock: Any = None,
    ) -> None:
        super().__init__(optimizer, start, every, decay, init=init, form=form, clock=clock)

    @property
    def decay(self) -> Hyperparameter:
        """The decay, a :class:`hyperstep.Hyperparameter` on the optimizer's clock."""
        return cast(Hyperparameter, self.state.decay)

    def network(self, model: Any) -> Any:
        """The average as a second network: a ``keras.Model`` of ``model``'s architecture
        whose trainable weights are the averages of ``model``'s.

        ``teacher = ema.network(student)`` is ``init`` when that is a model, else
        ``keras.models.clone_model(student)`` with the student's weights (and the given
        weights for a list). From now on the optimizer's update (``apply``, in ``fit`` or
        a custom loop; without an optimizer, :meth:`update`) updates the teacher right
        after it updates the weights, at that update's step ``t``: ``teacher = decay(t) *
        teacher + (1 - decay(t)) * student`` (``form="momentum"``) when ``t`` is due. Its
        weights are the average's, so they are saved and restored with the optimizer (and
        with any model that holds the teacher); ``network`` on a restored average continues
        it. Its non-trainable weights (BatchNorm statistics) are its own.

        Args:
            model: The student, a built ``keras.Model`` whose trainable weights the
                optimizer updates.

        Returns:
            The teacher, a ``keras.Model`` (the same one on every call).

        Raises:
            TypeError: If ``model`` is not a built ``keras.Model``.
            ValueError: For a second student, ``init`` weights of other shapes, or an ``init``
                model holding the student's own weights (the student itself).

        Example:
            >>> import hyperstep as hs, keras, numpy as np
            >>> student = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
            >>> opt = hs.StepOptimizer("sgd", learning_rate=0.1)
            >>> ema = hs.EMA(opt, decay=0.9, init="initial", form="momentum")
            >>> teacher = ema.network(student)
            >>> opt.apply([keras.ops.ones_like(v) for v in student.trainable_variables],
            ...           student.trainable_variables)
            >>> bias = teacher.trainable_variables[1]  # 0.9 * 0 + 0.1 * -0.1
            >>> round(float(bias.numpy()[0]), 6)
            -0.01
        """
        if self._network is not None:
            if model is self._student:
                return self._network
            raise InvalidArgumentError(
                "`EMA.network(model)` was already called with another model; one EMA averages "
                f"one student. {received('model', model)}"
            )
        if not isinstance(model, keras.Model) or not model.built:
            raise InvalidTypeError(
                "`EMA.network(model)` takes a built `keras.Model` (the student). "
                + received("model", model)
            )
        variables = list(model.trainable_variables)
        if isinstance(self._given, keras.Model):
            teacher = self._given
            student_ids = {id(v) for v in variables}
            if any(id(v) in student_ids for v in teacher.trainable_variables):
                raise InvalidArgumentError(
                    "`EMA(init=...)` holds the student's own weights, so the teacher would be "
                    "the student. Pass a copy: `init=keras.models.clone_model(student)`. "
                    f"{received('init', self._given)}"
                )
            given_values(teacher, variables, "EMA")  # one weight per student's, of its shape
        else:
            teacher = keras.models.clone_model(model)
            teacher.set_weights(model.get_weights())
        targets = list(teacher.trainable_variables)
        held = self.state.averages or self.state._pending
        if held and len(held) != len(targets):
            if int(ops.convert_to_numpy(self.n_averaged)) > 0:
                raise InvalidArgumentError(
                    f"`EMA.network(model)`: the average holds {len(held)} weights and the "
                    f"model has {len(targets)} trainable weights."
                )
            self.state.averages, self.state._pending = [], ()  # nothing averaged yet
        elif not held and isinstance(self._given, (list, tuple)):
            given = given_values(self._given, variables, "EMA")
            for target, value in zip(targets, given, strict=True):
                target.assign(value)
        self.state.use_averages(targets)
        self.variables = variables
        self._network, self._student = teacher, model
        self.follows_apply = self.optimizer is not None  # else `update()` after each update
        return teacher


def swa_learning_rate(
    before: Any, swa_lr: float, start: int, anneal_steps: int = 10, anneal_strategy: str = "cos"
) -> Any:
    """The learning rate of ``before`` until ``start``, then annealed to ``swa_lr`` (SWALR).

    ``lr(start + s) = swa_lr * a + lr0 * (1 - a)``, ``a = (1 - cos(pi * t)) / 2`` (``"cos"``)
    or ``t`` (``"linear"``), ``t = min(s / anneal_steps, 1)``, ``lr0 = before(start)``:
    ``torch.optim.swa_utils.SWALR`` stepped once per step from ``start``
    (``anneal_steps=0``: ``swa_lr`` from ``start`` on, as SWALR's ``anneal_epochs=0``).

    Raises:
        ValueError: Where SWALR raises (``anneal_strategy`` not ``"cos"``/``"linear"``,
            ``anneal_steps`` not an ``int`` or below 0), or ``start`` not an int >= 0.
        TypeError: For a ``swa_lr`` that is not a number.

    Example:
        >>> lr = swa_learning_rate(0.1, swa_lr=0.05, start=100, anneal_steps=10)
        >>> [round(float(lr(s)), 4) for s in (99, 100, 105, 110, 200)]
        [0.1, 0.1, 0.075, 0.05, 0.05]
    """
    check_choice("swa_learning_rate", "anneal_strategy", anneal_strategy, ("cos", "linear"))
    if not isinstance(anneal_steps, int) or anneal_steps < 0:  # torch's check (True is 1)
        raise InvalidArgumentError(
            "`swa_learning_rate(anneal_steps=...)` must be an integer >= 0 (as SWALR's "
            f"anneal_epochs). {received('anneal_steps', anneal_steps)}"
        )
    check_number("swa_learning_rate", "swa_lr", swa_lr)
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise InvalidArgumentError(
            "`swa_learning_rate(start=...)` must be an integer >= 0 (the step SWA starts "
            f"at). {received('start', start)}"
        )
    before = as_schedule(before, name="before")
    lr0 = float(ops.convert_to_numpy(before(start)))
    if anneal_steps == 0:  # SWALR(anneal_epochs=0): swa_lr from the first step on
        anneal = as_schedule(float(swa_lr), name="swa_lr")
    elif anneal_strategy == "cos":
        anneal = families.cosine(lr0, steps=int(anneal_steps), end=swa_lr)
    else:
        anneal = families.linear(lr0, swa_lr, steps=int(anneal_steps))
    return combinators.join([before, anneal], [start])


class AveragedWeights(keras.callbacks.Callback):
    """Evaluate, predict and save with the averaged weights inside ``fit``.

    The averaged weights are exchanged in for ``evaluate`` and ``predict`` (also fit's
    validation), and at the end of each epoch, so callbacks listed after this one
    (``ModelCheckpoint``) save them; the training weights come back when the next epoch
    begins. With ``at_end="averaged"`` the model keeps the averaged weights after ``fit``.

    Args:
        source: As for :func:`averaged_weights` (built lazily: the optimizer is built by
            ``fit``).
        at_end: ``"averaged"`` or ``"training"``: the weights left after ``fit``.

    Example:
        >>> import hyperstep as hs
        >>> opt = hs.StepOptimizer(hs.rules.ScheduleFreeAdamWRule())
        >>> hs.callbacks.AveragedWeights(opt).at_end
        'averaged'
    """

    def __init__(self, source: Any, at_end: str = "averaged") -> None:
        super().__init__()
        self.source = source
        self.at_end = check_choice("AveragedWeights", "at_end", at_end, ("averaged", "training"))
        self._moved = False

    def _to(self, averaged: bool, warn: bool = False) -> bool:
        optimizer = getattr(self.source, "optimizer", self.source)
        if not getattr(optimizer, "built", False):
            return False
        return exchange(self.source, averaged, warn=warn)

    def on_train_begin(self, logs: Any = None) -> None:
        average = average_of(self.source)
        if average is not None and not average.follows_apply and average.fit_model is None:
            kind = average.kind
            raise InvalidArgumentError(
                f"`AveragedWeights`: the `hs.{kind.upper()}` of this optimizer is not among "
                "`fit`'s callbacks, so it would average nothing. Pass it too: "
                f"`{kind} = hs.{kind.upper()}(opt, ...)` and `model.fit(..., callbacks=[{kind}, "
                f"hs.callbacks.AveragedWeights(opt)])`. Received: callbacks without the {kind}."
            )
        fit_began(self.model, self.params, _clocks(self.source))
        self._to(False)

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        epoch_began(self.model, epoch, _clocks(self.source))
        self._to(False)

    def on_test_begin(self, logs: Any = None) -> None:
        self._moved = self._to(True)

    def on_test_end(self, logs: Any = None) -> None:
        if self._moved:
            self._to(False)
            self._moved = False

    on_predict_begin = on_test_begin
    on_predict_end = on_test_end

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self._to(True)

    def on_train_end(self, logs: Any = None) -> None:
        self._to(self.at_end == "averaged", warn=True)


def _clocks(source: Any) -> list[Any]:
    """The clock of ``source`` (an optimizer, or a model's optimizer), if it has one."""
    clock = getattr(getattr(source, "optimizer", source), "clock", None)
    return [clock] if isinstance(clock, Clock) else []


def refresh_batch_norm(model: Any, data: Iterable[Any]) -> None:
    """Recompute every BatchNormalization layer's statistics over ``data`` (``update_bn``).

    ``moving_mean`` and ``moving_variance`` become the equal averages over the batches of
    the batch mean and (biased, as Keras's training uses) batch variance, computed in
    training mode at the weights now in the model (call it inside
    :func:`averaged_weights`). Weights other than the statistics do not change.

    Args:
        model: A Keras model.
        data: An iterable of input batches, or of ``(inputs, ...)`` tuples.
    """
    layers = [
        layer for layer in layers_of(model) if isinstance(layer, keras.layers.BatchNormalization)
    ]
    if not layers:
        return
    momenta = [layer.momentum for layer in layers]
    try:
        for n, batch in enumerate(data):
            inputs = batch[0] if isinstance(batch, tuple | list) else batch
            for layer in layers:
                layer.momentum = n / (n + 1)  # moving = (n * moving + batch) / (n + 1)
            model(inputs, training=True)
    finally:
        for layer, momentum in zip(layers, momenta, strict=True):
            layer.momentum = momentum
