"""The training iteration: which optimizer advances a :class:`~hyperstep.Clock`, and when
(the rule is the Clock's): ``fit``'s train step (:func:`fit_iteration`), ``with
clock.iteration():`` (:func:`training_iteration`), else the optimizer that claimed the clock
(:func:`claim`), which :func:`note_update` checks.
"""

from __future__ import annotations

import contextlib
import threading
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import keras
from keras import ops

from hyperstep import backends
from hyperstep.backends.fit import follow_train_steps
from hyperstep.backends.internals import wrap_methods
from hyperstep.backends.jax import advance_in_state
from hyperstep.errors import InvalidArgumentError


# ---- who advances a clock ---------------------------------------------------------------
class _Claims:
    """The optimizers on one clock: the one that advances it, every one that claimed it,
    and what :func:`note_update` saw of their order outside iterations."""

    def __init__(self) -> None:
        self.owner: Any = None  # weakref to the optimizer that advances the clock
        self.optimizers: list[Any] = []  # weakrefs to every optimizer on the clock
        self.order = ""  # outside iterations: "" unchecked, "ok" or "warned" (note_update)
        self.advanced = False  # ... and whether the advancing optimizer updated yet

    def current(self) -> Any:
        return self.owner() if self.owner is not None else None


_CLAIMS: weakref.WeakKeyDictionary[Any, _Claims] = weakref.WeakKeyDictionary()


def _claims(clock: Any) -> _Claims:
    found = _CLAIMS.get(clock)
    if found is None:
        found = _CLAIMS[clock] = _Claims()
    return found


def claimed(clock: Any) -> bool:
    """Whether an optimizer advances ``clock`` (see :func:`claim`)."""
    return _claims(clock).current() is not None


def claim(clock: Any, owner: Any, advance: bool | None) -> bool:
    """Decide whether ``owner`` advances ``clock``; return that decision.

    ``advance=None`` means "advance if nobody does yet". ``advance=True`` when another
    live object already advances the clock raises: two advances per step would count
    each training step twice.
    """
    claims = _claims(clock)
    current = claims.current()
    if not any(ref() is owner for ref in claims.optimizers):
        claims.optimizers.append(weakref.ref(owner))
    if advance is None:
        advance = current is None or current is owner
    if advance:
        if current is not None and current is not owner:
            raise InvalidArgumentError(
                f"`Clock(name={clock.name!r})` is already advanced by {current!r}; "
                "exactly one optimizer may advance a shared clock. Pass "
                "`advance=False` to the others. Received: advance=True"
            )
        claims.owner = weakref.ref(owner)
    backends.on_claim()  # JAX: the optimizer will hold a copy of `step` in fit
    return bool(advance)


def live_optimizers(clock: Any) -> list[Any]:
    """The live optimizers on ``clock`` (each that claimed it, see :func:`claim`)."""
    return [o for o in (ref() for ref in _claims(clock).optimizers) if o is not None]


def note_update(clock: Any, optimizer: Any, advances: bool) -> None:
    """An update outside any iteration: warn at the first one that reads a step another
    optimizer already advanced in program order (called by hyperstep's optimizers)."""
    claims = _claims(clock)
    if claims.order:
        return
    if advances:
        claims.advanced = True
        return
    if not claims.advanced:
        claims.order = "ok"  # a reader updated first: the advancing one ends each iteration
        return
    claims.order = "warned"
    warnings.warn(
        f"`Clock(name={clock.name!r})`: {_name(optimizer)} updates after "
        f"{_name(claims.current())} advanced the clock, so it reads the next step in the "
        "same iteration. Wrap each training iteration in `with clock.iteration():` (every "
        "update then sees the iteration's step; the clock advances once at its end), or let "
        "the optimizer that updates last advance it (`advance=True` on it, `advance=False` "
        "on the others). `model.fit` needs neither.",
        UserWarning,
        stacklevel=4,
    )


def _name(optimizer: Any) -> str:
    return f"optimizer {getattr(optimizer, 'name', type(optimizer).__name__)!r}"


# ---- training iterations ----------------------------------------------------------------
class Iteration:
    """A training iteration in progress: which clocks it covers, the updates made in it.

    ``clocks=None`` covers every clock (a train step of ``fit``). Each update on a covered
    clock is recorded (:meth:`record`), with the condition it runs under
    (:func:`conditional`); :meth:`advances` says by how much each clock moves at the end.
    """

    def __init__(self, clocks: Sequence[Any] | None) -> None:
        self.clocks = None if clocks is None else list(clocks)
        self.updates: dict[int, tuple[Any, list[tuple[Any, Any]]]] = {}
        self.stateless = False  # an update inside a StatelessScope (`stateless_apply`)

    def covers(self, clock: Any) -> bool:
        """Whether updates on ``clock`` belong to this iteration."""
        return self.clocks is None or any(c is clock for c in self.clocks)

    def record(self, clock: Any, optimizer: Any) -> None:
        """``optimizer`` updated on ``clock`` (under the outermost :func:`conditional`: one
        inside it is computed in a branch of the outer one's ``cond``, and cannot leave it)."""
        conditions = _stack(_CONDITIONS)
        condition = conditions[0] if conditions else None
        self.updates.setdefault(id(clock), (clock, []))[1].append((optimizer, condition))
        self.stateless = self.stateless or backends.in_stateless_scope()

    def advances(self, read: Callable[[Any], Any] | None = None) -> list[tuple[Any, Any]]:
        """``(clock, applied)`` for each clock to advance: ``applied`` is ``True`` or a
        boolean tensor (an update under a condition, a gradient-accumulation micro-step).
        ``read(variable)`` reads an optimizer's ``iterations`` (stateless training)."""
        found: list[tuple[Any, Any]] = []
        for clock, updates in self.updates.values():
            found.append((clock, _applied(updates, read or (lambda v: v.value))))
        for clock in self.clocks or ():  # a clock with no optimizer: one per iteration
            if id(clock) not in self.updates and not live_optimizers(clock):
                found.append((clock, True))
        return found

    def finish(self) -> None:
        """Advance each clock once (by whether an update was applied).

        Raises:
            ValueError: After a stateless update (``stateless_apply``): the step it read is
                in the state the caller carries, not in the clock's variable.
        """
        if self.stateless:
            raise InvalidArgumentError(
                "`clock.iteration()` cannot advance a step held in stateless state: an "
                "update inside it ran through `stateless_apply` (a custom `jax.jit` loop). "
                "There, let one optimizer advance the clock (`advance=True`, updating last) "
                "and hand its step to the others with `Clock.stateless_copy`; "
                "`model.fit` advances the step in its own state by itself."
            )
        for clock, applied in self.advances():
            if applied is True:
                clock.advance()
            else:
                clock.step.assign_add(ops.cast(applied, clock.step.dtype))


