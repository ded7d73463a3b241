"""What :class:`hyperstep.Remote` needs from each backend: workers that agree
(:func:`workers`, :func:`agreement`), and a schedule's value computed as a traced step
computes it (:func:`traced_values`).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from hyperstep.backends.scopes import current_backend

__all__ = [
    "MAX_AGREED",
    "Workers",
    "agreement",
    "exact_form",
    "state_grew",
    "strategy_scope",
    "tensorflow_strategy",
    "tensorflow_worker_sum",
    "tensorflow_workers",
    "traced_values",
    "untraced",
    "workers",
]

#: the most commands the workers agree on at one step boundary (the rest follow at the next)
MAX_AGREED = 16


class Workers:
    """This process's place among the workers: ``index`` of ``count``, ``chief`` or not."""

    def __init__(self, index: int = 0, count: int = 1, chief: bool = True, owner: Any = None):
        self.index, self.count, self.chief, self.owner = index, count, chief, owner

    def __repr__(self) -> str:
        return f"Workers(index={self.index}, count={self.count}, chief={self.chief})"


def workers(variable: Any) -> Workers:
    """Where this process stands, read from ``variable`` (a state variable of the run)."""
    backend = current_backend()
    if backend == "tensorflow":
        strategy = tensorflow_strategy(variable)
        count = 1 if strategy is None else tensorflow_workers(strategy)
        if count == 1:
            return Workers()
        resolver = getattr(strategy, "cluster_resolver", None)
        index = int(getattr(resolver, "task_id", 0) or 0)
        chief = bool(getattr(strategy.extended, "should_checkpoint", index == 0))
        return Workers(index, count, chief, strategy)
    if backend == "jax":
        import jax

        if jax.process_count() == 1:
            return Workers()
        return Workers(jax.process_index(), jax.process_count(), jax.process_index() == 0)
    if backend == "torch":
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
            return Workers()
        return Workers(dist.get_rank(), dist.get_world_size(), dist.get_rank() == 0)
    return Workers()


def tensorflow_strategy(variable: Any = None) -> Any:
    """The strategy in scope, else the one that owns ``variable`` (a Keras variable, whose
    ``value`` is the distributed variable, or a distributed ``tf.Variable`` itself), else
    None."""
    import tensorflow as tf

    if tf.distribute.has_strategy():
        return tf.distribute.get_strategy()
    for native in (variable, getattr(variable, "value", None)):
        if isinstance(native, tf.distribute.DistributedValues):
            return getattr(native, "distribute_strategy", None)
    return None


def strategy_scope(variable: Any) -> Any:
    """The scope of the ``tf.distribute`` strategy that owns ``variable`` where none is
    entered (state a controller made outside ``strategy.scope()`` is then distributed like
    the hyperparameter's own); else, and off TensorFlow, a null context."""
    if current_backend() != "tensorflow":
        return contextlib.nullcontext()
    import tensorflow as tf

    strategy = None if tf.distribute.has_strategy() else tensorflow_strategy(variable)
    return contextlib.nullcontext() if strategy is None else strategy.scope()


