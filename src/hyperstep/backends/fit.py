"""Every ``model.fit`` tells hyperstep when it starts and when each epoch begins.

Keras hands a callback fit's epoch index (``on_epoch_begin(epoch)``) and its epoch length
(``params["steps"]``), and nothing else does: the training step sees neither. So that no
callback has to be passed, :func:`follow_fit` wraps ``keras.callbacks.CallbackList``'s
``on_train_begin``, ``on_epoch_begin`` and ``on_epoch_end`` (the container every ``fit`` on
every backend calls) to call hyperstep first, then Keras's own code, and
``keras.Model.make_train_function`` (:func:`follow_train_steps`). Keras's ``TensorBoard``
reads ``optimizer.learning_rate`` itself at its epoch end (``_collect_learning_rate``,
private); :func:`follow_epoch_ends` gives it the value the epoch trained with. Keras's
classes are wrapped once, when this module is imported (never from a constructor);
hyperstep's handlers register with :func:`follow_fit` and :func:`follow_epoch_ends`.
``tests/control/test_fit_epochs.py`` and ``tests/backends/test_fit.py`` pin it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import keras

from hyperstep.backends.internals import wrap_methods
from hyperstep.backends.versions import reach

#: (fit started, epoch began) handlers, called with the CallbackList's model
_HANDLERS: list[tuple[Callable[..., None], Callable[..., None]]] = []
#: (epoch ends, trained learning rate) handlers (:func:`follow_epoch_ends`)
_EPOCH_ENDS: list[tuple[Callable[..., None], Callable[[Any], float | None]]] = []
#: the function that makes a model's train step (hyperstep.iteration.fit_iteration)
_TRAIN_STEP_WRAPS: list[Callable[..., Any]] = []


def follow_fit(
    train_begin: Callable[[Any, Any], None], epoch_begin: Callable[[Any, int], None]
) -> None:
    """Call ``train_begin(model, params)`` at every fit's start and ``epoch_begin(model,
    epoch)`` at each of its epochs, before the callbacks (registered once; Keras itself was
    wrapped at this module's import)."""
    if (train_begin, epoch_begin) not in _HANDLERS:
        _HANDLERS.append((train_begin, epoch_begin))


def follow_epoch_ends(
    epoch_end: Callable[[Any, int, dict[str, Any], list[Any]], None],
    learning_rate: Callable[[Any], float | None],
) -> None:
    """Call ``epoch_end(model, epoch, logs, callbacks)`` at each epoch's end before the
    callbacks; Keras's ``TensorBoard`` logs ``learning_rate(optimizer)`` as an optimizer's
    learning rate where that is not None (registered once)."""
    if (epoch_end, learning_rate) not in _EPOCH_ENDS:
        _EPOCH_ENDS.append((epoch_end, learning_rate))


def _follow_callback_lists() -> None:
    """Wrap ``keras.callbacks.CallbackList``'s fit hooks (once, at import)."""
    cls = keras.callbacks.CallbackList
    keras_train_begin, keras_epoch_begin = cls.on_train_begin, cls.on_epoch_begin
    keras_epoch_end = cls.on_epoch_end

    def on_train_begin(self: Any, logs: Any = None) -> Any:
        model = getattr(self, "model", None)
        if model is not None and keras.backend.backend() == "jax":
            from hyperstep.backends.jax import fit_started

            fit_started(model)
        if model is not None:
            for begin, _ in _HANDLERS:
                begin(model, getattr(self, "params", None))
        return keras_train_begin(self, logs)

    def on_epoch_begin(self: Any, epoch: int, logs: Any = None) -> Any:
        model = getattr(self, "model", None)
        if model is not None:
            for _, begin in _HANDLERS:
                begin(model, epoch)
        return keras_epoch_begin(self, epoch, logs)

    def on_epoch_end(self: Any, epoch: int, logs: Any = None) -> Any:
        model, logs = getattr(self, "model", None), {} if logs is None else logs
        if model is not None:
            for end, _ in _EPOCH_ENDS:
                end(model, epoch, logs, list(self.callbacks))
        return keras_epoch_end(self, epoch, logs)

    wrap_methods(cls, on_train_begin, on_epoch_begin, on_epoch_end)
    if keras.backend.backend() == "jax":  # Keras's backend is fixed once it is imported
        wrap_methods(cls, *_jax_batch_hooks(cls))


def _jax_batch_hooks(cls: Any) -> list[Any]:
    """``on_train_batch_begin``/``_end`` wrappers for JAX's ``fit``, whose trainer holds the
    state between steps (:mod:`hyperstep.backends.jax`): each batch applies the writes other
    threads made and keeps the direct assigns of the callbacks. Only on JAX: elsewhere a
    batch costs hyperstep nothing. Each per-batch call is a list test while no fit holds
    the state."""
    from hyperstep.backends import jax as jax_fit

    keras_batch_begin, keras_batch_end = cls.on_train_batch_begin, cls.on_train_batch_end
    apply_pending, adopt_direct_writes = jax_fit.apply_pending, jax_fit.adopt_direct_writes

    def on_train_batch_begin(self: Any, batch: int, logs: Any = None) -> Any:
        apply_pending()  # writes from another thread during JAX fit, applied here
        result = keras_batch_begin(self, batch, logs)
        adopt_direct_writes()  # direct assigns from the callbacks, kept
        return result

    def on_train_batch_end(self: Any, batch: int, logs: Any = None) -> Any:
        result = keras_batch_end(self, batch, logs)
        adopt_direct_writes()  # before the epoch's end writes the trainer's state back
        return result

    return [on_train_batch_begin, on_train_batch_end]


def _follow_tensorboard() -> None:
    """Wrap ``keras.callbacks.TensorBoard._collect_learning_rate`` (private; once, at
    import): it puts ``optimizer.learning_rate``, read at its own epoch end, into the epoch's
    logs as ``learning_rate``, after a change a callback before it made there; the handlers
    of :func:`follow_epoch_ends` give the value the epoch trained with instead."""
    cls = keras.callbacks.TensorBoard
    keras_collect = reach("keras.callbacks.TensorBoard._collect_learning_rate", fallback=None)
    if keras_collect is None:
        return  # pragma: no cover - other Keras versions

    def _collect_learning_rate(self: Any, logs: Any) -> Any:
        logs = keras_collect(self, logs)
        for _, trained in _EPOCH_ENDS if "learning_rate" in logs else ():
            value = trained(self.model.optimizer)
            logs["learning_rate"] = logs["learning_rate"] if value is None else value
        return logs

    wrap_methods(cls, _collect_learning_rate)


def write_through(variable: Any, value: Any) -> None:
    """``variable.assign(value)``, reaching a JAX ``fit`` in progress from its next step
    (see :mod:`hyperstep.backends.jax`); a plain ``assign`` elsewhere and in traced code."""
    if keras.backend.backend() == "jax":
        from hyperstep.backends.jax import write
        from hyperstep.backends.scopes import in_stateless_scope

        if not in_stateless_scope() and write(variable, value):
            return
    variable.assign(value)


def held_state(variables: list[Any]) -> Any:
    """A scope in which ``variables`` read what a JAX ``fit`` in progress holds (their own
    values are purged there), or None where nothing is held."""
    if keras.backend.backend() != "jax":
        return None
    from hyperstep.backends.scopes import in_stateless_scope

    if in_stateless_scope():
        return None
    from hyperstep.backends.jax import held_scope

    return held_scope(variables)


def readable_in_fit(variables: list[Any]) -> None:
    """Let ``variables`` (a clock's) be read while a JAX ``fit`` holds the training state,
    e.g. ``opt.clock.step`` in a batch callback (:func:`hyperstep.backends.jax.read_held`);
    nothing elsewhere, where the variables keep their values."""
    if keras.backend.backend() == "jax":
        from hyperstep.backends.jax import read_held

        read_held(variables)


def follow_train_steps(wrap: Callable[[Any, Callable[..., Any]], Callable[..., Any]]) -> None:
    """Make every model's train step ``wrap(model, train_step)`` (the first ``wrap`` given;
    ``keras.Model`` itself was wrapped at this module's import)."""
    if not _TRAIN_STEP_WRAPS:
        _TRAIN_STEP_WRAPS.append(wrap)


def _follow_train_steps() -> None:
    """Wrap ``keras.Model.make_train_function`` (once, at import).

    ``make_train_function`` (public, and where each backend's ``fit`` reads
    ``self.train_step``: TensorFlow and JAX when they build the train function, torch at each
    call) first sets the wrapped step on the model (its class's ``train_step``, a custom one
    included), then runs Keras's own code.
    """
    cls = keras.Model
    keras_make = cls.make_train_function

    def make_train_function(self: Any, force: bool = False) -> Any:
        own = self.__dict__.get("train_step")  # a step set on the model itself, if any
        if _TRAIN_STEP_WRAPS and not isinstance(own, _TrainStep):
            self.__dict__["train_step"] = _TrainStep(self, _TRAIN_STEP_WRAPS[0], own)
        return keras_make(self, force)

    wrap_methods(cls, make_train_function)


class _TrainStep:
    """``model``'s train step as ``wrap`` makes it: ``own`` (a function set on the model)
    or its class's ``train_step``; a copy of the model (``copy.deepcopy``) gets its own,
    bound to the copy."""

    def __init__(self, model: Any, wrap: Callable[..., Any], own: Any = None) -> None:
        self.model, self.wrap, self.own = model, wrap, own
        inner = own if own is not None else type(model).train_step.__get__(model)
        self.step = wrap(model, inner)
        self.__wrapped__ = inner
        self.__name__ = "train_step"  # (jax.jit names its function)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.step(*args, **kwargs)

    def __deepcopy__(self, memo: dict[int, Any]) -> _TrainStep:
        import copy

        return _TrainStep(copy.deepcopy(self.model, memo), self.wrap, self.own)


def peek(iterator: Any) -> tuple[Any, Iterator[Any]]:
    """Take the first batch of ``fit``'s data and return it with an iterator that yields it
    again first (the doctor's first step)."""
    iterator = iter(iterator)
    first = next(iterator)
    return first, itertools.chain([first], iterator)


def layers_of(model: Any) -> list[Any]:
    """``model`` and every layer inside it, recursively (Keras's ``_flatten_layers``,
    private; pinned in ``tests/backends/test_internals.py``)."""
    flatten = getattr(model, "_flatten_layers", None)
    if flatten is None:  # pragma: no cover - other Keras versions
        return [model, *getattr(model, "layers", [])]
    return list(flatten(include_self=True, recursive=True))


# once, at import: Keras's classes are wrapped here, never from a constructor
_follow_callback_lists()
_follow_tensorboard()
_follow_train_steps()
