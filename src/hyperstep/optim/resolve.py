"""Per-update value resolution, shared by ``hs.scheduled`` and ``hs.StepOptimizer``.

An update reads the clock once and every value it uses from that one step::

    t     = float32(clock.step)                 (read when the update starts)
    v(hp) = hp.at(t)                             (one dict, built once per update)
    grads = after([t, v(hp) for every hp read], grads)      (the values come first)
    ... the optimizer's arithmetic ...
    clock.step += 1                              (after the update, if it advances it)

:class:`Update` holds the update in progress: the step, the one dict of its values and who
owns it (a read from elsewhere, a logger reading ``opt.learning_rate`` while ``fit``
traces, gets the current value instead).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

from keras import ops

from hyperstep import backends
from hyperstep.backends import Request, after
from hyperstep.control.hyperparameter import Hyperparameter
from hyperstep.control.value_forms import constant_pieces
from hyperstep.schedules.expressions import Constant

_graph_key = backends.graph_key_function()  # TF: the default graph; elsewhere None


class Update:
    """The update in progress of one optimizer (class attributes are the defaults).

    At its start the step is read once and ``values`` built once, a frozen mapping from
    each key read (``name``, a group's ``group/name``) to its value at that step, in the
    form Keras gets; every read inside the update is a lookup in it, the group whose
    variables are being updated passed with the name (its entries come first).

    It is shared by the threads of one update (``tf.distribute`` runs ``apply`` in replica
    threads and the update in the main thread, in one graph); a read from anywhere else
    sees the current value (:meth:`owns`).

    Example:
        >>> import hyperstep as hs
        >>> clock, update = hs.Clock(), Update()
        >>> with update.fixed(clock, host=False, values=lambda u: {"a": u.step + 1}):
        ...     _ = clock.step.assign(5)  # the update keeps the step it started with
        ...     float(update.step), float(update.read("a")), update.owns()
        (0.0, 1.0, True)
        >>> update.owns()
        False
    """

    step: Any = None  # the step read at the start of the update, else None
    graph: Any = None  # TensorFlow: the graph the update is built in
    thread: int | None = None  # elsewhere: the thread running it
    host_step: int | None = None  # the same as a Python int, on eager CPU torch (host=True)
    values: Mapping[str, Any] = MappingProxyType({})  # this update's values, by key

    def owns(self) -> bool:
        """Whether the caller reads inside this update: in its TensorFlow graph or a graph
        nested in it (a ``cond`` branch), else (no graphs: JAX, torch) in its thread."""
        if self.step is None:
            return False
        if self.graph is None:  # no thread under torch.compile, which cannot trace `threading`
            # (an update started eagerly, in a frame dynamo skipped, is read by compiled ones)
            return (
                self.thread is None or backends.compiling() or threading.get_ident() == self.thread
            )
        graph = _graph_key()
        while graph is not None and graph is not self.graph:
            graph = getattr(graph, "outer_graph", None)
        return graph is not None

    @contextlib.contextmanager
    def fixed(
        self,
        clock: Any,
        *,
        host: bool,
        values: Callable[[Update], Mapping[str, Any]] | None = None,
        nested: bool = True,
    ) -> Iterator[None]:
        """Fix the step for one update and build its ``values(self)`` once, from that step.

        ``host=True`` reads the step as a Python int where that is free (eager CPU torch:
        ``step`` is then that int); ``nested=True`` keeps an update already in progress
        (``build`` and clipping called from ``apply``), ``False`` starts a new one.
        """
        if nested and self.owns():
            yield
            return
        outer = (self.step, self.values, self.host_step, self.graph, self.thread)
        self.graph = _graph_key()
        self.thread = None if backends.compiling() else threading.get_ident()
        self.host_step = clock.host_step() if host else None
        if self.host_step is not None:  # `Hyperparameter.at` takes a Python int too
            self.step = self.host_step
        else:
            self.step = ops.cast(clock.step.value, "float32")
        self.values = MappingProxyType({})
        if values is not None:
            self.values = MappingProxyType(dict(values(self)))
        try:
            yield
        finally:
            (self.step, self.values, self.host_step, self.graph, self.thread) = outer

    def read(self, name: str, group: str | None = None) -> Any:
        """``name``'s value in this update for the variables of ``group`` (``None``: those
        in no group): the group's own (``group/name``) if it sets it, else the optimizer's;
        ``None`` for a key not read."""
        values = self.values
        if group is not None:
            found = values.get(f"{group}/{name}")
            if found is not None:
                return found
        return values.get(name)

    def gate(self, values: list[Any], grads: list[Any]) -> list[Any]:
        """``grads``, usable only once the step and ``values`` are computed (in a TensorFlow
        graph; see :func:`hyperstep.backends.after`): no full-size op waits for a scalar."""
        scalars = [self.step, *(backends.scalar_tensor(value) for value in values)]
        return after(scalars, grads)


def keras_value(
    update: Update, hyperparameter: Hyperparameter, name: str, cls: type, static: float | None
) -> Any:
    """``hyperparameter`` (optimizer class ``cls``'s ``name``, a group's ``group/name``) at
    the update's step, in the form the backend hands Keras
    (:mod:`hyperstep.backends.keras_forms`). ``static``: the constant, ``None`` for a
    schedule, whose constant pieces round as a constant does (on JAX: a replayed constant,
    ``where(step < s, 0.9, ...)``)."""
    host = update.host_step is not None  # its numbers take a schedule's pieces whole already
    pieces = () if host or static is not None else constant_pieces(hyperparameter.schedule)
    request = Request(
        name=name.rsplit("/", 1)[-1],
        cls=cls,
        hyperparameter=hyperparameter,
        step=update.step,
        host=host,
        static=static,
        constants=(static,) if static is not None else pieces,
    )
    return backends.keras_number(request)


def value_and_complement(update: Update, hyperparameter: Hyperparameter) -> tuple[Any, Any]:
    """``(value, 1 - value)`` at the update's step, for a rule; the second is ``1 - c``
    rounded once from the Python number ``c`` of a constant not overridden or scaled (as
    Keras computes ``1 - beta`` from its float), ``None`` for a schedule."""
    value = hyperparameter.at(update.step)
    schedule = hyperparameter.schedule
    if not isinstance(schedule, Constant):
        return value, None
    exact = ops.convert_to_tensor(1.0 - schedule.value_, "float32")
    plain = ops.logical_and(
        ops.isnan(hyperparameter.override_at(update.step)), ops.equal(hyperparameter.scale, 1.0)
    )
    return value, ops.where(plain, exact, 1.0 - value)