def tensorflow_workers(strategy: Any) -> int:
    """How many workers ``strategy`` spans (1 for ``MirroredStrategy``)."""
    try:
        local = len(strategy.extended.worker_devices)
    except (AttributeError, NotImplementedError, RuntimeError, ValueError):
        return 1
    return max(1, int(strategy.num_replicas_in_sync) // max(1, local))


def agreement(place: Workers) -> Callable[[int], int] | None:
    """The collective ``count -> min(count over workers)``, or None for one worker: the
    workers apply the commands all of them can read (each calls it at every step boundary,
    in the same order)."""
    if place.count == 1:
        return None
    backend = current_backend()
    if backend == "tensorflow":
        # MultiWorkerMirroredStrategy: one all-reduce (a sum) of `[count >= k]` for
        # k = 1 .. MAX_AGREED; the workers agree on every k all of them reached
        import tensorflow as tf

        total = tensorflow_worker_sum(place.owner)
        thresholds = np.arange(1, MAX_AGREED + 1)

        def agree_tf(count: int) -> int:
            flags = (min(count, MAX_AGREED) >= thresholds).astype("float32")
            summed = np.asarray(total(tf.constant(flags)))
            return int(np.sum(np.round(summed) >= place.count))

        return agree_tf
    if backend == "jax":
        from jax.experimental import multihost_utils

        def agree(count: int) -> int:
            found = multihost_utils.process_allgather(np.asarray(count, dtype="int32"))
            return int(np.min(found))

        return agree
    import torch
    import torch.distributed as dist

    def agree_torch(count: int) -> int:
        value = torch.tensor([count], dtype=torch.int64)
        dist.all_reduce(value, op=dist.ReduceOp.MIN)
        return int(value.item())

    return agree_torch


def tensorflow_worker_sum(strategy: Any) -> Any:
    """A (cached) ``tf.function``: the sum over ``strategy``'s workers of each worker's
    value, every worker counted once whatever its number of replicas (every worker must
    call it, in the same order)."""
    function = _WORKER_SUMS.get(strategy)
    if function is None:
        import tensorflow as tf

        local = float(len(strategy.extended.worker_devices))

        def share(value: Any) -> Any:
            context = tf.distribute.get_replica_context()
            return context.all_reduce(tf.distribute.ReduceOp.SUM, value / local)

        @tf.function(autograph=False)
        def function(value: Any) -> Any:
            return strategy.experimental_local_results(strategy.run(share, args=(value,)))[0]

        _WORKER_SUMS[strategy] = function
    return function


_WORKER_SUMS: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def exact_form(name: str, optimizer: Any) -> bool:
    """Whether ``optimizer``'s hyperparameter ``name`` reaches Keras in float64
    (:meth:`hyperstep.Hyperparameter.exact_at`, :mod:`hyperstep.backends.keras_forms`):
    on TensorFlow, every name of an ``hs.scheduled`` optimizer but ``learning_rate``."""
    if current_backend() != "tensorflow" or not hasattr(optimizer, "_hs_value"):
        return False
    return name.rsplit("/", 1)[-1] != "learning_rate"


def state_grew(model: Any) -> None:
    """Tell ``model``'s ``fit`` that its optimizer's variables grew after fit began: Keras's
    JAX trainer before 3.11 records the shardings of the state it carries (one per
    variable) before ``on_train_begin``, and its step then indexes that list by variable;
    record it again. Nothing to do where nothing was recorded (newer Keras, other
    backends)."""
    if current_backend() != "jax" or getattr(model, "_optimizer_variable_shardings", None) is None:
        return
    model._record_training_state_sharding_spec()


def untraced(model: Any) -> bool:
    """Whether the training step runs eagerly, so a schedule replaced in Python reaches it:
    torch, unless ``model`` (None in a custom loop) compiles its step (``jit_compile``)."""
    if current_backend() != "torch":
        return False
    return not (model is not None and getattr(model, "jit_compile", False))


def traced_values(schedule: Any, dtype: str) -> Callable[[int, int], np.ndarray]:
    """``(start, count) -> float32 [schedule(start), ..., schedule(start + count - 1)]``,
    each value computed as a compiled step computes it at that one scalar step (the clock's
    ``dtype``): not a vectorized evaluation, whose kernels may round differently.

    TensorFlow: a ``tf.function`` mapping the schedule over scalar steps (``tf.map_fn``);
    JAX: the ``jax.jit`` of ``lax.map`` (a loop of scalar bodies); torch: eager ops on
    float32 0-dim steps, one by one (as ``hs.scheduled``'s eager torch path evaluates it).
    One call gives a table for many steps, so a driven schedule costs one compiled call
    every ``count`` steps.
    """
    backend = current_backend()
    if backend == "tensorflow":
        import tensorflow as tf

        @tf.function(autograph=False)
        def table_tf(steps: Any) -> Any:
            return tf.map_fn(schedule, steps, fn_output_signature=tf.float32)

        def values_tf(start: int, count: int) -> np.ndarray:
            steps = tf.range(start, start + count, dtype=dtype)
            return np.asarray(table_tf(steps), dtype="float32")

        return values_tf
    if backend == "jax":
        import jax
        import jax.numpy as jnp

        table_jax = jax.jit(lambda steps: jax.lax.map(schedule, steps))

        def values_jax(start: int, count: int) -> np.ndarray:
            steps = jnp.arange(start, start + count, dtype=dtype)
            return np.asarray(table_jax(steps), dtype="float32")

        return values_jax
    from keras import ops

    def values_eager(start: int, count: int) -> np.ndarray:
        found = [
            ops.convert_to_numpy(schedule(ops.convert_to_tensor(float(step), dtype="float32")))
            for step in range(start, start + count)
        ]
        return np.asarray(found, dtype="float32").reshape(count)

    return values_eager
