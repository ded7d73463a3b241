"""The batches of ``hs.find_lr``: what ``fit`` is given, and one batch to build with.

NumPy arrays are drawn as ``fit`` draws them, in one ``fit`` epoch: passes over the data,
each a permutation from NumPy's global generator cut to whole batches (a batch of all the
samples when there are fewer than ``batch_size``), until the test has its batches. A
``tf.data`` dataset is repeated (``dataset.repeat()``) in one epoch too. Other data
(a ``keras.utils.PyDataset``, a ``torch`` ``DataLoader``) run one ``fit`` epoch per pass;
a generator is not repeated.
"""

from __future__ import annotations

import inspect
import itertools
from collections.abc import Iterator
from typing import Any

import keras
import numpy as np

from hyperstep.errors import InvalidArgumentError


class Plan:
    """What to hand ``fit``: :meth:`data` (``x``, ``y``; arrays are drawn when it is
    called), ``fit``'s other arguments, and a first batch to build with (the ``(x, y)``
    tuple or the element data yield; ``None`` when there is none)."""

    def __init__(self, x: Any, y: Any, fit: dict[str, Any], first: Any, one_pass: bool):
        self.x, self.y, self.fit, self.first, self.one_pass = x, y, fit, first, one_pass
        self.draw: Any = None

    def data(self) -> tuple[Any, Any]:
        """``x`` and ``y`` for ``fit`` (arrays: drawn now, from NumPy's global generator)."""
        return (self.x, self.y) if self.draw is None else self.draw()


def plan(x: Any, y: Any, batch_size: int, batches: int) -> Plan:
    """How ``fit`` trains ``batches`` batches of ``x`` (and ``y``)."""
    leaves = keras.tree.flatten((x, y))
    if leaves and all(isinstance(leaf, np.ndarray) and leaf.ndim > 0 for leaf in leaves):
        sizes = [int(leaf.shape[0]) for leaf in leaves]
        if len(set(sizes)) > 1:
            raise InvalidArgumentError(
                "`find_lr(x=..., y=...)` needs as many samples in each array. "
                f"Received: sizes {sizes}"
            )
        return _arrays(x, y, batch_size, batches, int(leaves[0].shape[0]))
    if _is_dataset(x):
        first = next(iter(x.take(1)), None)
        fit = {"steps_per_epoch": batches, "epochs": 1, "shuffle": False}
        return Plan(x.repeat(), None, fit, first, False)
    if inspect.isgenerator(x) or isinstance(x, Iterator):
        first = next(x, None)
        rest = x if first is None else itertools.chain([first], x)
        return Plan(_generator(rest), None, {"epochs": 1, "shuffle": False}, first, True)
    if isinstance(x, keras.utils.PyDataset):
        fit = {"epochs": batches, "shuffle": False}  # a PyDataset shuffles itself
        return Plan(x, y, fit, x[0] if _length(x) else None, False)
    if leaves and all(hasattr(a, "shape") and len(a.shape) > 0 for a in leaves):
        # other arrays (tensors): fit shuffles them, one epoch per pass
        first = keras.tree.map_structure(lambda a: a[:batch_size], (x, y))
        x, y = _whole_batches(x, y, batch_size)
        fit = {"epochs": batches, "shuffle": True, "batch_size": batch_size}
        return Plan(x, y, fit, first, False)
    first = next(iter(x), None) if hasattr(x, "__iter__") else None  # a DataLoader
    return Plan(x, y, {"epochs": batches, "shuffle": False}, first, False)


def _arrays(x: Any, y: Any, batch_size: int, batches: int, size: int) -> Plan:
    batch = min(batch_size, size)
    per_pass = size - size % batch

    def draw() -> tuple[Any, Any]:
        passes = [np.random.permutation(size)[:per_pass] for _ in range(-(-needed // per_pass))]
        order = np.concatenate(passes)[:needed]
        return keras.tree.map_structure(lambda a: a[order], (x, y))

    needed = batches * batch
    first = keras.tree.map_structure(lambda a: a[:batch], (x, y))
    found = Plan(None, None, {"batch_size": batch, "epochs": 1, "shuffle": False}, first, False)
    found.draw = draw
    return found


def _whole_batches(x: Any, y: Any, batch_size: int) -> tuple[Any, Any]:
    """Arrays cut to a whole number of batches (a last, smaller batch would retrace)."""
    size = int(keras.tree.flatten((x, y))[0].shape[0])
    keep = size - size % batch_size
    if keep == size or keep == 0:
        return x, y
    return keras.tree.map_structure(lambda a: a[:keep], (x, y))


def _is_dataset(x: Any) -> bool:
    return all(hasattr(x, name) for name in ("repeat", "take", "element_spec"))


def _length(x: Any) -> int:
    try:
        return len(x)
    except TypeError:
        return 0


def _generator(items: Any) -> Any:
    yield from items
