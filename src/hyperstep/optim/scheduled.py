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
"""

from __future__ import annotations

import warnings
from typing import Any

import keras
from keras import ops

from hyperstep import backends
from hyperstep.backends.internals import naming_loaded_file, unpickle_optimizer
from hyperstep.clock import Clock
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.optim.average_exchange import restore as restore_average
from hyperstep.optim.core import apply_update, from_hyperparameters_config, keras_callable
from hyperstep.optim.scheduled_base import (
    WRAPPERS,
    inner_config,
    numeric_names,
    scheduled_state,
    wrapped_class,
)
from hyperstep.optim.scheduled_update import ScheduledUpdate


class ScheduledOptimizer(ScheduledUpdate):
    """Mixin placed before a Keras optimizer class by :func:`scheduled`.

    Per-variable hyperparameters (a later ``hs.Group``) plug in by overriding
    :meth:`resolve`: Keras's ``update_step`` reads every hyperparameter through it, with the
    variable being updated.
    """

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
    registry = keras.saving.get_custom_objects()
    registry[REGISTERED_NAME] = ScheduledOptimizer  # its from_config picks the class
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


def _register_builtins() -> None:
    for name in dir(keras.optimizers):
        cls = getattr(keras.optimizers, name)
        if (
            isinstance(cls, type)
            and issubclass(cls, keras.optimizers.Optimizer)
            and cls is not keras.optimizers.Optimizer
            and cls.__name__ not in WRAPPERS
        ):
            scheduled_class(cls)


_register_builtins()
