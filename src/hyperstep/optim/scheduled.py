"""``hs.scheduled``: any numeric hyperparameter of any Keras optimizer on a schedule.

``hs.scheduled(keras.optimizers.AdamW(), learning_rate=..., beta_1=..., weight_decay=...)``
returns an optimizer of a subclass of ``AdamW`` (created once per class, registered for
Keras serialization as ``hyperstep>ScheduledAdamW``) whose numeric hyperparameters are
properties reading :class:`~hyperstep.Hyperparameter` variables at every update, so
schedules, overrides and controllers change them without retracing.

Inside ``apply``:

1. the clock's step ``t`` is read once (as float32, like every schedule reads it);
2. Keras's own update runs; every hyperparameter it reads is evaluated at ``t`` (once per
   update, cached), through :meth:`ScheduledOptimizer.resolve`;
3. the clock advances to ``t + 1`` if this optimizer owns it (see :class:`hyperstep.Clock`).

These steps, group binding and the config format are ``hs.StepOptimizer``'s code too
(:mod:`hyperstep.optim.core`, :mod:`hyperstep.optim.resolve`).

Keras's ``iterations`` keeps counting this optimizer's own updates (Adam's bias correction
uses it). Every update is Keras's own code, with the values reaching it as Keras's own
would (on TensorFlow as :class:`~hyperstep.backends.tensorflow.ExactScalar`, which rounds like a
Python float; on JAX a constant as :class:`~hyperstep.backends.static.StaticScalar`, whose
arithmetic with numbers rounds like its Python float; on eager torch as Python floats), so
the weights are bitwise those of the plain optimizer whose values are set before each step
(under ``torch.compile`` too: :func:`hyperstep.backends.torch.exact_scalar`).
``fused=True`` opts into TensorFlow's one-pass updates
(:mod:`hyperstep.backends.tensorflow`) and PyTorch's fused Adam kernel
(:mod:`hyperstep.backends.torch`): faster, and equal to Keras's updates to float32 rounding.

Reading ``opt.beta_1`` outside ``apply`` gives the current effective value (eagerly, a
variable whose ``assign`` is the attribute assignment). Assigning to the attribute follows
Keras: a schedule (hyperstep's, Keras's or an expression) replaces the hyperparameter's
schedule and clears its override; a number rescales it (:meth:`Hyperparameter.assign`:
``scale *= x / current``), so the value is ``x`` now and the schedule keeps running. That is
what Keras's ``ReduceLROnPlateau`` (each reduction multiplies the schedule: the same trace as
``hs.ReduceOnPlateau(..., compat="keras")``) and ``LearningRateScheduler`` (its value at each
epoch's start, the schedule's shape within the epoch) do. ``Hyperparameter.set`` instead
fixes the value until ``clear``. Keras's own ``learning_rate`` variable stays in
``opt.variables`` but is no longer read. A callable learning rate given to the wrapped
optimizer stays Keras's (called at each update; not in ``opt.hyperparameters``).

Saving: the clock and the hyperparameters are saved with the optimizer (``.keras``,
``save_weights``, ``tf.train.Checkpoint``; details per backend in docs/backends.md,
"Saving"). The config is Keras's plus the format both hyperstep optimizers share
(:func:`hyperstep.optim.core.hyperparameters_config`); ``from_config`` gives a new clock
(sharing is not in a config).
"""

from __future__ import annotations

import warnings
from typing import Any

import keras
from keras import ops

from hyperstep import backends
from hyperstep.backends import concrete, native_variable
from hyperstep.backends.internals import unpickle_optimizer
from hyperstep.clock import Clock
from hyperstep.control.hyperparameter import Hyperparameter, _track
from hyperstep.control.relative import references, resolve
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.optim import _introspect
from hyperstep.optim.average_state import config_of as average_config
from hyperstep.optim.average_state import restore as restore_average
from hyperstep.optim.core import (
    apply_update,
    assign_attribute,
    bind_groups,
    deserialize_value,
    from_hyperparameters_config,
    hyperparameters_config,
    keras_callable,
    schedule_of,
)
from hyperstep.optim.groups import Group, assign_groups
from hyperstep.optim.resolve import Update, keras_value
from hyperstep.schedules.base import Constant


