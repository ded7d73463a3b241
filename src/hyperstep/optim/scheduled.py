"""``hs.scheduled``: any numeric hyperparameter of any Keras optimizer on a schedule.

``hs.scheduled(keras.optimizers.AdamW(), learning_rate=..., beta_1=...)`` returns an
optimizer of a subclass of ``AdamW`` whose numeric hyperparameters are properties reading
:class:`~hyperstep.Hyperparameter` variables, so schedules, overrides and controllers change
them without retracing. An update reads the step once, evaluates every hyperparameter Keras
reads into one dict (:mod:`hyperstep.optim.core`), runs Keras's own update with each
value in the form :mod:`hyperstep.backends.keras_forms` decides, and advances the clock
(:mod:`hyperstep.optim.core`, shared with ``hs.StepOptimizer``). Assigning an attribute
rescales the schedule (docs/runtime.md, "Assigning an attribute"); what is saved:
docs/backends.md, "Saving".

Keras's update hooks run Keras's own code on a group's view of the optimizer
(:func:`group_view`). The config nests the wrapped optimizer's
(:meth:`ScheduledOptimizer.get_config`); :func:`numeric_names` are what can be scheduled.
"""

from __future__ import annotations

import difflib
import inspect
import warnings
from typing import Any

import keras
from keras import ops

from hyperstep import backends
from hyperstep.backends import native_variable
from hyperstep.backends.internals import naming_loaded_file, unpickle_optimizer
from hyperstep.clock import Clock
from hyperstep.control import named_state
from hyperstep.control.hyperparameter import Hyperparameter, track
from hyperstep.control.relative import references, resolve
from hyperstep.control.value_forms import checked_once
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.iteration import claim
from hyperstep.optim.averaging import config_of as average_config
from hyperstep.optim.averaging import restore as restore_average
from hyperstep.optim.core import (
    StatelessValues,
    Update,
    apply_update,
    assign_attribute,
    bind_groups,
    check_arguments,
    deserialize_value,
    from_hyperparameters_config,
    hyperparameters_config,
    keras_callable,
    keras_value,
    live_value,
    schedule_of,
)
from hyperstep.optim.groups import Group, assign_groups
from hyperstep.schedules.base import is_number
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


