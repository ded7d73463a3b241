"""The doctor's evidence on TensorFlow: ``tf.GradientTape`` gradients, ``tf.Variable`` state.

The loss's graph is read by :mod:`hyperstep.diagnosis.graph` (``trace`` returns ``None``).
See :mod:`hyperstep.backends.doctor` for what each function answers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import keras
import numpy as np
import tensorflow as tf


def is_raw_variable(value: Any) -> bool:
    """A ``tf.Variable`` (not Keras's)."""
    return isinstance(value, tf.Variable)


def raw_kind(value: Any) -> str:
    return "tf.Variable"


def raw_trainable(value: Any) -> bool:
    return bool(value.trainable)


def underlying(variable: Any) -> Any:
    """The ``tf.Variable`` behind a ``keras.Variable`` (or the variable itself)."""
    return variable.value if isinstance(variable, keras.Variable) else variable


def dtype_name(variable: Any) -> str:
    return str(tf.as_dtype(underlying(variable).dtype).name)


def to_numpy(variable: Any) -> np.ndarray:
    return np.asarray(underlying(variable).numpy())


def snapshot(variables: Iterable[Any]) -> list[tuple[Any, Any]]:
    """Copy the value of every distinct variable, for :func:`restore`."""
    saved: dict[int, tuple[Any, Any]] = {}
    for variable in variables:
        handle = underlying(variable)
        if id(handle) not in saved:
            saved[id(handle)] = (handle, tf.identity(handle.read_value()))
    return list(saved.values())


def restore(saved: list[tuple[Any, Any]]) -> None:
    """Assign back the values copied by :func:`snapshot`."""
    for handle, value in saved:
        handle.assign(value)


def build(compute: Callable[[Any], Any], batch: Any, state: list[Any]) -> None:
    """Build an unbuilt model by running the loss once, then put every variable back:
    those that existed from a snapshot, those the pass created to their initial value."""
    saved = snapshot(state)
    created: list[tuple[Any, Any]] = []

    def creator(next_creator: Callable[..., Any], **kwargs: Any) -> Any:
        variable = next_creator(**kwargs)
        created.append((variable, tf.identity(variable.read_value())))
        return variable

    try:
        with tf.variable_creator_scope(creator):
            compute(batch)
    finally:
        restore(saved + created)


def gradient_kinds(
    compute: Callable[[Any], Any], batch: Any, variables: list[Any], raw: list[Any]
) -> tuple[Any, dict[int, str]]:
    """Run the loss and its gradient eagerly once, watching every variable given (and the
    ``tf.Variable`` of each binding in ``raw``).

    Returns:
        The loss, and for each variable's ``id(underlying(v))`` one of ``"none"`` (no
        gradient), ``"zero"`` (exactly zero everywhere) or ``"nonzero"``.
    """
    handles = [*(underlying(v) for v in variables), *(b.variable for b in raw)]
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        for handle in handles:
            tape.watch(handle)
        loss = compute(batch)
    loss = tf.convert_to_tensor(loss)
    grads = tape.gradient(loss, handles)
    kinds: dict[int, str] = {}
    for handle, grad in zip(handles, grads, strict=True):
        if grad is None:
            kinds[id(handle)] = "none"
            continue
        values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
        kinds[id(handle)] = "nonzero" if bool(tf.reduce_any(values != 0)) else "zero"
    return loss, kinds


def trace(compute: Callable[[Any], Any], batch: Any, variables: list[Any], raw: list[Any]) -> None:
    """``None``: on TensorFlow :mod:`hyperstep.diagnosis.graph` traces the loss's graph."""
    return None


def numpy_batch(batch: Any) -> Any:
    """The batch as it is (TensorFlow reads tensors of any kind)."""
    return batch


def is_dataset(data: Any) -> bool:
    return isinstance(data, tf.data.Dataset)


def local_batch(batch: Any) -> Any:
    """The first replica's part of a distributed batch (the batch itself otherwise)."""
    strategy = tf.distribute.get_strategy()

    def first(value: Any) -> Any:
        if isinstance(value, tf.distribute.DistributedValues):
            return strategy.experimental_local_results(value)[0]
        return value

    return tf.nest.map_structure(first, batch)


def first_step_batch(model: Any, args: tuple[Any, ...], peek: Any) -> tuple[Any, tuple[Any, ...]]:
    """The batch of ``model.train_function(iterator)``'s first call, and its arguments with
    the batch put back (``peek(iterator) -> (batch, iterator)``)."""
    batch, iterator = peek(args[0])
    return batch, (iterator, *args[1:])


def resume_first_step(model: Any, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The first call's arguments once the doctor is done: unchanged (the variables are the
    state)."""
    return args
