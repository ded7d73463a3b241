"""JAX: Keras's JAX trainer taught that a clock's step may be in two states at once.

Uses Keras's private ``keras.src.backend.jax.trainer.JAXTrainer`` (``train_step`` and
``_get_jax_state``, reached through :func:`hyperstep.backends.versions.reach`), pinned by
``tests/backends/test_jax_training.py`` and ``tests/backends/test_internals.py``.
"""

from __future__ import annotations

import threading
from typing import Any


def optimizer_copy_wins_in_fit() -> None:
    """Teach Keras's JAX trainer that a variable may be in the model's and the optimizer's state.

    Keras's JAX ``fit`` carries ``model.non_trainable_variables`` and
    ``optimizer.variables`` as separate lists of arrays between jitted steps and writes
    them back at the end of an epoch (optimizer last). A clock's step is in both lists when
    a hyperparameter in the model runs on an optimizer's clock. Two changes, installed
    once:

    * before and after Keras's own ``train_step``, the model's copy of every variable the
      optimizer also holds takes the optimizer's value: the forward pass reads the step the
      optimizer is about to use, and the state handed on agrees (the optimizer also wins
      in Keras's ``jax_state_sync``, which assigns its values last); decided while
      tracing, it adds nothing to the compiled step;
    * when the state is read from the variables, the model's copy gets its own buffer
      (the jitted step donates its inputs, and XLA refuses one buffer donated twice).

    A model whose ``train_step`` does not call ``super().train_step`` uses
    :meth:`Clock.stateless_copy` itself.
    """
    from hyperstep.backends.internals import wrap_methods
    from hyperstep.backends.versions import reach

    reach("keras.src.backend.jax.trainer.JAXTrainer._get_jax_state")
    from keras.src.backend.jax.trainer import JAXTrainer

    keras_train_step = JAXTrainer.train_step
    keras_get_jax_state = JAXTrainer._get_jax_state

    def train_step(self: Any, state: Any, data: Any) -> Any:
        shared = _shared_in_fit(self)
        if not shared or len(state) != 4:
            return keras_train_step(self, state, data)
        logs, state = keras_train_step(self, _optimizer_copy(state, shared), data)
        return logs, _optimizer_copy(state, shared)

    def _get_jax_state(self: Any, *args: Any, **kwargs: Any) -> Any:
        state = keras_get_jax_state(self, *args, **kwargs)
        if not (kwargs.get("non_trainable_variables") and kwargs.get("optimizer_variables")):
            return state
        shared = _shared_in_fit(self)
        if shared:
            import jax.numpy as jnp

            index = 1 if kwargs.get("trainable_variables") else 0
            non_trainable = list(state[index])
            for i, _ in shared:
                non_trainable[i] = jnp.array(non_trainable[i], copy=True)
            state = (*state[:index], non_trainable, *state[index + 1 :])
        return state

    wrap_methods(JAXTrainer, train_step, _get_jax_state)


def _optimizer_copy(state: Any, shared: list[tuple[int, int]]) -> Any:
    """Keras's JAX training state with the optimizer's value in the model's copies."""
    trainable, non_trainable, optimizer_values, metrics = state
    non_trainable = list(non_trainable)
    for i, j in shared:
        non_trainable[i] = optimizer_values[j]
    return trainable, non_trainable, optimizer_values, metrics


def _shared_in_fit(model: Any) -> list[tuple[int, int]]:
    """``(i, j)`` for each variable at ``model.non_trainable_variables[i]`` and
    ``model.optimizer.variables[j]``."""
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None:
        return []
    where = {id(v): j for j, v in enumerate(optimizer.variables)}
    return [
        (i, where[id(v)]) for i, v in enumerate(model.non_trainable_variables) if id(v) in where
    ]


def advance_in_state(model: Any, state: Any, iteration: Any) -> Any:
    """Keras's JAX training state ``(trainable, non_trainable, optimizer, metrics)`` with
    each clock the train step updated advanced by one (where an update applied).

    The step lives in ``state``, not in the variables, during ``fit``: in the optimizer's
    copy (``model.optimizer.variables``) and, where the model reads a hyperparameter on the
    clock, in the model's (``model.non_trainable_variables``); both move.

    Raises:
        ValueError: If a clock updated in the step is not in the optimizer's state (an
            optimizer other than ``model.optimizer`` on its own clock).
    """
    from keras import ops

    from hyperstep.errors import InvalidArgumentError

    optimizer = getattr(model, "optimizer", None)
    if not iteration.updates or optimizer is None or len(state) != 4:
        return state
    trainable, non_trainable, optimizer_values, metrics = state
    where = {id(v): j for j, v in enumerate(optimizer.variables)}
    optimizer_values, non_trainable = list(optimizer_values), list(non_trainable)

    def read(variable: Any) -> Any:
        j = where.get(id(variable))
        return variable.value if j is None else optimizer_values[j]

    for clock, applied in iteration.advances(read):
        j = where.get(id(clock.step))
        if j is None:
            raise InvalidArgumentError(
                f"`Clock(name={clock.name!r})` was updated in a JAX `fit` train step, but its "
                "step is not in the state `fit` carries (`model.optimizer.variables`): an "
                "optimizer that is not the model's holds it. Put every optimizer on the "
                "model's optimizer's clock (`clock=model.optimizer.clock`). Received: "
                f"model.optimizer={optimizer.name!r}"
            )
        step = optimizer_values[j]
        step = step + (1 if applied is True else ops.cast(applied, step.dtype))
        optimizer_values[j] = step
        for i, variable in enumerate(model.non_trainable_variables):
            if variable is clock.step:
                non_trainable[i] = step
    return trainable, non_trainable, optimizer_values, metrics