class ScheduledOptimizer(named_state.SavedByName, StatelessValues):
    """Mixin placed before a Keras optimizer class by :func:`scheduled`: its hyperparameters
    (installation, values, config) and the Keras methods it overrides to run an update with
    one dict of values."""

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

        def make(key: str, value: Any) -> Hyperparameter:  # `name`, or a group's `group/name`
            schedule = schedule_of(value, key)
            hyperparameter = Hyperparameter(schedule, clock=clock, name=key.replace("/", "."))
            self._hs_add(key, hyperparameter)
            return hyperparameter

        # expressions may name the optimizer's other hyperparameters ("0.1 * learning_rate")
        built = resolve(values, make, "hs.scheduled(...)")

        # a group's expressions may name the optimizer's own hyperparameters
        state.groups = bind_groups(groups, built, make, "hs.scheduled")
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
        keys = self._hs_read_keys()
        # (`update` is this optimizer's, which `_hs_value` reads; a traced step checks the
        # cooldowns once)
        values = checked_once(lambda: {key: self._hs_value(key) for key in keys})
        reads = getattr(self, "_hs_reads", None)  # hyperstep.backends.tensorflow's iterations
        if reads is not None:
            values.update(reads())
        return values

    def _hs_value(self, name: str) -> Any:
        """Hyperparameter ``name`` at this update's step, as the backend hands it to Keras."""
        state = scheduled_state(self)
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

    # ---- the update: Keras's own code with the update's one dict of values -----------------
    def apply(self, grads: Any, trainable_variables: Any = None) -> Any:
        state = scheduled_state(self)
        if len(grads) == 0:
            return super().apply(grads, trainable_variables)  # type: ignore[misc]

        def run() -> Any:
            gated = grads
            if backends.builds_graph():
                read = state.update.values  # the update's one dict: Keras's update reads the same
                values = [self.iterations, *(read[k] for k in self._hs_read_keys())]
                gated = state.update.gate(values, grads)
            return super(ScheduledOptimizer, self).apply(gated, trainable_variables)  # type: ignore[misc]

        return apply_update(
            self, state.update, run, advance=state.advance, host=True, values=self._hs_values
        )

    def _hs_update(self) -> Any:
        """The step fixed for an update (kept if one is in progress: ``build`` and
        ``_clip_gradients`` called from ``apply``; :meth:`Update.fixed`)."""
        return scheduled_state(self).update.fixed(self.clock, host=True, values=self._hs_values)

    def build(self, variables: Any) -> Any:
        # Keras decides which slots to create from Python checks on hyperparameters
        # (`if self.momentum != 0`): they see the same values as inside `apply`.
        state = scheduled_state(self)
        if state.groups:
            owners = assign_groups(state.groups, list(variables))
            state.owner = {}
            for variable, group in zip(variables, owners, strict=True):
                if group is not None:
                    # TF's update path passes the backing tf.Variable, not the Keras one
                    inner = native_variable(variable)
                    state.owner[id(variable)] = state.owner[id(inner)] = group.name
        self._hs_track_state()
        # values read on demand here, not all at once: `build` may run before `fit` has told
        # the clock its epoch (torch), and it reads only the names its checks use
        with state.update.fixed(self.clock, host=True):
            return super().build(variables)  # type: ignore[misc]

    def _clip_gradients(self, grads: Any) -> Any:
        """Keras's clipping (``BaseOptimizer._clip_gradients`` and its helpers, formula for
        formula), with each bound rounded once to the gradient's dtype, as Keras's Python
        floats are: ``clipnorm``: ``g * c / max(norm(g), c)``; ``global_clipnorm``:
        ``g * c * min(1 / norm(all), 1 / c)``; ``clipvalue``: ``clip(g, -c, c)``."""
        with self._hs_update():
            clipnorm, global_clipnorm, clipvalue = (
                self.clipnorm,  # type: ignore[attr-defined]
                self.global_clipnorm,  # type: ignore[attr-defined]
                self.clipvalue,  # type: ignore[attr-defined]
            )
            if clipnorm is not None and clipnorm and clipnorm > 0:
                return [_clip_by_norm(g, clipnorm) if g is not None else g for g in grads]
            if global_clipnorm is not None and global_clipnorm and global_clipnorm > 0:
                return _clip_by_global_norm(grads, global_clipnorm)
            if clipvalue is not None and clipvalue and clipvalue > 0:
                return [_clip_by_value(g, clipvalue) if g is not None else g for g in grads]
            return grads

    def _apply_weight_decay(self, variables: Any) -> Any:
        state = scheduled_state(self)
        if state.fused_decay:
            return  # in `update_step`, just before each variable's update
        if not state.owner:
            return super()._apply_weight_decay(variables)  # type: ignore[misc]
        for variable in variables:  # each variable with its own group's values
            if not self._use_weight_decay(variable):  # type: ignore[attr-defined]
                continue  # (Keras's torch decay fails on an empty list)
            view = group_view(self, state.owner.get(id(variable)))
            super(ScheduledOptimizer, view)._apply_weight_decay([variable])  # type: ignore[misc]

    def _backend_update_step(self, grads: Any, trainable_variables: Any, learning_rate: Any) -> Any:
        """Keras's torch optimizers update every variable at once with one learning rate
        (``_parallel_update_step``, ``torch._foreach_*``): with groups, once per group, each
        with its own values."""
        state = scheduled_state(self)
        if not state.owner or not hasattr(self, "_parallel_update_step"):
            return self._hs_update_group(grads, trainable_variables, learning_rate)
        by_group: dict[str | None, tuple[list[Any], list[Any]]] = {}
        for gradient, variable in zip(grads, trainable_variables, strict=True):
            pair = by_group.setdefault(state.owner.get(id(variable)), ([], []))
            pair[0].append(gradient)
            pair[1].append(variable)
        for group, (group_grads, variables) in by_group.items():
            if "learning_rate" in state.hyperparameters:
                learning_rate = state.update.read("learning_rate", group)
            view = group_view(self, group)  # its reads look this group's entries up first
            view._hs_update_group(group_grads, variables, learning_rate)

    def _hs_update_group(self, grads: Any, variables: Any, learning_rate: Any) -> Any:
        """One group's update: with ``fused=True`` on torch, PyTorch's fused kernel
        (:func:`hyperstep.backends.torch.group_update`), else Keras's own code (decaying the
        weights first where the fused path took the decay over and cannot run)."""
        state = scheduled_state(self)
        if state.fused:
            fused = backends.fused_updates()
            if fused.group_update(self, grads, variables, learning_rate):
                return None
            decayed = [v for v in variables if self._use_weight_decay(v)]  # type: ignore[attr-defined]
            if state.fused_decay and decayed and hasattr(self, "_parallel_update_step"):
                super()._apply_weight_decay(decayed)  # type: ignore[misc]
        return super()._backend_update_step(  # type: ignore[misc]
            grads, variables, learning_rate
        )

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> Any:
        if not self._hs_updating():
            # called directly, outside `apply` (Keras's own tests do): the learning rate
            # given, the other values at the clock's step
            with self._hs_update():
                return self._hs_update_step(gradient, variable, learning_rate, given=True)
        return self._hs_update_step(gradient, variable, learning_rate, given=False)

    def _hs_update_step(self, gradient: Any, variable: Any, learning_rate: Any, given: bool) -> Any:
        state = scheduled_state(self)
        group = state.owner.get(id(variable)) if state.owner else None
        if "learning_rate" in state.hyperparameters and not given:
            learning_rate = state.update.read("learning_rate", group)
        view = group_view(self, group)  # its reads look the group's entries up first
        fused = backends.fused_updates() if state.fused else None
        if fused is not None and state.fused_decay:
            fused.decay(view, variable, learning_rate)
        if fused is not None and fused.adam_applies(view, gradient, variable):
            return fused.adam(view, gradient, variable, learning_rate)
        if fused is not None and fused.sgd_applies(view, gradient, variable):
            return fused.sgd(view, gradient, variable, learning_rate)
        if fused is not None and fused.rmsprop_applies(view, gradient, variable):
            return fused.rmsprop(view, gradient, variable, learning_rate)
        return super(ScheduledOptimizer, view).update_step(gradient, variable, learning_rate)  # type: ignore[misc]

    @classmethod
    @naming_loaded_file()
    def from_config(cls, config: dict[str, Any], custom_objects: Any = None) -> Any:
        """Load a config of
        :meth:`ScheduledOptimizer.get_config`: the scheduled
        class of the wrapped optimizer's (:func:`scheduled_class`)."""
        config = dict(config)
        nested = config.pop("optimizer", None)
        if nested is None:
            raise InvalidArgumentError(
                "A config of `hs.scheduled(...)` needs its wrapped optimizer under "
                f"'optimizer'. Received: config with keys {sorted(config)}"
            )
        target = scheduled_class(wrapped_class(nested, custom_objects))
        config = {**inner_config(nested), **config}
        average = config.pop("average", None)
        shared = from_hyperparameters_config(config, custom_objects)  # as StepOptimizer's
        optimizer = super(ScheduledOptimizer, target).from_config(  # type: ignore[misc]
            {**config, **shared}, custom_objects
        )
        return restore_average(optimizer, average)

    def __reduce__(self) -> tuple[Any, ...]:
        # Keras pickles an optimizer as its `.keras` bytes and a method of its class, which
        # pickle cannot find by name for a class made at run time: name the wrapped class
        _, args = super().__reduce__()  # type: ignore[misc,str-unpack]
        return (_unpickle, (self._hs_base, args))


