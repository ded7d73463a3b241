"""What an ``hs.scheduled`` optimizer holds: its hyperparameters, their values, its config.

:class:`ScheduledBase` installs the hyperparameters (from the wrapped optimizer's values and
the ones given), reads them (``opt.<name>``) and writes the
config, ``{"optimizer": <the wrapped optimizer as Keras serializes it>, "hyperparameters",
"clock", "advance", "groups", "fused"}`` (:func:`serialized`, :func:`wrapped_class`), so a
file loads wherever Keras can load the wrapped class;
:class:`~hyperstep.optim.scheduled.ScheduledOptimizer` runs the update.

:func:`numeric_names` are the constructor arguments that can be scheduled: numbers (not
bools) the optimizer reads at every update. One that fixes the structure of the update
(:data:`STRUCTURAL`) cannot change at run time, so ``hs.scheduled`` refuses it by name.
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any

import keras

from hyperstep import backends
from hyperstep.clock import Clock
from hyperstep.control import named_state
from hyperstep.control.hyperparameter import Hyperparameter, track
from hyperstep.control.relative import references, resolve
from hyperstep.control.value_forms import checked_once
from hyperstep.errors import InvalidArgumentError, received
from hyperstep.iteration import claim
from hyperstep.optim.averaging import config_of as average_config
from hyperstep.optim.core import (
    StatelessValues,
    Update,
    assign_attribute,
    bind_groups,
    check_arguments,
    deserialize_value,
    hyperparameters_config,
    keras_callable,
    keras_value,
    live_value,
    schedule_of,
)
from hyperstep.optim.groups import Group
from hyperstep.schedules.checks import check_flag
from hyperstep.schedules.expressions import Constant


class _State:
    """Transient per-optimizer state kept out of Keras's and TensorFlow's tracking."""

    def __init__(self) -> None:
        self.update = Update()
        self.hyperparameters: dict[str, Hyperparameter] = {}
        self.static: dict[str, float | None] = {}
        self.raw: dict[str, Any] = {}
        self.advance = False
        self.groups: list[Group] = []
        self.owner: dict[int, str] = {}  # id(variable) -> group name, filled at build time
        self.fused_requested = False  # `fused=True` was passed
        self.fused = False  # fused kernels (hyperstep.backends.tensorflow/.torch), set at install
        self.fused_decay = False  # ... and its one-multiply weight decay
        self.live: dict[str, Any] = {}  # name -> the variable `opt.<name>` returns eagerly
        self.views: dict[str, Any] = {}  # group name -> the optimizer as its variables see it
        self.view_group: dict[int, str] = {}  # id(view) -> its group name

    def __getstate__(self) -> dict[str, Any]:
        # a copy makes its own group views (a copied view would not share the copy's dict)
        return {**self.__dict__, "views": {}, "view_group": {}}


def scheduled_state(optimizer: Any) -> _State:
    state = optimizer.__dict__.get("_hs_state")
    if state is None:
        state = _State()
        optimizer.__dict__["_hs_state"] = state
    return state


def group_view(optimizer: Any, group: str | None) -> Any:
    """``optimizer`` as the variables of group ``group`` see it (``None``: ``optimizer``).

    The view is an instance of the optimizer's class sharing its ``__dict__`` (every
    attribute, slot and variable is the optimizer's), made once per group; only its
    hyperparameter properties differ, reading the group's entries of the update's dict
    first. Keras's own ``update_step``, weight decay and torch's all-variables update run
    on it unchanged: the group travels with ``self``, not in a scope set around the call.
    """
    if group is None:
        return optimizer
    state = scheduled_state(optimizer)
    view = state.views.get(group)
    if view is None:
        view = object.__new__(type(optimizer))
        object.__setattr__(view, "__dict__", optimizer.__dict__)  # past Keras's tracking
        state.views[group] = view
        state.view_group[id(view)] = group
    return view


class ScheduledBase(named_state.SavedByName, StatelessValues):
    """The hyperparameters of a scheduled optimizer: installation, values and config."""

    # provided by the Keras optimizer class this mixin is combined with
    name: str
    clock: Clock
    iterations: Any
    gradient_accumulation_steps: Any
    _iterations: Any
    _learning_rate: Any
    _hs_base: type
    _tracker: Any
    _track_variable: Any

    def __init__(
        self,
        *args: Any,
        hyperparameters: dict[str, Any] | None = None,
        clock: Any = None,
        advance: bool | None = None,
        groups: Any = (),
        fused: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        scheduled_state(self).fused_requested = fused
        self._hs_install(hyperparameters or {}, clock, advance, groups)

    # ---- public surface -----------------------------------------------------------------
    @property
    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """Every numeric hyperparameter by Keras argument name (a group's as ``"group/name"``)."""
        return dict(scheduled_state(self).hyperparameters)

    @property
    def groups(self) -> dict[str, Group]:
        """The parameter groups, by name (each holding its own Hyperparameters)."""
        return {group.name: group for group in scheduled_state(self).groups}

    # ---- installation -------------------------------------------------------------------
    def _hs_install(
        self, given: dict[str, Any], clock: Any, advance: bool | None, groups: Any = ()
    ) -> None:
        state = scheduled_state(self)
        if isinstance(clock, dict):
            clock = keras.saving.deserialize_keras_object(clock)
        check_names(self._hs_base, given)  # each argument checked once, from here alone
        check_arguments("hs.scheduled", clock, advance, groups)
        check_flag("hs.scheduled", "fused", state.fused_requested)
        if clock is None:
            clock = Clock(name=f"{self.name}_clock")
        self.clock = clock
        state.advance = claim(clock, self, advance)
        raw = dict(state.raw)
        learning_rate = self._learning_rate
        if isinstance(learning_rate, keras.Variable):
            # Keras's own variable stays in `variables` (untracking it would break
            # tf.train.Checkpoint's append-only lists) but is no longer read.
            raw["learning_rate"] = float(learning_rate.numpy())
        elif keras_callable(learning_rate):
            raw["learning_rate"] = None  # Keras calls it at every update, as without us
        else:
            raw["learning_rate"] = learning_rate
        values: dict[str, Any] = {}
        for name in numeric_names(self._hs_base):
            value = given.get(name, raw.get(name))
            if value is None:
                continue
            values[name] = deserialize_value(value)
        # expressions may name the optimizer's other hyperparameters ("0.1 * learning_rate")
        built = resolve(
            values,
            lambda name, value: Hyperparameter(schedule_of(value, name), clock=clock, name=name),
            "hs.scheduled(...)",
        )
        for name, hyperparameter in built.items():
            self._hs_add(name, hyperparameter)

        def check(group: Group) -> None:
            unknown = sorted(set(group.hyperparameters) - set(built))
            if unknown:
                raise InvalidArgumentError(
                    f"Group {group.name!r} sets {unknown}, which are not numeric "
                    f"hyperparameters of {self._hs_base.__name__}. Valid: {sorted(built)}. "
                    f"{received('group', group)}"
                )

        def make(key: str, value: Any) -> Hyperparameter:
            hyperparameter = Hyperparameter(value, clock=clock, name=key.replace("/", "."))
            self._hs_add(key, hyperparameter)
            return hyperparameter

        # a group's expressions may name the optimizer's own hyperparameters
        state.groups = bind_groups(groups, built, make, check, "hs.scheduled")
        # `fused=True`: TF updates take the one-pass forms of hyperstep.backends.tensorflow
        # (otherwise Keras's own code: bitwise the plain optimizer set before each step)
        fused = backends.fused_updates()  # None where there are no such kernels
        state.fused = fused is not None and state.fused_requested
        state.fused_decay = state.fused and fused.decays_in_update(self)
        self._hs_track_state()

    def _hs_track_state(self) -> None:
        """JAX trains statelessly: only `opt.variables` go into and out of the jitted step,
        so the clock and the state of the hyperparameters read must be among them (only
        those: each is one more array through the step): their ``step_variables``, which
        all exist from their creation (a controller's own state is not read in the step).
        Called at install and again at ``build``."""
        if not backends.trains_statelessly():
            return
        state = scheduled_state(self)
        read = [state.hyperparameters[key] for key in self._hs_read_keys()]
        read += [ref.target for hp in read for ref in references(hp.schedule)]
        hp_variables = [v for hp in read for v in hp.step_variables]
        for variable in [self.clock.step, *hp_variables]:
            if not self._tracker.is_in_store("variables", variable):
                self._track_variable(variable)

    def _hs_add(self, key: str, hyperparameter: Hyperparameter) -> None:
        """Register ``hyperparameter`` under ``key`` (``name`` or ``group/name``), tracked."""
        state = scheduled_state(self)
        state.hyperparameters[key] = hyperparameter
        schedule = hyperparameter.schedule
        state.static[key] = schedule.value_ if isinstance(schedule, Constant) else None
        track(self, f"hyperparameter_{key.replace('/', '.')}", hyperparameter)

    # ---- reading values -----------------------------------------------------------------
    def _hs_values(self, update: Update) -> dict[str, Any]:
        """The one dict of an update, built at its start: every hyperparameter Keras reads
        (:meth:`_hs_read_keys`, a group's as ``group/name``) at the update's step, in the
        form the backend hands Keras (:func:`~hyperstep.optim.core.keras_value`), and
        what a backend's mixin reads once per update (``_hs_reads``)."""
        state = scheduled_state(self)
        keys = self._hs_read_keys()
        values = checked_once(  # a traced step checks their cooldowns once
            lambda: {
                key: keras_value(
                    update, state.hyperparameters[key], key, self._hs_base, state.static[key]
                )
                for key in keys
            }
        )
        reads = getattr(self, "_hs_reads", None)  # hyperstep.backends.tensorflow's iterations
        if reads is not None:
            values.update(reads())
        return values

    def _hs_value(self, name: str) -> Any:
        """Hyperparameter ``name`` at this update's step: its entry in the update's dict
        (computed here only for a name outside :meth:`_hs_read_keys`)."""
        state = scheduled_state(self)
        found = state.update.values.get(name)
        if found is not None:
            return found
        hyperparameter = state.hyperparameters[name]
        return keras_value(state.update, hyperparameter, name, self._hs_base, state.static[name])

    def _hs_updating(self) -> bool:
        """Whether the caller reads inside an update in progress (its step fixed)."""
        return scheduled_state(self).update.owns()

    def _hs_get(self, name: str) -> Any:
        state = scheduled_state(self)
        if name not in state.hyperparameters:
            return state.raw.get(name)
        update = state.update
        if update.owns():  # `self` is a group's view (`group_view`) for its variables
            found = update.read(name, state.view_group.get(id(self)))
            return found if found is not None else self._hs_value(name)
        # outside `apply` (or another thread reading meanwhile): the current effective
        # value; eagerly as a variable whose `assign` assigns the attribute
        # (`opt.learning_rate.assign(x)`, Keras-style)
        return live_value(self, name, state.hyperparameters[name].value, state.live)

    def _hs_set(self, name: str, value: Any) -> None:
        """``opt.<name> = value``: a schedule replaces the hyperparameter's schedule (and
        clears its override); a number rescales it (:meth:`Hyperparameter.assign`)."""
        state = scheduled_state(self)
        if name not in state.hyperparameters:
            state.raw[name] = value
            return
        assign_attribute(state.hyperparameters[name], name, value)
        schedule = state.hyperparameters[name].schedule
        state.static[name] = schedule.value_ if isinstance(schedule, Constant) else None

    def _get_current_learning_rate(self) -> Any:
        if "learning_rate" not in scheduled_state(self).hyperparameters:
            return super()._get_current_learning_rate()  # type: ignore[misc]
        return self._hs_get("learning_rate")

    def _hs_read_keys(self) -> list[str]:
        """The hyperparameters Keras reads in an update: all but ``ema_momentum`` without
        ``use_ema`` (read only by the moving average; ``use_ema`` is fixed at creation)."""
        use_ema = bool(getattr(self, "use_ema", False))
        keys = scheduled_state(self).hyperparameters
        return [k for k in keys if use_ema or k.split("/")[-1] != "ema_momentum"]

    # ---- config -------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        """``{"optimizer": <the wrapped optimizer, serialized as Keras does>, "clock": ...,
        "hyperparameters": ..., "groups": ..., "advance": ..., "fused": ...}``: the wrapped
        optimizer's config nested (as Keras's ``LossScaleOptimizer`` nests its inner one),
        so a file loads wherever Keras can load the wrapped class itself."""
        state = scheduled_state(self)
        inner = super().get_config()  # type: ignore[misc]
        for name in numeric_names(self._hs_base)[1:]:  # (Keras reads its own rate)
            if name in inner:  # Keras's raw value, as the wrapped optimizer's config has it
                inner[name] = state.raw.get(name)
        config: dict[str, Any] = {"optimizer": serialized(self._hs_base, inner)}
        own = {k: hp for k, hp in state.hyperparameters.items() if "/" not in k}
        config.update(  # a group's own hyperparameters are saved with it
            hyperparameters_config(
                own,
                state.groups,
                list(getattr(self, "_trainable_variables", []) or []),
                clock=self.clock,
                advance=state.advance,
                fused=state.fused_requested,
            )
        )
        config.update(average_config(self))  # an hs.SWA/hs.EMA average
        return config

    # ---- saving (hyperstep.control.named_state.SavedByName) ---------------------------
    def _hs_named(self) -> dict[str, Hyperparameter]:
        return scheduled_state(self).hyperparameters


# ---- the config: the wrapped optimizer nested, as Keras nests LossScaleOptimizer's inner one
def serialized(cls: type, config: dict[str, Any]) -> dict[str, Any]:
    """``cls`` with ``config`` as Keras serializes an instance: a built-in optimizer under
    its public name (``keras.optimizers.Adam``, also for Keras's torch classes), any other
    class by module, name and registered name (what Keras needs to find it again)."""
    for klass in cls.__mro__:
        public = getattr(keras.optimizers, klass.__name__, None)
        if public is klass and backends.optimizer_class(klass) is cls:
            return {
                "module": "keras.optimizers",
                "class_name": klass.__name__,
                "config": config,
                "registered_name": None,
            }
        if public is klass:
            break
    return {
        "module": cls.__module__,
        "class_name": cls.__name__,
        "config": config,
        "registered_name": keras.saving.get_registered_name(cls),
    }


def wrapped_class(nested: Any, custom_objects: Any) -> type:
    """The optimizer class a nested config names, found as Keras finds a class: a
    built-in by its public name, any other by its registered name (or class name) among
    ``custom_objects`` and the registered classes."""
    if not isinstance(nested, dict) or not isinstance(nested.get("class_name"), str):
        raise InvalidArgumentError(
            "A config of `hs.scheduled(...)` names its wrapped optimizer as Keras serializes "
            f"one (module, class_name, config). {received('optimizer', nested)}"
        )
    name = nested["class_name"]
    found: Any = None
    if nested.get("module") == "keras.optimizers":
        found = getattr(keras.optimizers, name, None)
    else:
        key = nested.get("registered_name") or name
        found = keras.saving.get_registered_object(key, custom_objects=custom_objects)
        if found is None and custom_objects:
            found = custom_objects.get(name)
    if not (isinstance(found, type) and issubclass(found, keras.optimizers.Optimizer)):
        raise InvalidArgumentError(
            f"Cannot find the optimizer class {name!r} wrapped by `hs.scheduled`: register it "
            "with `@keras.saving.register_keras_serializable()` or pass it in "
            f"`custom_objects`, as Keras needs for the class itself. "
            f"{received('optimizer', {k: v for k, v in nested.items() if k != 'config'})}"
        )
    return found


def inner_config(nested: dict[str, Any]) -> dict[str, Any]:
    """The wrapped optimizer's own config (Keras's keys) from a nested config."""
    inner = nested.get("config", {})
    if not isinstance(inner, dict):
        raise InvalidArgumentError(
            "The wrapped optimizer's config in a config of `hs.scheduled(...)` must be a "
            f"dict. {received('config', inner)}"
        )
    return inner


# ---- numeric hyperparameters: the constructor arguments that can be scheduled ------------
#: numeric arguments that fix the structure of the update; never scheduled
STRUCTURAL: dict[str, str] = {
    "gradient_accumulation_steps": "it fixes how many gradients are accumulated per update",
    "ema_overwrite_frequency": "it fixes how often the EMA overwrites the weights",
    "initial_accumulator_value": "it only initializes the accumulators when they are built",
    "ns_steps": "it is the number of Newton-Schulz iterations unrolled in the graph",
    "warmup_steps": "it is compared in Python when the update is traced",
    "initial_scale": "it only initializes the loss scale",
    "dynamic_growth_steps": "it is compared in Python when the update is traced",
}

#: arguments that default to None and are numbers when given (None = feature off)
OPTIONAL_NUMERIC = ("weight_decay", "clipnorm", "clipvalue", "global_clipnorm", "loss_scale_factor")

#: the numeric arguments every Keras optimizer takes (``BaseOptimizer.__init__``)
BASE_NUMERIC = (*OPTIONAL_NUMERIC[:4], "ema_momentum", "loss_scale_factor")

#: Keras optimizers that wrap other optimizers: schedule the inner one instead
WRAPPERS = ("LossScaleOptimizer", "MultiOptimizer")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def constructor_arguments(cls: type) -> dict[str, Any]:
    """Return ``{name: default}`` of the constructor arguments of ``cls`` and its bases."""
    found: dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        init = klass.__dict__.get("__init__")
        if init is None or klass is object:
            continue
        for name, parameter in inspect.signature(init).parameters.items():
            if name == "self" or parameter.kind in (
                parameter.VAR_KEYWORD,
                parameter.VAR_POSITIONAL,
            ):
                continue
            found[name] = parameter.default
    return found


def numeric_names(cls: type) -> list[str]:
    """Return the names of the numeric hyperparameters of optimizer class ``cls``.

    Example:
        >>> import keras
        >>> numeric_names(keras.optimizers.SGD)[:4]
        ['learning_rate', 'momentum', 'weight_decay', 'clipnorm']
    """
    own: list[str] = []
    for name, default in constructor_arguments(cls).items():
        if name == "learning_rate" or name in STRUCTURAL or name in BASE_NUMERIC:
            continue
        if _is_number(default) or (default is None and name in OPTIONAL_NUMERIC):
            own.append(name)
    # the base-class arguments last, in one order for every optimizer
    return ["learning_rate", *own, *BASE_NUMERIC]


def check_names(cls: type, given: dict[str, Any], where: str = "hs.scheduled") -> None:
    """Raise ValueError naming the valid choices if a name of ``given`` (name -> value)
    cannot be scheduled on optimizer class ``cls``."""
    valid = numeric_names(cls)
    arguments = constructor_arguments(cls)
    for name, value in given.items():
        if name in valid:
            continue
        title = f"`{where}({cls.__name__}(), {name}=...)`"
        listing = f"Valid: {', '.join(valid)}."
        if name in STRUCTURAL:
            reason = f"`{name}` cannot be scheduled: {STRUCTURAL[name]}."
        elif name in arguments:
            kind = type(arguments[name]).__name__
            reason = (
                f"`{name}` is not a numeric hyperparameter of {cls.__name__} (it is a {kind} "
                "that fixes the structure of the update); set it on the optimizer instead."
            )
        else:
            close = difflib.get_close_matches(name, valid, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            reason = f"{cls.__name__} has no hyperparameter {name!r}.{hint}"
        raise InvalidArgumentError(f"{title}: {reason} {listing} {received(name, value)}")