class _State:
    """Transient per-optimizer state kept out of Keras's and TensorFlow's tracking."""

    def __init__(self) -> None:
        self.update = Update()
        self.hyperparameters: dict[str, Hyperparameter] = {}
        self.static: dict[str, float | None] = {}
        self.checked: frozenset[str] = frozenset()  # names Keras's code tests in Python `if`s
        self.arithmetic: frozenset[str] = frozenset()  # ... combines with numbers in Python
        self.raw: dict[str, Any] = {}
        self.advance = False
        self.groups: list[Group] = []
        self.owner: dict[int, str] = {}  # id(variable) -> group name, filled at build time
        self.fused_requested = False  # `fused=True` was passed
        self.fused = False  # fused kernels (hyperstep.backends.tensorflow/.torch), set at install
        self.fused_decay = False  # ... and its one-multiply weight decay
        self.live: dict[str, Any] = {}  # name -> the variable `opt.<name>` returns eagerly


def _state(optimizer: Any) -> _State:
    state = optimizer.__dict__.get("_hs_state")
    if state is None:
        state = _State()
        optimizer.__dict__["_hs_state"] = state
    return state


class ScheduledOptimizer:
    """Mixin placed before a Keras optimizer class by :func:`scheduled`.

    Per-variable hyperparameters (a later ``hs.Group``) plug in by overriding
    :meth:`resolve`: Keras's ``update_step`` reads every hyperparameter through it, with the
    variable being updated.
    """

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
        _state(self).fused_requested = bool(fused)
        self._hs_install(hyperparameters or {}, clock, advance, groups)

    # ---- public surface -----------------------------------------------------------------
    @property
    def hyperparameters(self) -> dict[str, Hyperparameter]:
        """Every numeric hyperparameter by Keras argument name (a group's as ``"group/name"``)."""
        return dict(_state(self).hyperparameters)

    @property
    def groups(self) -> dict[str, Group]:
        """The parameter groups, by name (each holding its own Hyperparameters)."""
        return {group.name: group for group in _state(self).groups}

    def resolve(self, name: str, variable: Any = None) -> Any:
        """Return hyperparameter ``name`` for the update of ``variable`` at this step.

        A variable in a :class:`~hyperstep.Group` that sets ``name`` gets the group's
        value, every other variable the optimizer's own. Called only inside ``apply``
        (the step is fixed); values are computed once per update and graph.
        """
        state = _state(self)
        group = state.owner.get(id(variable)) if variable is not None else None
        key = f"{group}/{name}"
        if group is not None and key in state.hyperparameters:
            return self._hs_value(key)
        return self._hs_value(name)

    # ---- installation -------------------------------------------------------------------
    def _hs_install(
        self, given: dict[str, Any], clock: Any, advance: bool | None, groups: Any = ()
    ) -> None:
        state = _state(self)
        if isinstance(clock, dict):
            clock = keras.saving.deserialize_keras_object(clock)
        _check_install(self._hs_base, given, clock, advance, groups)
        # read once here: inside a compiled step (torch.compile) reading source code breaks it
        state.checked = _introspect.checked_in_python(self._hs_base)
        state.arithmetic = _introspect.arithmetic_in_python(self._hs_base)
        if clock is None:
            clock = Clock(name=f"{self.name}_clock")
        self.clock = clock
        state.advance = clock.claim(self, advance)
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
        for name in _introspect.numeric_names(self._hs_base):
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
        self._hs_install_groups(groups, clock)
        # `fused=True`: TF updates take the one-pass forms of hyperstep.backends.tensorflow
        # (otherwise Keras's own code: bitwise the plain optimizer set before each step)
        fused = backends.fused_updates()  # None where there are no such kernels
        state.fused = fused is not None and state.fused_requested
        state.fused_decay = state.fused and fused.decays_in_update(self)
        self._hs_track_state()

    def _hs_track_state(self) -> None:
        """JAX trains statelessly: only `opt.variables` go into and out of the jitted step,
        so the clock and the state of the hyperparameters read must be among them (only
        those: each is one more array through the step). Called at install and again at ``build``,
        for state added since (a :class:`~hyperstep.Cooldown`'s start)."""
        if not backends.trains_statelessly():
            return
        state = _state(self)
        read = [state.hyperparameters[key] for key in self._hs_read_keys()]
        read += [ref.target for hp in read for ref in references(hp.schedule)]
        hp_variables = [v for hp in read for v in hp.variables]
        for variable in [self.clock.step, *hp_variables]:
            if not self._tracker.is_in_store("variables", variable):
                self._track_variable(variable)

    def _hs_add(self, key: str, hyperparameter: Hyperparameter) -> None:
        """Register ``hyperparameter`` under ``key`` (``name`` or ``group/name``), tracked."""
        state = _state(self)
        state.hyperparameters[key] = hyperparameter
        schedule = hyperparameter.schedule
        state.static[key] = schedule.value_ if isinstance(schedule, Constant) else None
        _track(self, f"hyperparameter_{key.replace('/', '.')}", hyperparameter)

    def _hs_install_groups(self, groups: Any, clock: Clock) -> None:
        state = _state(self)
        valid = set(state.hyperparameters)
        base = self._hs_base.__name__

        def check(group: Group) -> None:
            unknown = sorted(set(group.hyperparameters) - valid)
            if unknown:
                raise InvalidArgumentError(
                    f"Group {group.name!r} sets {unknown}, which are not numeric "
                    f"hyperparameters of {base}. Valid: {sorted(valid)}."
                )

        def make(key: str, value: Any) -> Hyperparameter:
            hyperparameter = Hyperparameter(value, clock=clock, name=key.replace("/", "."))
            self._hs_add(key, hyperparameter)
            return hyperparameter

        # a group's expressions may name the optimizer's own hyperparameters
        own = {key: hp for key, hp in state.hyperparameters.items() if "/" not in key}
        state.groups = bind_groups(groups, own, make, check, "hs.scheduled")

    # ---- reading values -----------------------------------------------------------------
    def _hs_cached(self, key: str, make: Any) -> Any:
        """``make()``, once per update and graph (for the backends' optimizer mixins)."""
        return _state(self).update.cached(key, make)

    def _hs_value(self, name: str) -> Any:
        """Hyperparameter ``name`` at this update's step, once per update and graph."""
        state = _state(self)
        return state.update.cached(
            name,
            lambda: keras_value(
                state.update,
                state.hyperparameters[name],
                name,
                static=state.static[name],
                checked=name.split("/")[-1] in state.checked,
                arithmetic=name.split("/")[-1] in state.arithmetic,
            ),
        )

    def _hs_updating(self) -> bool:
        """Whether the caller reads inside an update in progress (its step fixed)."""
        return _state(self).update.owns()

    def _hs_get(self, name: str) -> Any:
        state = _state(self)
        if state.update.raw_mode or name not in state.hyperparameters:
            return state.raw.get(name)
        if state.update.owns():
            return self.resolve(name, state.update.variable)
        # outside `apply` (or another thread reading meanwhile): the current effective
        # value; eagerly as a variable whose `assign` assigns the attribute
        # (`opt.learning_rate.assign(x)`, Keras-style)
        value = state.hyperparameters[name].value
        if not concrete(value):
            return value
        live = state.live.get(name)
        if live is None:
            live = state.live[name] = _LiveValue(value, name=name)
            live._hs_target = (self, name)
        else:
            keras.Variable.assign(live, value)
        return live

    def _hs_set(self, name: str, value: Any) -> None:
        """``opt.<name> = value``: a schedule replaces the hyperparameter's schedule (and
        clears its override); a number rescales it (:meth:`Hyperparameter.assign`)."""
        state = _state(self)
        if name not in state.hyperparameters or state.update.raw_mode:
            state.raw[name] = value
            return
        assign_attribute(state.hyperparameters[name], name, value)
        schedule = state.hyperparameters[name].schedule
        state.static[name] = schedule.value_ if isinstance(schedule, Constant) else None

    def _get_current_learning_rate(self) -> Any:
        if "learning_rate" not in _state(self).hyperparameters:
            return super()._get_current_learning_rate()  # type: ignore[misc]
        return self._hs_get("learning_rate")

    # ---- the update ---------------------------------------------------------------------
    def _hs_update(self) -> Any:
        """The step fixed for an update (kept if one is in progress: ``build`` and
        ``_clip_gradients`` called from ``apply``; :meth:`Update.fixed`)."""
        return _state(self).update.fixed(self.clock, host=True)

    def apply(self, grads: Any, trainable_variables: Any = None) -> Any:
        state = _state(self)
        if len(grads) == 0:
            return super().apply(grads, trainable_variables)  # type: ignore[misc]

        def run() -> Any:
            gated = grads
            if backends.builds_graph():  # the values are cached: Keras's update reuses them
                values = [self.iterations, *(self._hs_value(k) for k in self._hs_read_keys())]
                gated = state.update.gate(values, grads)
            return super(ScheduledOptimizer, self).apply(gated, trainable_variables)  # type: ignore[misc]

        return apply_update(self, state.update, run, advance=state.advance, host=True)

    def _hs_read_keys(self) -> list[str]:
        """The hyperparameters Keras reads in an update: all but ``ema_momentum`` without
        ``use_ema`` (read only by the moving average; ``use_ema`` is fixed at creation)."""
        use_ema = bool(getattr(self, "use_ema", False))
        keys = _state(self).hyperparameters
        return [k for k in keys if use_ema or k.split("/")[-1] != "ema_momentum"]

    def build(self, variables: Any) -> Any:
        # Keras decides which slots to create from Python checks on hyperparameters
        # (`if self.momentum != 0`): they see the same values as inside `apply`.
        state = _state(self)
        if state.groups:
            owners = assign_groups(state.groups, list(variables))
            state.owner = {}
            for variable, group in zip(variables, owners, strict=True):
                if group is not None:
                    # TF's update path passes the backing tf.Variable, not the Keras one
                    inner = native_variable(variable)
                    state.owner[id(variable)] = state.owner[id(inner)] = group.name
        self._hs_track_state()
        with self._hs_update():
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
        state = _state(self)
        if state.fused_decay:
            return  # in `update_step`, just before each variable's update
        if not state.owner:
            return super()._apply_weight_decay(variables)  # type: ignore[misc]
        outer = state.update.variable
        try:
            for variable in variables:  # each variable with its own group's values
                if not self._use_weight_decay(variable):  # type: ignore[attr-defined]
                    continue  # (Keras's torch decay fails on an empty list)
                state.update.variable = variable
                super()._apply_weight_decay([variable])  # type: ignore[misc]
        finally:
            state.update.variable = outer

    def _backend_update_step(self, grads: Any, trainable_variables: Any, learning_rate: Any) -> Any:
        """Keras's torch optimizers update every variable at once with one learning rate
        (``_parallel_update_step``, ``torch._foreach_*``): with groups, once per group, each
        with its own values."""
        state = _state(self)
        if not state.owner or not hasattr(self, "_parallel_update_step"):
            return self._hs_update_group(grads, trainable_variables, learning_rate)
        by_group: dict[str | None, tuple[list[Any], list[Any]]] = {}
        for gradient, variable in zip(grads, trainable_variables, strict=True):
            pair = by_group.setdefault(state.owner.get(id(variable)), ([], []))
            pair[0].append(gradient)
            pair[1].append(variable)
        outer = state.update.variable
        try:
            for group_grads, variables in by_group.values():
                state.update.variable = variables[0]  # `resolve` reads this group's values
                if "learning_rate" in state.hyperparameters:
                    learning_rate = self.resolve("learning_rate", variables[0])
                self._hs_update_group(group_grads, variables, learning_rate)
        finally:
            state.update.variable = outer

    def _hs_update_group(self, grads: Any, variables: Any, learning_rate: Any) -> Any:
        """One group's update: with ``fused=True`` on torch, PyTorch's fused kernel
        (:func:`hyperstep.backends.torch.group_update`), else Keras's own code (decaying the
        weights first where the fused path took the decay over and cannot run)."""
        state = _state(self)
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
        state = _state(self)
        outer = state.update.variable
        state.update.variable = variable
        try:
            if "learning_rate" in state.hyperparameters:
                learning_rate = self.resolve("learning_rate", variable)
            fused = backends.fused_updates() if state.fused else None
            if fused is not None and state.fused_decay:
                fused.decay(self, variable, learning_rate)
            if fused is not None and fused.adam_applies(self, gradient, variable):
                return fused.adam(self, gradient, variable, learning_rate)
            if fused is not None and fused.sgd_applies(self, gradient, variable):
                return fused.sgd(self, gradient, variable, learning_rate)
            if fused is not None and fused.rmsprop_applies(self, gradient, variable):
                return fused.rmsprop(self, gradient, variable, learning_rate)
            return super().update_step(gradient, variable, learning_rate)  # type: ignore[misc]
        finally:
            state.update.variable = outer

    # ---- config -------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        state = _state(self)
        state.update.raw_mode = True
        try:
            config = super().get_config()  # type: ignore[misc]
        finally:
            state.update.raw_mode = False
        own = {k: hp for k, hp in state.hyperparameters.items() if "/" not in k}
        config.update(  # a group's own hyperparameters are saved with it
            hyperparameters_config(
                own,
                state.groups,
                self._hs_group_variables(),
                clock=self.clock,
                advance=state.advance,
                fused=state.fused_requested,
            )
        )
        config.update(average_config(self))  # an hs.SWA/hs.EMA average
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: Any = None) -> Any:
        config = dict(config)
        average = config.pop("average", None)
        shared = from_hyperparameters_config(config, custom_objects)  # as StepOptimizer's
        if shared["hyperparameters"] is None:
            shared["hyperparameters"] = {}
        optimizer = super().from_config({**config, **shared}, custom_objects)  # type: ignore[misc]
        return restore_average(optimizer, average)

    def _hs_group_variables(self) -> list[Any]:
        return list(getattr(self, "_trainable_variables", []) or [])

    def __reduce__(self) -> tuple[Any, ...]:
        # Keras pickles an optimizer as its `.keras` bytes and a method of its class, which
        # pickle cannot find by name for a class made at run time: name the wrapped class
        _, args = super().__reduce__()  # type: ignore[misc,str-unpack]
        return (_unpickle, (self._hs_base, args))


