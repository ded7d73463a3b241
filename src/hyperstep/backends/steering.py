"""What :class:`hyperstep.Remote` needs from each backend: workers that agree, and a
schedule's value computed as a traced step computes it.

* :func:`workers` tells whether several processes train one model (``tf.distribute``'s
  ``MultiWorkerMirroredStrategy``; JAX with ``jax.process_count() > 1``; an initialized
  ``torch.distributed``), which one this is and whether it is the chief.
* :func:`agreement` returns the collective that makes every worker apply the same commands at
  the same step: each worker counts the commands it can read, and all take the smallest count
  (every worker calls it at every step boundary, in the same order).
* :func:`traced_value` returns a function ``step -> float32`` that evaluates a schedule as a
  compiled training step does (a ``tf.function`` or ``jax.jit`` of the schedule at one scalar
  step; eager ops on torch), so a value computed on the host equals, to the bit, the one a
  fresh run computes inside its step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hyperstep.backends.scopes import _backend

__all__ = ["MAX_AGREED", "Workers", "agreement", "traced_value", "workers"]

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
    backend = _backend()
    if backend == "tensorflow":
        from hyperstep.control.distribute import num_workers, strategy_of

        strategy = strategy_of(variable)
        if strategy is None or num_workers(strategy) == 1:
            return Workers()
        resolver = getattr(strategy, "cluster_resolver", None)
        index = int(getattr(resolver, "task_id", 0) or 0)
        chief = bool(getattr(strategy.extended, "should_checkpoint", index == 0))
        return Workers(index, num_workers(strategy), chief, strategy)
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


def agreement(place: Workers) -> Callable[[int], int] | None:
    """The collective ``count -> min(count over workers)``, or None for one worker."""
    if place.count == 1:
        return None
    backend = _backend()
    if backend == "tensorflow":
        return _tensorflow_agreement(place)
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


def _tensorflow_agreement(place: Workers) -> Callable[[int], int]:
    """``MultiWorkerMirroredStrategy``: one all-reduce (a sum) of ``[count >= k]`` for
    ``k = 1 .. MAX_AGREED``; the workers agree on every ``k`` all of them reached."""
    import tensorflow as tf

    strategy = place.owner
    local = float(len(strategy.extended.worker_devices))

    def share(flags: Any) -> Any:
        context = tf.distribute.get_replica_context()
        return context.all_reduce(tf.distribute.ReduceOp.SUM, flags / local)

    @tf.function(autograph=False)
    def total(flags: Any) -> Any:
        return strategy.experimental_local_results(strategy.run(share, args=(flags,)))[0]

    thresholds = np.arange(1, MAX_AGREED + 1)

    def agree(count: int) -> int:
        flags = (min(count, MAX_AGREED) >= thresholds).astype("float32")
        summed = np.asarray(total(tf.constant(flags)))
        return int(np.sum(np.round(summed) >= place.count))

    return agree


def traced_value(schedule: Any, dtype: str) -> Callable[[int], np.float32]:
    """``step -> float32(schedule(step))`` as a compiled step computes it, for integer steps
    given as a scalar of ``dtype`` (the clock's).

    TensorFlow: a ``tf.function`` of the schedule; JAX: its ``jax.jit``; torch: eager ops
    on a float32 0-dim step (as ``hs.scheduled``'s eager torch path evaluates it).
    """
    backend = _backend()
    if backend == "tensorflow":
        import tensorflow as tf

        function = tf.function(lambda step: schedule(step), autograph=False)

        def value_tf(step: int) -> np.float32:
            found = function(tf.constant(step, dtype=dtype))
            return np.float32(np.asarray(found, dtype="float32"))

        return value_tf
    if backend == "jax":
        import jax
        import jax.numpy as jnp

        jitted = jax.jit(lambda step: schedule(step))

        def value_jax(step: int) -> np.float32:
            return np.float32(np.asarray(jitted(jnp.asarray(step, dtype=dtype)), "float32"))

        return value_jax
    from keras import ops

    def value_eager(step: int) -> np.float32:
        found = schedule(ops.convert_to_tensor(float(step), dtype="float32"))
        return np.float32(np.asarray(ops.convert_to_numpy(found), "float32"))

    return value_eager