def _clip_by_norm(values: Any, clipnorm: Any) -> Any:
    values = ops.convert_to_tensor(values)
    c = backends.in_dtype(clipnorm, values.dtype)
    l2sum = ops.sum(ops.square(values), None, keepdims=True)
    pred = l2sum > 0
    l2sum_safe = ops.where(pred, l2sum, ops.ones_like(l2sum))  # no nan gradient
    l2norm = ops.where(pred, ops.sqrt(l2sum_safe), l2sum)
    return ops.convert_to_tensor(ops.multiply(values, c)) / ops.maximum(l2norm, c)


def _clip_by_global_norm(grads: list[Any], clipnorm: Any) -> list[Any]:
    # one at least: Keras's apply drops the missing gradients and returns if none is left
    present = [ops.convert_to_tensor(g) for g in grads if g is not None]
    c = backends.in_dtype(clipnorm, present[0].dtype)
    norm = ops.sqrt(ops.sum(ops.stack([ops.sum(ops.square(g)) for g in present])))
    finite = c * ops.minimum(1.0 / norm, 1.0 / c)
    scale = finite + (norm - norm)  # nan for an inf or nan norm
    return [g * scale if g is not None else g for g in grads]


def _clip_by_value(values: Any, clipvalue: Any) -> Any:
    values = ops.convert_to_tensor(values)
    c = backends.in_dtype(clipvalue, values.dtype)
    return ops.clip(values, -c, c)


