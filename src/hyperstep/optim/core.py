"""What ``hs.scheduled`` and ``hs.StepOptimizer`` share: one definition of each step of an
update's life around the optimizer's own arithmetic.

:func:`hyperparameters_config` and :func:`from_hyperparameters_config` write and read the
one config format of both, ``{"hyperparameters": {name: value}, "clock": ..., "advance": ...,
"fused": ..., "groups": [{"name", "match", "hyperparameters"}]}`` where a value is a number
(a constant), an expression's text (one naming other hyperparameters) or a serialized
schedule. Scales, overrides and controller state are variables, saved with the weights.

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from math import nan
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import keras
from keras import ops

from hyperstep import backends
from hyperstep.backends import Request, after, concrete
from hyperstep.clock import Clock
from hyperstep.control.hyperparameter import Hyperparameter
from hyperstep.control.relative import references, relative
from hyperstep.control.value_forms import constant_pieces
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.iteration import note_update, open_iteration
from hyperstep.optim.groups import Group
from hyperstep.schedules.base import Schedule, check_number
from hyperstep.schedules.expressions import Constant, as_schedule
from hyperstep.schedules.keras_compat import KerasSchedule

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
    values: Mapping[str, Any] = MappingProxyType({})  # this update's values, by key

    def owns(self) -> bool:
        """Whether the caller reads inside this update: in its TensorFlow graph or a graph
        nested in it (a ``cond`` branch), else (no graphs: JAX, torch) in its thread."""
        if self.step is None:
            return False
        if self.graph is None:  # no thread under torch.compile, which cannot trace `threading`
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
        outer = (self.step, self.values, self.graph, self.thread)
        self.graph = _graph_key()
        self.thread = None if backends.compiling() else threading.get_ident()
        step = backends.host_int(clock.step) if host else None  # `.at` takes an int too
        if step is None:
            step = ops.cast(clock.step.value, "float32")
        self.step = step
        self.values = MappingProxyType({})
        if values is not None:
            self.values = MappingProxyType(dict(values(self)))
        try:
            yield
        finally:
            (self.step, self.values, self.graph, self.thread) = outer

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
    host = isinstance(update.step, int)  # its numbers take a schedule's pieces whole already
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


def keras_callable(value: Any) -> bool:
    """Whether Keras would call ``value`` for a learning rate (a callable, not a schedule).

    Example:
        >>> keras_callable(lambda: 0.1), keras_callable(0.1)
        (True, False)
    """
    return (
        callable(value)
        and not isinstance(value, keras.optimizers.schedules.LearningRateSchedule)
        and not isinstance(value, keras.Variable)
    )


def schedule_of(value: Any, name: str) -> Schedule:
    """``value`` as a schedule (a Keras ``LearningRateSchedule`` keeps its own code).

    A Keras schedule is wrapped (:class:`~hyperstep.schedules.keras_compat.KerasSchedule`);
    convert it with ``hs.schedules.from_keras`` for hyperstep's equivalent.

    Example:
        >>> schedule_of(keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5), "lr")
        keras_schedule(...ExponentialDecay(...))
    """
    if isinstance(value, keras.optimizers.schedules.LearningRateSchedule) and not isinstance(
        value, Schedule
    ):
        return KerasSchedule(value)
    return as_schedule(value, name=name)


def assign_attribute(hyperparameter: Hyperparameter, name: str, value: Any) -> None:
    """``opt.<name> = value``: a schedule replaces the schedule, a number rescales it.

    As Keras's ``ReduceLROnPlateau`` and ``LearningRateScheduler`` write it: a schedule
    (hyperstep's, Keras's or an expression string) replaces the hyperparameter's schedule
    and clears its override; a number (or tensor) rescales it,
    ``scale *= value / current`` (:meth:`Hyperparameter.assign`: the schedule keeps running).

    Raises:
        TypeError: For a callable (accepted only by the wrapped optimizer's constructor); the
            message names ``Hyperparameter.set``.
    """
    if isinstance(value, (str, keras.optimizers.schedules.LearningRateSchedule)):
        hyperparameter.schedule = schedule_of(value, name)
        hyperparameter.clear()
    elif keras_callable(value):
        raise InvalidTypeError(
            f"`{name}` of a hyperstep optimizer takes a number or a schedule; a callable is "
            "read only when given to the wrapped optimizer before wrapping "
            "(`hs.scheduled(keras.optimizers.SGD(learning_rate=fn))`). For a value fixed "
            f"from now on, use `opt.hyperparameters[{name!r}].set(x)` "
            f"(`Hyperparameter.set`). {received(name, value)}"
        )
    else:
        hyperparameter.assign(value)


class LiveValue(keras.Variable):  # type: ignore[misc,valid-type]
    """``opt.<name>`` read eagerly: the current value, whose ``assign`` is ``opt.<name> = x``
    (Keras's ``assign_add`` and ``assign_sub`` call it)."""

    _hs_target: tuple[Any, str]

    def assign(self, value: Any) -> Any:
        optimizer, name = self._hs_target
        setattr(optimizer, name, value)
        return getattr(optimizer, name)


def live_value(optimizer: Any, name: str, value: Any, cache: dict[str, Any]) -> Any:
    """``value``, the current value of ``optimizer.<name>``, as Keras's own optimizer reads
    it: eagerly a (non-trainable) variable, kept in ``cache``, whose ``assign`` assigns the
    attribute (``opt.learning_rate.assign(x)``, Keras-style); in a traced step the tensor."""
    if not concrete(value):
        return value
    live = cache.get(name)
    if live is None:
        live = cache[name] = LiveValue(value, name=name, trainable=False)
        live._hs_target = (optimizer, name)
    else:
        keras.Variable.assign(live, value)
    return live


class StatelessValues:
    """Changing values in the state ``stateless_apply`` takes and returns (a ``jax.jit``
    loop): each call returns a new list with the hyperparameters' variables replaced, as
    :meth:`Hyperparameter.set`, :meth:`Hyperparameter.clear` and ``scale.assign`` would
    assign them. A base of ``hs.scheduled`` optimizers and ``hs.StepOptimizer``."""

    if TYPE_CHECKING:  # provided by the optimizer

        @property
        def hyperparameters(self) -> dict[str, Hyperparameter]: ...

        @property
        def variables(self) -> list[Any]: ...

    def stateless_set(self, optimizer_variables: Sequence[Any], **values: Any) -> list[Any]:
        """Return ``optimizer_variables`` with an override set for each ``name=value``.

        The stateless :meth:`Hyperparameter.set`: ``value(name) = value`` from the next
        ``stateless_apply`` on, whatever the schedule, until :meth:`stateless_clear`.
        Inside or outside ``jax.jit``; a new value is an array, so nothing recompiles.

        The state holds the variables of the hyperparameters the update reads where Keras
        trains statelessly (JAX: the loop in ``docs/backends.md``); elsewhere it holds none,
        and this refuses.

        Example:
            >>> import keras, hyperstep as hs
            >>> opt = hs.scheduled(keras.optimizers.SGD(), learning_rate="0.1 * 0.5 ** step")
            >>> opt.build([keras.Variable([1.0])])
            >>> state = [v.value for v in opt.variables]
            >>> round(float(opt.stateless_values(state)["learning_rate"]), 6)
            0.1

            On JAX, ``state = opt.stateless_set(state, learning_rate=0.3)`` then reads 0.3.
        """
        return self._hs_stateless_write(optimizer_variables, "set", values)

    def stateless_scale(self, optimizer_variables: Sequence[Any], **scales: Any) -> list[Any]:
        """Return ``optimizer_variables`` with ``scale`` set for each ``name=scale``:
        ``value(name) = schedule(step) * scale`` (the stateless ``hp.scale.assign``)."""
        return self._hs_stateless_write(optimizer_variables, "scale", scales)

    def stateless_clear(self, optimizer_variables: Sequence[Any], *names: str) -> list[Any]:
        """Return ``optimizer_variables`` with the override of each of ``names`` removed
        (the stateless :meth:`Hyperparameter.clear`)."""
        return self._hs_stateless_write(optimizer_variables, "clear", dict.fromkeys(names, nan))

    def stateless_values(self, optimizer_variables: Sequence[Any]) -> dict[str, Any]:
        """Return ``{name: value}``, every hyperparameter's effective value in
        ``optimizer_variables`` at their clock's step (scalars; arrays inside ``jax.jit``)."""
        mapping = list(zip(self.variables, self._hs_checked(optimizer_variables), strict=True))
        with keras.StatelessScope(state_mapping=mapping):
            return {name: hp.value for name, hp in self.hyperparameters.items()}

    def _hs_checked(self, optimizer_variables: Sequence[Any]) -> list[Any]:
        found = list(optimizer_variables)
        if len(found) != len(self.variables):
            raise InvalidArgumentError(
                f"`optimizer_variables` must hold one value per variable of the optimizer, "
                f"in the order of `optimizer.variables` ({len(self.variables)}), as "
                f"`stateless_apply` takes them. Received: {len(found)} values"
            )
        return found

    def _hs_stateless_write(
        self, optimizer_variables: Sequence[Any], verb: str, values: Mapping[str, Any]
    ) -> list[Any]:
        found = self._hs_checked(optimizer_variables)
        unknown = sorted(set(values) - set(self.hyperparameters))
        if unknown:
            raise InvalidArgumentError(
                f"`stateless_{verb}(...)`: no hyperparameter named {unknown[0]!r}; this "
                f"optimizer has {sorted(self.hyperparameters)}. Received: {unknown[0]}=..."
            )
        index = {id(variable): i for i, variable in enumerate(self.variables)}
        for name, value in values.items():
            if verb != "clear" and not hasattr(value, "dtype"):
                value = check_number(f"stateless_{verb}", name, value)
            hyperparameter = self.hyperparameters[name]
            variable = hyperparameter.scale if verb == "scale" else hyperparameter.override
            if id(variable) not in index:
                raise InvalidArgumentError(
                    f"`stateless_{verb}({name}=...)`: {name!r} has no variable in "
                    "`optimizer.variables`, the state `stateless_apply` carries (there, only "
                    "where Keras trains statelessly, JAX, and only the hyperparameters the "
                    f"update reads). Use `opt.hyperparameters[{name!r}]` and its `set`, "
                    f"`clear` or `scale.assign` instead. Received: {name}={value!r}"
                )
            found[index[id(variable)]] = ops.cast(value, variable.dtype)
        return found


def apply_update(
    optimizer: Any,
    update: Update,
    run: Callable[[], Any],
    *,
    advance: bool,
    host: bool,
    values: Callable[[Update], Mapping[str, Any]],
) -> Any:
    """``run()`` (the optimizer's update) with the clock's step fixed for it, then a teacher
    network's update (:meth:`hyperstep.EMA.network`), then the clock's advance: at the end
    of the training iteration when one is open (:meth:`hyperstep.Clock.iteration`, each of
    ``fit``'s train steps), else now if ``advance``. The update uses the values of step
    ``t``, computed before the clock moves to ``t + 1``. ``host`` and ``values`` (the
    update's one dict, built from its step): see :meth:`Update.fixed`."""
    clock = optimizer.clock
    with update.fixed(clock, host=host, values=values, nested=False):
        result = run()
    average = optimizer.__dict__.get("_hs_average")  # a teacher network (hs.EMA.network)
    if average is not None:
        average.after_update()
    # -- the clock's advance: once per training iteration, at its end, if one is open
    # (`fit`'s train step, `with clock.iteration()`); else by the advancing optimizer now
    iteration = open_iteration(clock)
    if iteration is not None:
        iteration.record(clock, optimizer)
    else:
        note_update(clock, optimizer, advance)
        steps = optimizer.gradient_accumulation_steps
        if advance and steps:  # the clock counts applied updates, not micro-steps
            applied = ops.equal(ops.mod(optimizer._iterations.value, steps), 0)
            clock.step.assign_add(ops.cast(applied, clock.step.dtype))
        elif advance:
            clock.advance()
    return result


def check_arguments(where: str, clock: Any, advance: Any, groups: Any = ()) -> None:
    """The arguments both optimizers take (from their constructor or a config), checked
    once: a TypeError naming the argument and the value received."""
    if clock is not None and not isinstance(clock, Clock):
        raise InvalidTypeError(
            f"`{where}(clock=...)` must be an `hs.Clock` or None. {received('clock', clock)}"
        )
    if advance is not None and not isinstance(advance, bool):
        raise InvalidTypeError(
            f"`{where}(advance=...)` must be True, False or None. {received('advance', advance)}"
        )
    if isinstance(groups, (str, bytes, dict)) or not isinstance(groups, (list, tuple)):
        raise InvalidTypeError(
            f"`{where}(groups=...)` must be a list of `hs.Group` objects. "
            f"{received('groups', groups)}"
        )


def bind_groups(
    specs: Sequence[Any],
    own: Mapping[str, Hyperparameter],
    make: Callable[[str, Any], Hyperparameter],
    where: str,
) -> list[Group]:
    """Bind ``specs`` (``hs.Group`` objects or their configs): each value becomes
    ``make("group/name", value)``; a serialized schedule is loaded, an expression may name
    the optimizer's ``own`` hyperparameters (``"10 * learning_rate"``).

    Raises:
        TypeError: For a spec that is not a Group (``where`` names the argument).
        ValueError: For a name that is not one of ``own``, or two groups of one name.
    """
    bound = []
    for spec in specs:
        if isinstance(spec, dict):
            spec = Group.from_config(spec)
        if not isinstance(spec, Group):
            raise InvalidTypeError(
                f"`{where}(groups=...)` takes `hs.Group` objects. {received('group', spec)}"
            )
        unknown = [name for name in spec.hyperparameters if name not in own]
        if unknown:
            raise InvalidArgumentError(
                f"`{where}(groups=...)`: group {spec.name!r} sets {unknown}, which are not "
                f"hyperparameters of the optimizer. Valid: {list(own)}. {received('group', spec)}"
            )
        values = {}
        for name, value in spec.hyperparameters.items():
            value = deserialize_value(value)
            if isinstance(value, str):
                value = relative(value, own)
            values[name] = make(f"{spec.name}/{name}", value)
        bound.append(Group(spec.name, spec.match, **values))
    names = [group.name for group in bound]
    if len(set(names)) != len(names):
        raise InvalidArgumentError(f"Group names must be unique. Received: groups named {names}.")
    return bound


def serialize_value(hyperparameter: Hyperparameter) -> Any:
    """A hyperparameter's schedule in a config: a constant as its number, an expression
    naming other hyperparameters as its text, any other schedule serialized."""
    schedule = hyperparameter._raw_schedule
    if isinstance(schedule, Constant):
        return schedule.value_
    if references(schedule):  # "10 * learning_rate" is saved as its text
        return repr(schedule)
    return keras.saving.serialize_keras_object(schedule)


def deserialize_value(value: Any, custom_objects: Any = None) -> Any:
    """The inverse of :func:`serialize_value` (a number or text stays as it is)."""
    if isinstance(value, dict) and "class_name" in value:
        return keras.saving.deserialize_keras_object(value, custom_objects)
    return value


def hyperparameters_config(
    own: Mapping[str, Hyperparameter],
    groups: Sequence[Group],
    variables: Sequence[Any] | None,
    *,
    clock: Any,
    advance: bool,
    fused: bool | None,
) -> dict[str, Any]:
    """The config keys both optimizers share (see the module docstring); ``variables``
    serialize a group's predicate as the paths it matched."""
    return {
        "hyperparameters": {name: serialize_value(hp) for name, hp in own.items()},
        "clock": keras.saving.serialize_keras_object(clock),
        "advance": advance,
        "fused": fused,
        "groups": [
            {
                "name": group.name,
                "match": group.get_config(variables)["match"],
                "hyperparameters": {
                    name: serialize_value(hp) for name, hp in group.hyperparameters.items()
                },
            }
            for group in groups
        ],
    }


def from_hyperparameters_config(
    config: dict[str, Any], custom_objects: Any = None
) -> dict[str, Any]:
    """Pop the shared keys from ``config`` (see :func:`hyperparameters_config`):
    ``hyperparameters`` (values loaded), ``clock`` (loaded), ``advance``, ``fused`` and
    ``groups`` (as saved: the optimizer's constructor binds them with :func:`bind_groups`
    and checks them)."""
    clock = config.pop("clock", None)
    if isinstance(clock, dict):
        clock = keras.saving.deserialize_keras_object(clock, custom_objects)
    values = config.pop("hyperparameters")
    for key, value in values.items():  # a damaged number in a file is named by its key
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            check_number("hyperparameters", key, value)
    return {
        "hyperparameters": {k: deserialize_value(v, custom_objects) for k, v in values.items()},
        "clock": clock,
        "advance": config.pop("advance", None),
        "fused": config.pop("fused", False),
        "groups": config.pop("groups", ()),
    }