# ---- writes and reads during JAX `fit` -------------------------------------------------------
# Keras's JAX `fit` keeps the training state in the trainer between steps (`_jax_state`,
# `_jax_state_synced`; the variables' own values are purged) and writes it back at the end of
# an epoch (`jax_state_sync`). A hyperstep write during `fit` must reach the next step and
# survive the end: from the fit's own thread (a batch callback) the trainer's state is put
# back first (`jax_state_sync`, what Keras's `Callback.model` does) and the next step reads
# the variables again; from another thread the write waits for the fit's thread, which
# applies it at the next batch's start. Reads compute from the trainer's state.

_FITS: list[tuple[Any, int]] = []  # (weakref to a model in JAX fit, its thread)
_QUEUE: list[tuple[Any, Any]] = []  # (variable, value) written by another thread
_LOCK = threading.Lock()


def fit_started(model: Any) -> None:
    """Remember ``model`` as in a JAX ``fit`` run by the calling thread (at its start)."""
    import weakref

    from hyperstep.backends.versions import reach

    reach("keras.src.backend.jax.trainer.JAXTrainer._jax_state")
    with _LOCK:
        _FITS[:] = [(ref, t) for ref, t in _FITS if ref() is not None and ref() is not model]
        _FITS.append((weakref.ref(model), threading.get_ident()))


def _holding() -> list[tuple[Any, int]]:
    """The models whose JAX trainer holds the state now (variables purged), with threads."""
    found = []
    for ref, thread in list(_FITS):
        model = ref()
        if (
            model is not None
            and getattr(model, "_jax_state", None)
            and not getattr(model, "_jax_state_synced", True)
        ):
            found.append((model, thread))
    return found


def write(variable: Any, value: Any) -> bool:
    """Assign ``value`` to ``variable`` so that a JAX ``fit`` in progress trains with it from
    its next step: queued, and applied (:func:`apply_pending`) now from the fit's own thread,
    else by it at the next batch's start; False (nothing done) when no fit holds the state."""
    if not _FITS:
        return False
    holding = _holding()
    if not holding:
        return False
    with _LOCK:
        _QUEUE.append((variable, value))
    if any(thread == threading.get_ident() for _, thread in holding):
        apply_pending()
    return True


def apply_pending() -> None:
    """Apply the writes made during a JAX fit, in their order (called by the fit's thread at
    each batch's start, and by :func:`write` from it)."""
    if not _QUEUE:
        return
    with _LOCK:
        pending, _QUEUE[:] = list(_QUEUE), []
    for model, thread in _holding():
        if thread == threading.get_ident():
            model.jax_state_sync()  # the trainer's state back in the variables; re-read next step
    for variable, value in pending:
        variable.assign(value)


def adopt_direct_writes() -> None:
    """Keep the variables assigned directly (``hp.scale.assign(0.5)``, not through
    hyperstep's ``write``) while a JAX fit of this thread holds the state: called after the
    batch callbacks. Such an assign gives a purged variable a value of its own, which the
    trainer would neither read nor keep (the end of fit writes the state it holds over it);
    here the trainer's state is put back, then the assigned values, so the next step reads
    them (``_jax_state_synced``, as after Keras's ``Callback.model``)."""
    if not _FITS:
        return
    me = threading.get_ident()
    for model, thread in _holding():
        if thread != me:
            continue
        optimizer = getattr(model, "optimizer", None)
        held = [*model.non_trainable_variables, *(optimizer.variables if optimizer else [])]
        written = [(v, v._value) for v in held if getattr(v, "_value", None) is not None]
        if written:
            model.jax_state_sync()
            for variable, value in written:
                variable.assign(value)