def _unpickle(base: type, args: tuple[Any, ...]) -> Any:
    return unpickle_optimizer(scheduled_class(base), args)


class _LiveValue(keras.Variable):  # type: ignore[misc,valid-type]
    """``opt.<name>`` read eagerly: the current value, whose ``assign`` is ``opt.<name> = x``."""

    _hs_target: tuple[Any, str]

    def assign(self, value: Any) -> Any:
        optimizer, name = self._hs_target
        optimizer._hs_set(name, value)
        return optimizer._hs_get(name)

    def assign_add(self, value: Any) -> Any:
        return self.assign(ops.add(self.value, value))

    def assign_sub(self, value: Any) -> Any:
        return self.assign(ops.subtract(self.value, value))


_in_dtype = backends.in_dtype


def _clip_by_norm(values: Any, clipnorm: Any) -> Any:
    values = ops.convert_to_tensor(values)
    c = _in_dtype(clipnorm, values.dtype)
    l2sum = ops.sum(ops.square(values), None, keepdims=True)
    pred = l2sum > 0
    l2sum_safe = ops.where(pred, l2sum, ops.ones_like(l2sum))  # no nan gradient
    l2norm = ops.where(pred, ops.sqrt(l2sum_safe), l2sum)
    return ops.convert_to_tensor(ops.multiply(values, c)) / ops.maximum(l2norm, c)