def _applied(updates: list[tuple[Any, Any]], read: Callable[[Any], Any]) -> Any:
    """Whether any of ``updates`` applied: ``True`` or a boolean tensor."""
    flags = []
    for optimizer, condition in updates:
        steps = getattr(optimizer, "gradient_accumulation_steps", None)
        flag = condition
        if steps:  # applied on the micro-step that completes the accumulation
            done = ops.equal(ops.mod(read(optimizer._iterations), steps), 0)
            flag = done if flag is None else ops.logical_and(flag, done)
        if flag is None:
            return True
        flags.append(flag)
    found = flags[0]
    for flag in flags[1:]:
        found = ops.logical_or(found, flag)
    return found


#: open iterations and update conditions, per thread (``None`` under ``torch.compile``,
#: which cannot trace ``threading``; tf.distribute runs each replica in its own thread)
_OPEN: dict[int | None, list[Iteration]] = {}
_CONDITIONS: dict[int | None, list[Any]] = {}


def _stack(table: dict[int | None, list[Any]]) -> list[Any]:
    return table.setdefault(None if backends.compiling() else threading.get_ident(), [])


def open_iteration(clock: Any) -> Iteration | None:
    """The innermost open iteration covering ``clock``, else ``None``."""
    for iteration in reversed(_stack(_OPEN)):
        if iteration.covers(clock):
            return iteration
    return None


@contextlib.contextmanager
def training_iteration(clocks: Sequence[Any] | None, *, finish: bool = True) -> Iterator[Iteration]:
    """Open an iteration over ``clocks`` (``None``: every clock); on a normal exit advance
    each clock once (``finish=False``: the caller does, e.g. in JAX's fit state)."""
    iteration = Iteration(clocks)
    stack = _stack(_OPEN)
    stack.append(iteration)
    try:
        yield iteration
    finally:
        stack.remove(iteration)
    if finish:
        iteration.finish()


@contextlib.contextmanager
def conditional(condition: Any) -> Iterator[None]:
    """Updates recorded inside apply only where ``condition`` holds (a boolean tensor):
    ``hs.SkipNonFinite`` and Keras's ``LossScaleOptimizer`` (:func:`_follow_loss_scaling`)
    wrap their conditional update in it."""
    stack = _stack(_CONDITIONS)
    stack.append(condition)
    try:
        yield
    finally:
        stack.pop()


def fit_iteration(model: Any, train_step: Callable[..., Any]) -> Callable[..., Any]:
    """``train_step`` as one training iteration (installed on every model's train step by
    :func:`hyperstep.backends.fit.follow_train_steps`); stateless training (JAX) advances the
    clocks in the state it returns."""
    if backends.trains_statelessly():

        def stateless_step(state: Any, data: Any) -> Any:
            with training_iteration(None, finish=False) as iteration:
                logs, new_state = train_step(state, data)
            return logs, advance_in_state(model, new_state, iteration)

        return stateless_step

    def step(*args: Any, **kwargs: Any) -> Any:
        with training_iteration(None):
            return train_step(*args, **kwargs)

    return step


def _follow_loss_scaling() -> None:
    """Wrap ``keras.optimizers.LossScaleOptimizer``'s ``apply`` and ``stateless_apply``
    (once, at import) in :func:`conditional` on its ``check_finite(grads)``: an update it
    skips (the gradients overflowed) does not advance the clock, as it does not advance
    Keras's ``iterations``. A traced ``cond`` (TensorFlow's graphs, JAX) traces the update
    in both cases; the condition, computed as Keras computes it, decides."""
    cls = keras.optimizers.LossScaleOptimizer
    keras_apply, keras_stateless_apply = cls.apply, cls.stateless_apply

    def apply(self: Any, grads: Any, trainable_variables: Any = None) -> Any:
        grads = list(grads)
        with conditional(self.check_finite(grads)):
            return keras_apply(self, grads, trainable_variables)

    def stateless_apply(
        self: Any, optimizer_variables: Any, grads: Any, trainable_variables: Any
    ) -> Any:
        grads = list(grads)
        with conditional(self.check_finite(grads)):
            return keras_stateless_apply(self, optimizer_variables, grads, trainable_variables)

    wrap_methods(cls, apply, stateless_apply)


# once, at import: every model's train step is one training iteration (not per Clock), and
# an update Keras's LossScaleOptimizer skips is not one
follow_train_steps(fit_iteration)
_follow_loss_scaling()