def _unpickle(base: type, args: tuple[Any, ...]) -> Any:
    return unpickle_optimizer(scheduled_class(base), args)


# ---- the config: the wrapped optimizer nested, as Keras nests LossScaleOptimizer's inner one
def serialized(cls: type, config: dict[str, Any]) -> dict[str, Any]:
    """``cls`` with ``config`` as Keras serializes an instance: a built-in optimizer under
    its public name (``keras.optimizers.Adam``, also for Keras's torch classes), any other
    class by module, name and registered name (what Keras needs to find it again)."""
    public = [k for k in cls.__mro__ if getattr(keras.optimizers, k.__name__, None) is k]
    if public and backends.optimizer_class(public[0]) is cls:
        return {
            "module": "keras.optimizers",
            "class_name": public[0].__name__,
            "config": config,
            "registered_name": None,
        }
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
        if is_number(default) or (default is None and name in OPTIONAL_NUMERIC):
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


_CLASSES: dict[type, type] = {}


def _property(name: str) -> property:
    def getter(self: Any) -> Any:
        return self._hs_get(name)

    def setter(self: Any, value: Any) -> None:
        self._hs_set(name, value)

    if name == "learning_rate":  # Keras's getter reads `_get_current_learning_rate`
        keras_property = keras.optimizers.Optimizer.learning_rate
        getter = keras_property.fget

        def setter(self: Any, value: Any) -> None:
            if "learning_rate" in scheduled_state(self).hyperparameters:
                self._hs_set(name, value)
            else:
                keras_property.fset(self, value)

    return property(getter, setter, doc=f"The `{name}` hyperparameter (see `hyperparameters`).")


#: the one registered name of every scheduled class (its config nests the wrapped one's)
REGISTERED_NAME = "hyperstep>Scheduled"


def scheduled_class(cls: type) -> type:
    """Return the (cached, registered) scheduled subclass of optimizer class ``cls``.

    One class per class Keras instantiates (on torch, ``keras.optimizers.Adam`` and Keras's
    torch ``Adam`` give the same class: :func:`hyperstep.backends.optimizer_class`). Every
    one serializes as ``"hyperstep>Scheduled"`` with the wrapped optimizer's config nested
    (:meth:`ScheduledOptimizer.get_config`).
    """
    cls = backends.optimizer_class(cls)
    if cls in _CLASSES:
        return _CLASSES[cls]
    namespace: dict[str, Any] = {name: _property(name) for name in numeric_names(cls)}
    namespace["_hs_base"] = cls
    namespace["__module__"] = __name__
    namespace["__doc__"] = f"{cls.__name__} with every numeric hyperparameter on a schedule."
    bases = (ScheduledOptimizer, *backends.optimizer_mixins(), cls)
    sub = type(f"Scheduled{cls.__name__}", bases, namespace)
    package, name = REGISTERED_NAME.split(">")
    keras.saving.register_keras_serializable(package=package, name=name)(sub)
    keras.saving.get_custom_objects()[REGISTERED_NAME] = ScheduledOptimizer  # not `sub`
    _CLASSES[cls] = sub
    return sub