def _clip_by_global_norm(grads: list[Any], clipnorm: Any) -> list[Any]:
    present = [ops.convert_to_tensor(g) for g in grads if g is not None]
    if not present:
        return grads
    c = _in_dtype(clipnorm, present[0].dtype)
    norm = ops.sqrt(ops.sum(ops.stack([ops.sum(ops.square(g)) for g in present])))
    finite = c * ops.minimum(1.0 / norm, 1.0 / c)
    scale = finite + (norm - norm)  # nan for an inf or nan norm
    return [g * scale if g is not None else g for g in grads]


def _clip_by_value(values: Any, clipvalue: Any) -> Any:
    values = ops.convert_to_tensor(values)
    c = _in_dtype(clipvalue, values.dtype)
    return ops.clip(values, -c, c)


def _check_install(base: type, given: Any, clock: Any, advance: Any, groups: Any) -> None:
    """The arguments of a scheduled optimizer (from ``hs.scheduled`` or a config).

    A ValueError even for a wrong type: Keras rewraps a TypeError raised by ``from_config``
    into a long message of its own."""
    where = f"Scheduled{base.__name__}"
    if not isinstance(given, dict):
        raise InvalidArgumentError(
            f"`{where}(hyperparameters=...)` must be a dict of name -> schedule. "
            f"{received('hyperparameters', given)}"
        )
    valid = _introspect.numeric_names(base)
    unknown = sorted(set(given) - set(valid))
    if unknown:
        raise InvalidArgumentError(
            f"`{where}(hyperparameters=...)` names {unknown}, which are not numeric "
            f"hyperparameters of {base.__name__}. Valid: {', '.join(valid)}. "
            f"Received: hyperparameters with {unknown[0]!r}"
        )
    if clock is not None and not isinstance(clock, Clock):
        raise InvalidArgumentError(
            f"`{where}(clock=...)` must be an `hs.Clock` (or its config) or None. "
            f"{received('clock', clock)}"
        )
    if advance is not None and not isinstance(advance, bool):
        raise InvalidArgumentError(
            f"`{where}(advance=...)` must be True, False or None. {received('advance', advance)}"
        )
    if isinstance(groups, (str, bytes, dict)) or not isinstance(groups, (list, tuple)):
        raise InvalidArgumentError(
            f"`{where}(groups=...)` must be a list of `hs.Group` objects. "
            f"{received('groups', groups)}"
        )