def held_scope(variables: list[Any]) -> Any:
    """A ``keras.StatelessScope`` mapping every variable a JAX fit's trainer holds to its
    value there (and the writes still waiting), when one of ``variables`` is purged; else
    None."""
    if not _FITS or all(getattr(v, "_value", 0) is not None for v in variables):
        return None
    holding = _holding()
    if not holding:
        return None
    import keras

    mapping: dict[int, tuple[Any, Any]] = {}
    names = ("trainable_variables", "non_trainable_variables", "optimizer_variables")
    for model, _ in holding:
        for refs, name in zip(state_owners(model), names, strict=False):
            for ref, value in zip(refs, model._jax_state.get(name) or [], strict=False):
                if getattr(ref, "_value", None) is None:  # else assigned directly: its own
                    mapping[id(ref)] = (ref, value)
    with _LOCK:
        for variable, value in _QUEUE:
            mapping[id(variable)] = (variable, value)
    return keras.StatelessScope(state_mapping=list(mapping.values()))


def state_owners(model: Any) -> tuple[Any, ...]:
    """The variables of each part of Keras's JAX training state, in its order: trainable,
    non-trainable, the optimizer's, the metrics'."""
    return (
        model.trainable_variables,
        model.non_trainable_variables,
        getattr(model.optimizer, "variables", []),
        model.metrics_variables,
    )


def read_held(variables: list[Any]) -> None:
    """Let each of ``variables`` be read while a JAX ``fit`` holds it (``opt.clock.step`` in
    a batch callback): the read gives the value the trainer holds, or a hyperstep error
    naming the read that works where no fit holds it.

    Keras's JAX ``fit`` purges the variables' values (``_value = None``) while its trainer
    holds the state, and a purged variable's ``value`` calls its ``_initializer`` (None once
    initialized: a ``TypeError``); that callable is made a read of the held state here.
    Pinned by ``tests/backends/test_internals.py``.
    """
    import weakref

    from hyperstep.backends.versions import reach

    reach("keras.src.backend.common.variables.Variable._initializer")
    for variable in variables:
        if getattr(variable, "_value", None) is not None and variable._initializer is None:
            variable._initializer = _held_read(weakref.ref(variable))


def _held_read(ref: Any) -> Any:
    def read(shape: Any, dtype: Any = None) -> Any:
        variable = ref()
        scope = None if variable is None else held_scope([variable])
        value = None if scope is None else scope.get_current_value(variable)
        if value is None:
            from hyperstep.errors import FrozenValueError

            path = getattr(variable, "path", None)
            raise FrozenValueError(
                f"{path} has no value here: Keras's JAX `fit` moved it into its training "
                "state, and no fit holds that state now. In a callback, read it through "
                "`self.model` (`self.model.optimizer.clock.step`: Keras's `Callback.model` "
                f"puts fit's state back into the variables). Received: variable {path}"
            )
        return value

    return read


# ---- a clock's step in custom `jax.jit` loops ------------------------------------------------
def stateless_copy(clock: Any, source: Any, target: Any) -> list[Any]:
    """``target``'s values with ``clock``'s step (and the epoch's variables where both lists
    hold them) taken from ``source``: :meth:`hyperstep.Clock.stateless_copy`."""
    source_variables, source_values = _stateless_pair(clock, "source", source)
    target_variables, target_values = _stateless_pair(clock, "target", target)
    step = source_values[_stateless_index(clock, "source", source_variables)]
    target_values[_stateless_index(clock, "target", target_variables)] = step
    for variable in clock.epoch_variables:  # where both hold it (epoch-based reads)
        found = [i for i, v in enumerate(source_variables) if v is variable]
        into = [i for i, v in enumerate(target_variables) if v is variable]
        if found and into:
            target_values[into[0]] = source_values[found[0]]
    return target_values


def _stateless_pair(clock: Any, argument: str, pair: Any) -> tuple[list[Any], list[Any]]:
    from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received

    call = f"`Clock(name={clock.name!r}).stateless_copy({argument}=...)`"
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise InvalidTypeError(
            f"{call} takes a pair `(variables, values)`, such as "
            f"`(optimizer.variables, optimizer_variables)`. {received(argument, pair)}"
        )
    variables, values = list(pair[0]), list(pair[1])
    if len(variables) != len(values):
        raise InvalidArgumentError(
            f"{call} needs one value per variable. Received: {len(variables)} variables "
            f"and {len(values)} values."
        )
    return variables, values


def _stateless_index(clock: Any, argument: str, variables: list[Any]) -> int:
    from hyperstep.errors import InvalidArgumentError

    for index, variable in enumerate(variables):
        if variable is clock.step:
            return index
    raise InvalidArgumentError(
        f"`Clock(name={clock.name!r}).stateless_copy({argument}=...)`: the clock's step "
        f"is not among the {len(variables)} variables given; pass the state of an "
        "optimizer on this clock (`optimizer.variables`) or of a model holding a "
        "hyperparameter on it (`model.non_trainable_variables`). Received: variables "
        f"{[getattr(v, 'path', v) for v in variables]}"
    )