def scheduled(
    optimizer: keras.optimizers.Optimizer,
    *,
    clock: Clock | None = None,
    advance: bool | None = None,
    groups: Any = (),
    fused: bool = False,
    **hyperparameters: Any,
) -> keras.optimizers.Optimizer:
    """Return ``optimizer`` with its numeric hyperparameters read from variables each step.

    ``value(name) = override if set else schedule(clock.step) * scale`` for every numeric
    hyperparameter (``learning_rate``, ``beta_1``, ``momentum``, ``weight_decay``, ...):
    the ones given here follow their schedule, the others keep the optimizer's value as a
    constant that can still be set or scaled. ``weight_decay`` and the clipping arguments
    stay off (``None``) unless given. The result is a new, unbuilt optimizer of a subclass
    of ``type(optimizer)`` with ``opt.hyperparameters`` (name -> Hyperparameter) and
    ``opt.clock``, saved with it (docs/backends.md, "Saving").

    Args:
        optimizer: A fresh (never applied) Keras optimizer.
        clock: The :class:`~hyperstep.Clock` to read; ``None`` creates one.
        advance: Whether this optimizer advances the clock after each update. ``None``:
            yes if no other optimizer advances it already (see :class:`~hyperstep.Clock`).
        groups: :class:`~hyperstep.Group` objects giving sets of variables their own
            hyperparameters (``opt.hyperparameters["group/name"]``); checked when the
            optimizer is built (a pattern matching nothing, a variable matched twice).
        fused: Whether TensorFlow's and torch's updates take the backend's one-pass
            kernels (docs/backends.md, "Fused updates"): faster, equal to Keras's update to
            float32 rounding. By default (``False``) every update is Keras's own code:
            bitwise the plain optimizer with the same values set before each step.
        **hyperparameters: ``name=value``, each value a number, a hyperstep schedule or
            an expression string, or a Keras ``LearningRateSchedule`` (evaluated by its
            own code; ``hs.schedules.from_keras`` converts the built-in ones to hyperstep's
            equivalents).

    Raises:
        ValueError: For a name that is not a numeric hyperparameter of the optimizer
            (the message lists the valid ones), or an optimizer that was already applied.
        TypeError: For an argument of the wrong type.

    Example:
        >>> import keras
        >>> opt = scheduled(keras.optimizers.Adam(), learning_rate="0.01 * 0.5 ** (step / 100)")
        >>> sorted(opt.hyperparameters)[:3]
        ['beta_1', 'beta_2', 'ema_momentum']
        >>> round(float(opt.learning_rate), 6)
        0.01
        >>> _ = opt.clock.step.assign(100)
        >>> round(float(opt.learning_rate), 6)
        0.005
    """
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        raise InvalidTypeError(
            "`hs.scheduled(optimizer=...)` must be a Keras optimizer instance such as "
            f"`keras.optimizers.Adam()`. {received('optimizer', optimizer)}"
        )
    cls = type(optimizer)
    if isinstance(optimizer, ScheduledOptimizer):
        raise InvalidArgumentError(
            "`hs.scheduled(optimizer=...)` is already scheduled; change its values through "
            f"`optimizer.hyperparameters[name]`. {received('optimizer', optimizer)}"
        )
    if cls.__name__ in WRAPPERS:
        raise InvalidArgumentError(
            f"`hs.scheduled` cannot wrap a {cls.__name__}; schedule the optimizer inside "
            f"it instead, e.g. `{cls.__name__}(hs.scheduled(keras.optimizers.Adam(), ...))`. "
            f"{received('optimizer', optimizer)}"
        )
    if optimizer.built or int(ops.convert_to_numpy(optimizer.iterations)) != 0:
        raise InvalidArgumentError(
            "`hs.scheduled(optimizer=...)` needs a fresh optimizer (its slots are rebuilt); "
            f"this one was already applied. {received('optimizer', optimizer)}"
        )
    # the other arguments are checked once, where every scheduled optimizer is built
    # (``ScheduledOptimizer._hs_install``: from here and from a config alike)
    # values become schedules at install (strings may name each other: "0.1 * momentum")
    learning_rate = optimizer._learning_rate
    with warnings.catch_warnings():
        if keras_callable(learning_rate):  # Keras warns that it serializes a lambda
            warnings.simplefilter("ignore")
        config = optimizer.get_config()
    if keras_callable(learning_rate) or isinstance(
        learning_rate, keras.optimizers.schedules.LearningRateSchedule
    ):
        config["learning_rate"] = learning_rate  # not its serialized form
    return scheduled_class(cls)(
        **config,
        hyperparameters=hyperparameters,
        clock=clock,
        advance=advance,
        groups=groups,
        fused=fused,
    )


# the name every scheduled class saves under loads through ScheduledOptimizer.from_config,
# which makes the class of the wrapped optimizer's on demand
keras.saving.get_custom_objects()[REGISTERED_NAME] = ScheduledOptimizer