_CLASSES: dict[type, type] = {}


def _property(name: str) -> property:
    def getter(self: Any) -> Any:
        return self._hs_get(name)

    def setter(self: Any, value: Any) -> None:
        self._hs_set(name, value)

    if name == "learning_rate":
        keras_property = keras.optimizers.Optimizer.learning_rate

        def getter(self: Any) -> Any:
            return self._get_current_learning_rate()

        def setter(self: Any, value: Any) -> None:
            if "learning_rate" in _state(self).hyperparameters:
                self._hs_set(name, value)
            else:
                keras_property.fset(self, value)

    return property(getter, setter, doc=f"The `{name}` hyperparameter (see `hyperparameters`).")


def scheduled_class(cls: type) -> type:
    """Return the (cached, registered) scheduled subclass of optimizer class ``cls``."""
    if cls in _CLASSES:
        return _CLASSES[cls]
    namespace: dict[str, Any] = {name: _property(name) for name in _introspect.numeric_names(cls)}
    namespace["_hs_base"] = cls
    namespace["__module__"] = __name__
    namespace["__doc__"] = f"{cls.__name__} with every numeric hyperparameter on a schedule."
    bases = (ScheduledOptimizer, *backends.optimizer_mixins(), cls)
    sub = type(f"Scheduled{cls.__name__}", bases, namespace)
    sub = keras.saving.register_keras_serializable(package="hyperstep")(sub)
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
    ``opt.clock``; it works in ``compile``/``fit`` (``jit_compile`` too), custom
    ``tf.function`` loops, ``get_config``/``from_config``, ``.keras``, ``save_weights`` and
    ``tf.train.Checkpoint``; hyperparameter and clock state are saved with it.

    Args:
        optimizer: A fresh (never applied) Keras optimizer.
        clock: The :class:`~hyperstep.Clock` to read; ``None`` creates one.
        advance: Whether this optimizer advances the clock after each update. ``None``:
            yes if no other optimizer advances it already (see :class:`~hyperstep.Clock`).
        groups: :class:`~hyperstep.Group` objects giving sets of variables their own
            hyperparameters (``opt.hyperparameters["group/name"]``); checked when the
            optimizer is built (a pattern matching nothing, a variable matched twice).
        fused: Whether TensorFlow updates take one-pass kernels (Adam and AdamW through
            ``ResourceApplyAdam``, SGD with momentum through
            ``ResourceApplyKerasMomentum``, RMSprop with momentum through
            ``ResourceApplyRMSProp``, decoupled weight decay as one multiply): faster, but
            ``1 - beta`` is rounded in float32 (up to ~1e-5 relative per step). By
            default (``False``) every update is Keras's own code: bitwise the plain
            optimizer with the same values set before each step. On torch, Adam and
            AdamW take PyTorch's fused kernel (``torch._fused_adamw_``, one pass per
            tensor; equal to Keras's update to float32 rounding; see
            :mod:`hyperstep.backends.torch`); other optimizers run Keras's code. No effect
            on JAX (XLA fuses Keras's update already).
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
    if cls.__name__ in _introspect.WRAPPERS:
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
    if clock is not None and not isinstance(clock, Clock):
        raise InvalidTypeError(
            f"`hs.scheduled(clock=...)` must be an `hs.Clock` or None. {received('clock', clock)}"
        )
    if not isinstance(fused, bool):
        raise InvalidTypeError(
            f"`hs.scheduled(fused=...)` must be True or False. {received('fused', fused)}"
        )
    if advance is not None and not isinstance(advance, bool):
        raise InvalidTypeError(
            f"`hs.scheduled(advance=...)` must be True, False or None. "
            f"{received('advance', advance)}"
        )
    if isinstance(groups, (str, bytes, dict)) or not isinstance(groups, (list, tuple)):
        raise InvalidTypeError(
            "`hs.scheduled(groups=...)` must be a list of `hs.Group` objects. "
            f"{received('groups', groups)}"
        )
    _introspect.check_names(optimizer, list(hyperparameters))
    given = {  # strings are parsed at install: they may name each other ("0.1 * momentum")
        name: value if isinstance(value, str) else schedule_of(value, name)
        for name, value in hyperparameters.items()
    }
    learning_rate = optimizer._learning_rate
    with warnings.catch_warnings():
        if keras_callable(learning_rate):  # Keras warns that it serializes a lambda
            warnings.simplefilter("ignore")
        config = optimizer.get_config()
    if isinstance(learning_rate, keras.optimizers.schedules.LearningRateSchedule):
        config["learning_rate"] = learning_rate
    elif keras_callable(learning_rate):
        config["learning_rate"] = learning_rate  # not its serialized form
    return scheduled_class(cls)(
        **config,
        hyperparameters=given,
        clock=clock,
        advance=advance,
        groups=list(groups),
        fused=fused,
    )


def _register_builtins() -> None:
    for name in dir(keras.optimizers):
        cls = getattr(keras.optimizers, name)
        if (
            isinstance(cls, type)
            and issubclass(cls, keras.optimizers.Optimizer)
            and cls is not keras.optimizers.Optimizer
            and cls.__name__ not in _introspect.WRAPPERS
        ):
            scheduled_class(cls)


_register_builtins()
