"""The clock's and hyperparameters' hot paths: the values of the ``keras.ops`` forms, cheaper.

``read_once(v)`` is one read of a variable per traced TensorFlow step, ``native_variable(v)``
the backend variable behind a Keras one (an update's slots); on eager torch,
``step += 1`` in place, the step as a host ``int``, ``full(shape(step), x)`` and
``override if set else schedule(step) * scale`` in 2-3 torch calls (each ``keras.ops`` call
costs more Python there than its kernel: docs/backends.md). Each returns ``None`` where its
fast path does not apply, and the caller takes the ``keras.ops`` form.
"""

from __future__ import annotations

from typing import Any

from hyperstep.backends.scopes import compiling, current_backend, in_stateless_scope


def read_once(variable: Any) -> Any:
    """``variable``'s value as a tensor read once: on TensorFlow ``variable.value`` is the
    ``tf.Variable``, which every op using it reads again (one ``ReadVariableOp`` per use in
    a traced step); elsewhere, and inside ``keras.StatelessScope``, ``variable.value``."""
    value = variable.value
    if current_backend() != "tensorflow":
        return value
    import tensorflow as tf

    return tf.convert_to_tensor(value) if isinstance(value, tf.Variable) else value


def native_variable(variable: Any) -> Any:
    """The backend variable behind a Keras variable (TensorFlow: its ``tf.Variable``).

    TensorFlow's update paths hand optimizers either; other backends: ``variable``.
    """
    import keras

    if current_backend() == "tensorflow" and isinstance(variable, keras.Variable):
        return variable.value
    return variable


def add_one_in_place(variable: Any) -> Any:
    """``variable += 1`` in place, cheaper than Keras's ``assign_add`` (docs/backends.md):
    eager torch's ``add_`` (the new value), TensorFlow's ``assign_add`` (one op in a traced
    step, not a read, an add and an assign); ``None`` elsewhere and in ``StatelessScope``."""
    if in_stateless_scope():
        return None
    if current_backend() == "tensorflow":
        return native_variable(variable).assign_add(1)
    return raw(variable).add_(1) if current_backend() == "torch" else None


def raw(variable: Any) -> Any:
    """``variable``'s own backend tensor (Keras's private ``_value``), without the
    ``value`` property's work: for eager reads on the host (torch's hot path)."""
    try:
        return variable._value
    except AttributeError as error:
        from hyperstep.backends.versions import missing

        raise missing("keras.src.backend.torch.core.Variable._value", error) from error


def host_int(variable: Any) -> int | None:
    """A scalar integer variable as a Python int where reading it is free, else ``None``.

    Free: eager torch with the value on the CPU, outside ``torch.compile`` (a frame it runs
    eagerly too: :func:`~hyperstep.backends.scopes.compiling`) and ``keras.StatelessScope``
    (read through :func:`raw`).
    """
    if current_backend() != "torch":
        return None
    value = raw(variable)
    if value.device.type != "cpu" or compiling() or in_stateless_scope():
        return None
    return int(value)


def full_float32(step: Any, value: float) -> Any:
    """``full(shape(step), value)`` in float32 for a torch ``step``; ``None`` otherwise.

    Torch directly: the same tensor as ``keras.ops.full``, with less Python."""
    if current_backend() != "torch":
        return None
    import torch

    if not isinstance(step, torch.Tensor):
        return None
    return torch.full(step.shape, value, dtype=torch.float32, device=step.device)


def fast_value(schedule: Any, step: Any, scale: Any, override: Any) -> Any:
    """``override if set else schedule(step) * scale`` for a float32 torch ``step``, else None.

    In 2-3 torch calls, the same bits as the ``keras.ops`` form (tested). The schedule's
    ``value`` is called without ``__call__``'s casts.
    """
    if current_backend() != "torch":
        return None
    import torch

    if not isinstance(step, torch.Tensor) or step.dtype != torch.float32:
        return None
    base = schedule.value(step)
    if not isinstance(base, torch.Tensor) or base.dtype != torch.float32:
        return None  # a schedule of another kind (a wrapped Keras one): the general path
    unset = override.value
    return torch.where(torch.isnan(unset), base * scale.value, unset)


def lazy_where(pred: Any, on: Any, off: Any) -> Any:
    """``on() if pred else off()`` for a scalar bool tensor ``pred``, in a traced step (a
    tensor; on TensorFlow and JAX, a list of tensors too).

    TensorFlow: one functional ``If`` op (:func:`functional_cond`:
    the branch not taken costs nothing); JAX: ``keras.ops.cond`` (``lax.cond``: only the
    branch taken runs) on a traced ``pred``, a Python ``if`` on an array (eagerly and in a
    ``StatelessScope``: a ``lax.cond`` there compiles its branches at every call). Torch:
    ``where(pred, on(), off())``: its ``cond`` is a Python ``if`` on the tensor, which
    ``torch.compile`` cannot trace without a graph break.
    """
    from keras import ops

    backend = current_backend()
    if backend == "torch":
        return ops.where(pred, on(), off())
    if backend == "tensorflow":
        return functional_cond(pred, on, off)
    import jax

    if isinstance(pred, jax.core.Tracer):
        return ops.cond(pred, on, off)
    return on() if bool(pred) else off()


def branches_skip() -> bool:
    """Whether :func:`lazy_where` runs only the branch taken (not on torch, which runs both)."""
    return current_backend() != "torch"


def functional_cond(pred: Any, on: Any, off: Any) -> Any:
    """``tf.cond(pred, on, off)`` for a scalar ``pred``, kept one functional ``If`` op.

    TensorFlow lowers a traced ``cond`` into ``Switch``/``Merge`` with both branches inlined:
    every op of the branch not taken is still scheduled (as dead) on each step. Kept
    functional (``_lower_using_switch_merge=False``, what TensorFlow does under XLA) the
    branch not taken costs nothing and the step one ``If`` op: a dormant cooldown's whole
    arithmetic sits in a branch that never runs. Reached through
    :data:`~hyperstep.backends.versions.PRIVATE_APIS` (lowered as before if it moved).

    Example:
        >>> import tensorflow as tf
        >>> f = tf.function(lambda x: functional_cond(x > 0, lambda: x * 2, lambda: x))
        >>> float(f(tf.constant(3.0))), float(f(tf.constant(-1.0)))
        (6.0, -1.0)
    """
    import tensorflow as tf

    from hyperstep.backends.versions import reach

    out = tf.cond(pred, on, off)
    if tf.executing_eagerly():
        return out
    set_attr = reach(_LOWERING, fallback=None)
    op = tf.nest.flatten(out)[0].op
    while op.type == "Identity" and op.inputs:  # tf.cond may return the If's outputs so
        op = op.inputs[0].op
    if set_attr is not None and op.type in ("If", "StatelessIf"):
        from tensorflow.core.framework import attr_value_pb2

        set_attr(op, "_lower_using_switch_merge", attr_value_pb2.AttrValue(b=False))
    return out


_LOWERING = "tensorflow.Operation._set_attr"
