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

Keras's update hooks each run Keras's own code: ``update_step(g, w, lr)`` on ``w``'s group's
view of the optimizer (:func:`~hyperstep.optim.scheduled_base.group_view`); clipping with
each bound rounded once to the gradient's dtype; weight decay and torch's all-variables
update once per group; ``fused=True`` hands Adam, SGD and RMSprop to the backend's fused
kernels (:func:`hyperstep.backends.fused_updates`).
"""

from __future__ import annotations

import warnings
from typing import Any

import keras
from keras import ops

from hyperstep import backends
from hyperstep.backends import native_variable
from hyperstep.backends.internals import naming_loaded_file, unpickle_optimizer
from hyperstep.clock import Clock
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.optim.averaging import restore as restore_average
from hyperstep.optim.core import apply_update, from_hyperparameters_config, keras_callable
from hyperstep.optim.groups import assign_groups
from hyperstep.optim.scheduled_base import (
    WRAPPERS,
    ScheduledBase,
    group_view,
    inner_config,
    numeric_names,
    scheduled_state,
    wrapped_class,
)


class ScheduledOptimizer(ScheduledBase):
    """Mixin placed before a Keras optimizer class by :func:`scheduled`: its update (one
    dict of values per update) and the Keras methods it overrides to run it."""

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
        :meth:`~hyperstep.optim.scheduled_base.ScheduledBase.get_config`: the scheduled
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
    present = [ops.convert_to_tensor(g) for g in grads if g is not None]
    if not present:
        return grads
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
    (:meth:`~hyperstep.optim.scheduled_base.ScheduledBase.get_config`).
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
    # (``ScheduledBase._hs_install``: from here and from a config alike)
    # values become schedules at install (strings may name each other: "0.1 * momentum")
    given = dict(hyperparameters)
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
        hyperparameters=given,
        clock=clock,
        advance=advance,
        groups=groups,
        fused=fused,
    )


# the name every scheduled class saves under loads through ScheduledOptimizer.from_config,
# which makes the class of the wrapped optimizer's on demand
keras.saving.get_custom_objects()[REGISTERED_NAME] = ScheduledOptimizer
