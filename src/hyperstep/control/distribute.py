"""One metric value for every replica and worker under ``tf.distribute`` (TensorFlow only).

A controller such as :class:`hyperstep.ReduceOnPlateau` must take the same decision on
every replica and every worker, or the hyperparameter state drifts apart. Its ``update``
therefore reduces the metric first, with :func:`reduce_metric`:

* inside ``strategy.run`` (a replica context): ``all_reduce`` across every replica of every
  worker;
* outside it (a cross-replica context, or no scope at all) with a per-replica value, as
  ``strategy.run`` returns: ``strategy.reduce(..., axis=None)``;
* outside it with a plain value under a strategy that spans several workers
  (``MultiWorkerMirroredStrategy``): each worker's value counts once, reduced across workers
  by a collective (so every worker must call it, in the same order);
* otherwise (no strategy, or one worker and a plain value) the value is returned unchanged.

The strategy is the one in scope, else the one that owns ``variable`` (a distributed
variable of the controller), so a custom loop that calls ``strategy.run`` without entering
``strategy.scope()`` is still reduced.
"""

from __future__ import annotations

from typing import Any

from hyperstep.backends import require_tensorflow
from hyperstep.errors import InvalidArgumentError, received

require_tensorflow("hyperstep.control.distribute (reducing metrics under tf.distribute)")

import tensorflow as tf  # noqa: E402

from hyperstep.backends.steering import (  # noqa: E402
    tensorflow_strategy,
    tensorflow_worker_sum,
    tensorflow_workers,
)

__all__ = ["REDUCTIONS", "check_reduce", "reduce_metric"]

#: The accepted ``reduce`` arguments; ``None`` keeps each replica's own value.
REDUCTIONS = ("mean", "sum", None)
_OPS = {"mean": tf.distribute.ReduceOp.MEAN, "sum": tf.distribute.ReduceOp.SUM}


def check_reduce(owner: str, reduce: Any) -> str | None:
    """Return ``reduce`` if it is one of :data:`REDUCTIONS`, else raise naming ``owner``."""
    if reduce not in REDUCTIONS:
        raise InvalidArgumentError(
            f"`{owner}(reduce=...)` must be 'mean', 'sum' or None (each replica keeps its "
            f"own value). {received('reduce', reduce)}"
        )
    return reduce  # type: ignore[no-any-return]


def reduce_metric(value: Any, reduce: str | None = "mean", variable: Any = None) -> Any:
    """Return ``value`` reduced across replicas and workers (see the module docstring).

    ``mean``: ``sum(values) / count``; ``sum``: ``sum(values)``; counted per replica
    inside ``strategy.run`` and for per-replica values, per worker for a plain value.

    Args:
        value: A number, a tensor, or a per-replica value returned by ``strategy.run``.
        reduce: ``"mean"``, ``"sum"`` or ``None`` (return ``value`` as given).
        variable: A variable created under the strategy, used to find it outside its scope.

    Returns:
        A float32 scalar tensor equal on every replica and worker (or ``value`` itself when
        nothing needs reducing).

    Raises:
        InvalidArgumentError: For another ``reduce``, or a per-replica value with
            ``reduce=None``.

    Example:
        >>> import tensorflow as tf
        >>> float(reduce_metric(0.25))
        0.25
        >>> strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
        >>> per_replica = strategy.run(lambda: tf.constant(2.0))
        >>> float(reduce_metric(per_replica, "sum", variable=None))
        2.0
    """
    check_reduce("reduce_metric", reduce)
    distributed = isinstance(value, tf.distribute.DistributedValues)
    if reduce is None:
        if distributed:
            raise InvalidArgumentError(
                "A per-replica value (as `strategy.run` returns) needs `reduce='mean'` or "
                f"'sum' to become one value. {received('reduce', reduce)}"
            )
        return value
    op = _OPS[reduce]
    context = tf.distribute.get_replica_context()
    if context is not None and context.num_replicas_in_sync > 1:  # inside strategy.run
        return context.all_reduce(op, _scalar(value))
    strategy = tensorflow_strategy(variable)
    if distributed:
        if strategy is None:
            raise InvalidArgumentError(
                "A per-replica value was given outside `strategy.scope()`, and no "
                "distributed variable tells which strategy made it. Reduce it with "
                "`strategy.reduce('MEAN', value, axis=None)` or call inside the scope. "
                f"{received('value', value)}"
            )
        return strategy.reduce(op, value, axis=None)
    if strategy is None or tensorflow_workers(strategy) == 1:
        return value
    total = tensorflow_worker_sum(strategy)(_scalar(value))
    return total / float(tensorflow_workers(strategy)) if reduce == "mean" else total


def _scalar(value: Any) -> Any:
    return tf.reshape(tf.cast(tf.convert_to_tensor(value), tf.float32), ())
