"""The :class:`Hyperparameter`: a schedule on a clock, with its run-time state in variables.

``effective value = override if set (not nan) else cooled(schedule)(step) * scale``, in every
form, over one state: :mod:`hyperstep.control.value_forms`. Setting, overriding and scaling
are ``assign``s, so nothing retraces and everything is checkpointed with the model or
optimizer the hyperparameter is attached to.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import keras
import numpy as np
from keras import ops

from hyperstep.backends import (
    concrete,
    fast_value,
    raw,
    unmapped_in_jit,
)
from hyperstep.backends.fit import follow_fit, held_state, write_through
from hyperstep.backends.internals import naming_loaded_file
from hyperstep.backends.steering import strategy_scope
from hyperstep.clock import Clock, state_variable
from hyperstep.control import value_forms
from hyperstep.control.epochs import FitFollower, epoch_began, fit_began
from hyperstep.control.relative import references
from hyperstep.control.value_forms import ValueState, host_value, host_values, read_clock
from hyperstep.control.wrapped import hyperstep_optimizer, hyperstep_optimizers
from hyperstep.errors import FrozenValueError, InvalidArgumentError, InvalidTypeError, received
from hyperstep.schedules.base import Schedule, ScheduleLike, check_number
from hyperstep.schedules.expressions import (
    Constant,
    as_schedule,
    bind_epochs,
    uses_epoch,
    uses_total,
)

_BUILTIN_STATE = ("scale", "override", value_forms.START, value_forms.FORM)
#: steps per table of schedule values kept by :meth:`Hyperparameter.host_float`
_TABLE_STEPS = 1024


@keras.saving.register_keras_serializable(package="hyperstep")
class Hyperparameter(FitFollower, keras.layers.Layer):
    """A hyperparameter whose value follows a schedule of the clock's step.

    ``value = override if is_set else schedule(clock.step) * scale``

    ``scale`` (float32, 1.0) and ``override`` (float32, nan while no override is set:
    ``is_set = not isnan(override)``) are non-trainable variables, with the dormant cooldown's
    (:attr:`value_state`, :mod:`hyperstep.control.value_forms`); controllers add theirs
    with :meth:`add_state`. ``value`` reads them, so a traced training step sees every change
    without retracing.

    A hyperparameter is a Keras layer: assigned as an attribute of a layer or model, it is
    saved and restored with it (``.keras``, ``save_weights``, ``tf.train.Checkpoint``; the
    details, and what a ``.keras`` file does to a shared clock, are in docs/backends.md,
    "Saving").

    An ``epoch`` in the schedule is the clock's epoch (:meth:`hyperstep.Clock.epoch_at`):
    fit's epoch index inside ``model.fit``, ``floor(step / steps_per_epoch)`` outside it.
    :attr:`schedule` shows the pure formula (for plots and ``sample``).

    One created without a clock needs nothing: in a model, it reads the optimizer's clock
    from the start of ``fit``.

    Args:
        value: A number, a hyperstep schedule, a Keras ``LearningRateSchedule`` or an
            expression string such as ``"0.1 * 0.5 ** (step / 100)"``.
        clock: The :class:`~hyperstep.Clock` whose step drives the schedule. ``None``
            creates a private clock, which the model's optimizer's clock replaces when
            ``model.fit`` starts (for a hyperparameter read in the model; elsewhere advance
            it with ``hp.clock.advance()``).
        name: Name of the hyperparameter (and of its layer).

    Example:
        >>> clock = Clock()
        >>> beta = Hyperparameter("min(step / 10, 1.0)", clock=clock, name="kl_beta")
        >>> for _ in range(5):
        ...     _ = clock.advance()
        >>> round(float(beta.value), 4)
        0.5
        >>> _ = beta.scale.assign(0.5)
        >>> round(float(beta.value), 4)
        0.25
        >>> beta.set(0.9)
        >>> round(float(beta.value), 4), bool(beta.is_set)
        (0.9, True)
        >>> beta.clear()
        >>> [round(float(v), 4) for v in beta.at([0, 10, 20])]
        [0.0, 0.5, 0.5]
    """

    def __init__(
        self,
        value: ScheduleLike,
        clock: Clock | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        if clock is not None and not isinstance(clock, Clock):
            raise InvalidTypeError(
                f"`Hyperparameter(clock=...)` must be an `hs.Clock` or None. "
                f"{received('clock', clock)}"
            )
        self._raw_schedule: Schedule = as_schedule(value, name="value")
        self._uses_epoch = uses_epoch(self._raw_schedule)
        self._uses_total = uses_total(self._raw_schedule)
        self._bound_schedule: Schedule | None = None
        self._bound_steps: int | None = None
        self._clocked_schedule: tuple[Schedule, Clock, Schedule] | None = None
        #: created without a clock: in a model, the optimizer's clock replaces its own when
        #: ``fit`` starts (unless an optimizer advances its own)
        self.follows_optimizer = clock is None
        self.clock = clock if clock is not None else Clock(name=f"{self.name}_clock")
        self.scale = self._new_state("scale", 1.0, "float32")
        self.override = self._new_state("override", math.nan, "float32")
        # a dormant cooldown, made before any step is traced (hyperstep.control.value_forms)
        self.cooldown_start = self._new_state(value_forms.START, -1, "int64")
        self.cooldown_form = self._new_state(
            value_forms.FORM, value_forms.form_of(1, 0.0, "linear"), "float32", shape=(3,)
        )
        self._state: dict[str, Any] = {}
        self._pending: dict[str, Any] = {}
        self._table: tuple[Schedule, int, list[float], tuple[Any, ...] | None] | None = None
        self._relative: tuple[Schedule | None, bool] = (None, False)
        #: the :class:`hyperstep.Cooldown` that assigns the cooldown state (one at most)
        self._cooldown: Any = None
        #: a Remote's table of a replaced schedule's values (:meth:`arm`)
        self._armed: tuple[Any, Any] | None = None
        self.built = True
        follow_fit(fit_began, epoch_began)  # fit's epochs reach the clocks (registered once)

    # ---- the schedule -------------------------------------------------------------------
    @property
    def schedule(self) -> Schedule:
        """The schedule, with ``epoch`` bound to the clock's ``steps_per_epoch`` if known.

        Assigning one (a hyperstep or Keras schedule, a number or an expression string)
        replaces it; ``scale`` and the override stay. A traced step (``tf.function``,
        ``jax.jit``, ``torch.compile``) keeps the schedule it was traced with until it is
        traced again.
        """
        steps = self.clock.steps_per_epoch
        if not self._uses_epoch or steps is None:
            return self._raw_schedule
        if self._bound_schedule is None or self._bound_steps != steps:
            self._bound_schedule = bind_epochs(self._raw_schedule, steps)
            self._bound_steps = steps  # a re-linked clock may count other epochs
        return self._bound_schedule

    @schedule.setter
    def schedule(self, value: ScheduleLike) -> None:
        self._raw_schedule = as_schedule(value, name="schedule")
        self._uses_epoch = uses_epoch(self._raw_schedule)
        self._uses_total = uses_total(self._raw_schedule)
        self._bound_schedule = self._bound_steps = self._table = None

    # ---- values -------------------------------------------------------------------------
    @property
    def value(self) -> Any:
        """The effective value at the clock's current step (a float32 scalar tensor)."""
        with self._held():  # JAX fit holding the state: the step read there
            return self.at(self.clock.step.value)

    def at(self, step: Any) -> Any:
        """Return the effective value at ``step`` (a number or an array of steps).

        ``override if is_set else schedule(step) * scale``, with the current ``scale`` and
        override; reads state, changes nothing.

        Raises:
            FrozenValueError: On JAX, if read inside ``jax.jit`` while its variables (the
                clock's step, ``scale``, ``override``) are not in the stateless state being
                traced: the compiled function would keep their values at tracing time.
        """
        if step is None or isinstance(step, (str, bytes, bool, dict)):
            raise InvalidTypeError(
                f"`Hyperparameter.at(step=...)` takes a number, an array or a tensor of steps. "
                f"{received('step', step)}"
            )
        held = held_state(self.step_variables)  # JAX fit holding the state: read it there
        if held is not None:
            with held:
                return self.at(step)
        self._check_mapped()  # JAX only (nothing to check elsewhere)
        if self._armed is not None or not value_forms.dormant(self.cooldown_start):
            return value_forms.at(self._evaluated, step)  # armed, started, or traced
        # eager torch: 2-3 torch calls (each keras.ops call costs ~15 us of Python there)
        value = fast_value(self._clocked, step, self.scale, self.override)
        return value if value is not None else value_forms.at(self._evaluated, step)

    def base_at(self, step: Any) -> Any:
        """``schedule(step)``, or the cooldown from its start step if one was started: the
        value ``scale`` multiplies (see :class:`hyperstep.Cooldown`)."""
        state = self._evaluated
        return value_forms.cooled(state, state.schedule(step), step)

    def exact_at(self, step: Any) -> Any:
        """Like :meth:`at` for a scalar step, in float64, with constants kept exact
        (:func:`hyperstep.control.value_forms.exact_at`)."""
        return value_forms.exact_at(self._evaluated, step)

    def host_float(self, step: int) -> float | None:
        """The effective value at integer ``step`` as a Python float, computed on the host
        (eager torch: eagerly, outside ``keras.StatelessScope``), :meth:`at`'s number.

        :func:`~hyperstep.control.value_forms.host_value` of the state read as numbers and
        of the schedule looked up in a table of its values for 1,024 steps from ``step``
        (:func:`~hyperstep.control.value_forms.host_values`, refilled when the step leaves
        it). ``None`` where the general path is needed: a started cooldown, an armed table,
        a wrapped Keras schedule or one naming another hyperparameter.
        """
        override = float(raw(self.override))
        if override == override:  # not nan: an override is set
            return override
        if int(raw(self.cooldown_start)) >= 0 or self._armed is not None:
            return None
        schedule = self._clocked
        if self._relative[0] is not schedule:
            self._relative = (schedule, bool(references(schedule)))
        if self._relative[1]:  # "10 * learning_rate": reads another's state
            return None
        if isinstance(schedule, Constant):
            base = float(schedule.value_)
        else:
            table = self._table
            epochs = self._epoch_key()  # the table holds one placement of fit's epochs
            if (
                table is None
                or table[0] is not schedule
                or table[3] != epochs
                or not 0 <= step - table[1] < _TABLE_STEPS
            ):
                steps = np.arange(step, step + _TABLE_STEPS, dtype="float32")
                values = host_values(schedule, steps)
                if values is None:
                    return None
                table = self._table = (schedule, step, values.tolist(), epochs)
            base = table[2][step - table[1]]
        return host_value(base, float(raw(self.scale)))

    def override_at(self, step: Any) -> Any:
        """The override the value takes at ``step`` (nan: none), read once: ``override``,
        or where a :class:`hyperstep.Remote` armed this hyperparameter (:meth:`arm`) and
        ``override`` is nan, the entry of its table for ``step``."""
        return value_forms.override_at(self._evaluated, step)

    @property
    def value_state(self) -> ValueState:
        """The state the value reads besides the step, one
        :class:`~hyperstep.control.value_forms.ValueState`: the schedule as given, ``scale``,
        ``override``, the cooldown's variables and, once armed (:meth:`arm`), the table's."""
        return ValueState(self._raw_schedule, *self._step_state(), *(self._armed or ()))

    @property
    def cooldown(self) -> Any:
        """The :class:`hyperstep.Cooldown` that writes this hyperparameter's cooldown state,
        or ``None`` before one is made (the state may still hold a restored cooldown)."""
        return self._cooldown

    @property
    def _evaluated(self) -> ValueState:
        """:attr:`value_state` with the schedule evaluated (:attr:`_clocked`)."""
        return ValueState(self._clocked, *self._step_state(), *(self._armed or ()))

    @property
    def _clocked(self) -> Schedule:
        """The schedule this hyperparameter evaluates: each unbound ``epoch`` read from the
        clock (:meth:`hyperstep.Clock.epoch_at`: fit's epoch inside ``fit``), and ``total``
        from ``clock.total``."""
        if not self._uses_epoch and not self._uses_total:
            return self._raw_schedule
        found = self._clocked_schedule
        if found is None or found[0] is not self._raw_schedule or found[1] is not self.clock:
            found = (self._raw_schedule, self.clock, read_clock(self._raw_schedule, self.clock))
            self._clocked_schedule = found
            if self._uses_total:  # each length its word takes, here and at `clock.total = n`
                self.check_total(self.clock.total)
                self.clock.total_readers.add(self)
        return found[2]

    def _epoch_key(self) -> tuple[Any, ...] | None:
        """Where fit's current epoch sits on the clock, as Python numbers (host tables)."""
        if not self._uses_epoch and not self._uses_total:
            return None
        clock = self.clock
        return (
            clock.steps_per_epoch,
            clock.follows_fit,
            *(int(raw(v)) for v in [*clock.epoch_variables, clock.total_steps]),  # eager torch
        )

    def _check_mapped(self) -> None:
        unmapped = unmapped_in_jit(self.step_variables)
        if not unmapped:
            return
        names = ", ".join(v.path for v in unmapped)
        raise FrozenValueError(
            f"Hyperparameter {self.name!r} is read inside `jax.jit`, but its variables "
            f"({names}) are not in the stateless state being traced: the compiled step "
            "would keep the values they had when it was traced. Read it where Keras maps "
            "them: in a layer's `call` under `model.stateless_call(trainable, non_trainable, "
            "...)` (assign the hyperparameter to the layer in `__init__`; its variables are "
            "then in `model.non_trainable_variables`), inside an `hs.scheduled` optimizer's "
            "`stateless_apply`, or within `keras.StatelessScope(state_mapping=list(zip("
            "variables, values)))` where `variables` includes `hp.variables`. Or read "
            "`float(hp.value)` outside the jitted function and pass it in as an argument."
        )

    def arm(self, steps: int) -> tuple[Any, Any]:
        """Give the value a table of ``steps`` overrides, one per step from a start step
        (:func:`hyperstep.control.value_forms.override_at`), and return ``(table, start)``;
        the ones made before if they hold at least ``steps``. :class:`hyperstep.Remote` arms
        a hyperparameter before ``fit(steps_per_execution=k)`` traces its step and writes a
        replaced schedule's next ``k`` values there, so the step is not traced again. A step
        traced before the call does not read the table; the variables are not saved."""
        if self._armed is not None and int(self._armed[0].shape[0]) >= steps:
            return self._armed
        with strategy_scope(self.scale):  # nan entries, from no step (start -1)
            self._armed = (
                self._weight(value_forms.TABLE, math.nan, "float32", (int(steps),)),
                self._weight(value_forms.TABLE_START, -1, "int64"),
            )
        return self._armed

    @property
    def is_set(self) -> Any:
        """Whether an override is set (a bool tensor): ``not isnan(override)``."""
        return ops.logical_not(ops.isnan(self.override.value))

    def set(self, value: Any) -> None:
        """Override the schedule: the effective value becomes ``value`` until :meth:`clear`.

        ``value`` may be a finite number or a tensor (inside ``tf.function``); nothing
        retraces. A tensor holding nan clears the override (the unset state is nan).
        """
        if isinstance(value, (bool, int, float)) or not hasattr(value, "dtype"):
            value = check_number(f"{self.name}.set", "value", value)
        write_through(self.override, ops.cast(value, "float32"))

    def assign(self, value: Any) -> None:
        """Make the current value ``value`` and keep the schedule running.

        ``scale <- scale * value / current`` (the ratio rounded to float32 once), so the
        schedule goes on from ``value`` with its own shape; while an override is set, the
        override becomes ``value``. This is what assigning a number to an ``hs.scheduled``
        optimizer's attribute does (``opt.learning_rate = 1e-4``, as Keras's
        ``ReduceLROnPlateau`` and ``LearningRateScheduler`` do): Keras's reductions then
        multiply the schedule instead of freezing it. :meth:`set` instead fixes the value
        until :meth:`clear`.

        Raises:
            ValueError: Eagerly, if the schedule's value is 0 or not finite at this step
                (a schedule cannot be rescaled from 0: use :meth:`set`). A constant schedule
                then takes ``value`` as its override. In a traced step such a value takes
                ``value`` as its override.

        Example:
            >>> hp = Hyperparameter("0.1 * (1 - step / 100)", name="lr")
            >>> hp.assign(0.05)
            >>> round(float(hp.value), 6), bool(hp.is_set)
            (0.05, False)
            >>> _ = hp.clock.step.assign(50)
            >>> round(float(hp.value), 6)  # half way down the schedule, from 0.05
            0.025
        """
        if isinstance(value, (bool, int, float)) or not hasattr(value, "dtype"):
            value = check_number(f"{self.name}.assign", "value", value)
        step = self.clock.step.value
        if concrete(step) and concrete(value):
            self._assign_now(float(ops.convert_to_numpy(value)), step)
            return
        override = self.override.value
        current = ops.multiply(ops.cast(self.base_at(step), "float32"), self.scale.value)
        ratio = ops.cast(ops.cast(value, "float64") / ops.cast(current, "float64"), "float32")
        rescale = ops.logical_and(
            ops.isnan(override),
            ops.logical_and(ops.isfinite(current), ops.not_equal(current, 0.0)),
        )
        self.scale.assign(ops.where(rescale, self.scale.value * ratio, self.scale.value))
        self.override.assign(ops.where(rescale, override, ops.cast(value, "float32")))

    def _assign_now(self, value: float, step: Any) -> None:
        with self._held():  # reads only: the write below reaches a JAX fit in progress
            override = float(ops.convert_to_numpy(self.override))
            base = np.float32(ops.convert_to_numpy(self.base_at(step)))
            scale = np.float32(ops.convert_to_numpy(self.scale))
        if not math.isnan(override):
            self.set(value)
            return
        current = np.float32(base * scale)
        if not (np.isfinite(current) and current != 0):
            if isinstance(self.schedule, Constant):
                self.set(value)
                return
            raise InvalidArgumentError(
                f"Hyperparameter {self.name!r} cannot be rescaled to {value}: its value at "
                f"step {int(ops.convert_to_numpy(step))} is {float(current)}. Assigning a number "
                "to it (`opt.<name> = x`) multiplies its schedule; to fix the value instead, "
                f"call `Hyperparameter.set` (`opt.hyperparameters[{self.name!r}].set(x)`). "
                f"{received('value', value)}"
            )
        write_through(self.scale, _exact_scale(base, value))

    def clear(self) -> None:
        """Remove the override: the value follows ``schedule(step) * scale`` again."""
        write_through(self.override, math.nan)

    def _held(self) -> Any:
        """Where a JAX ``fit`` holds the state, a scope reading it there; else nothing."""
        held = held_state(self.step_variables)
        return held if held is not None else contextlib.nullcontext()

    def read(self) -> dict[str, float]:
        """Return Python floats ``{"value", "schedule", "scale", "override"}`` for logging.

        ``override`` is nan when no override is set. Call it eagerly (not in a graph).
        """
        with self._held():
            step = self.clock.step.value
            return {
                "value": float(self.at(step)),
                "schedule": float(self.base_at(step)),
                "scale": float(ops.convert_to_numpy(self.scale)),  # float() fails on a mirrored one
                "override": float(ops.convert_to_numpy(self.override)),
            }

    # ---- state --------------------------------------------------------------------------
    def add_state(self, name: str, initial: float, dtype: str = "float32") -> Any:
        """Create a non-trainable scalar state variable saved with this hyperparameter.

        Controllers keep ``best``, ``wait``, ``cooldown`` in such variables. If a saved
        value for ``name`` was loaded before this call, the variable starts from it. Under
        ``tf.distribute`` it is created in the scope of the strategy that owns ``scale`` when
        none is entered, so it is distributed like the hyperparameter's own state.

        Raises:
            ValueError: If ``name`` is already used by this hyperparameter.
        """
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidArgumentError(
                f"`{self.name}.add_state(name=...)` must be an identifier such as "
                f"'plateau_best'. {received('name', name)}"
            )
        if name in _BUILTIN_STATE or name in self._state:
            raise InvalidArgumentError(
                f"`{self.name}.add_state(name=...)` is already used; state names must be "
                f"unique per hyperparameter. Taken: {sorted([*_BUILTIN_STATE, *self._state])}. "
                f"{received('name', name)}"
            )
        with strategy_scope(self.scale):
            variable = self._new_state(name, initial, dtype)
        if name in self._pending:
            variable.assign(self._pending.pop(name))
        self._state[name] = variable
        return variable

    def _new_state(self, name: str, initial: Any, dtype: str, shape: tuple[int, ...] = ()) -> Any:
        variable = self._weight(name, initial, dtype, shape)
        # An attribute per variable names it in tf.train.Checkpoint (restore on creation).
        object.__setattr__(self, f"state_{name}", variable)
        track(self, f"state_{name}", variable)
        return variable

    def _weight(self, name: str, initial: Any, dtype: str, shape: tuple[int, ...] = ()) -> Any:
        """A non-trainable variable ``initial`` (saved only by :meth:`_new_state`'s)."""
        initializer = keras.initializers.Constant(initial)
        if isinstance(initial, list):  # the cooldown's form
            initializer = copy_of(initial)
        return state_variable(self, name, initializer, dtype, shape)

    @property
    def state(self) -> dict[str, Any]:
        """The state variables added with :meth:`add_state`, by name."""
        return dict(self._state)

    @property
    def variables(self) -> list[Any]:
        """Every variable ``value`` reads: the clock's ``step``, then ``scale``,
        ``override``, then added state.

        Keras collects ``model.variables`` (and ``non_trainable_variables``) from these, so a
        hyperparameter assigned to a model carries its clock's step with the model's state:
        JAX's stateless ``fit`` and ``model.stateless_call`` then read the step from that
        state (see :meth:`hyperstep.Clock.stateless_copy` for a step shared with an
        optimizer). Only ``scale``, ``override`` and added state are saved with
        the hyperparameter; the clock saves its step itself.
        """
        return [*self._clock_variables(), *self._own_variables()]

    def _clock_variables(self) -> list[Any]:
        """The clock's ``step``, its epoch's variables when the schedule reads ``epoch``, and
        ``total_steps`` when it reads ``total``."""
        length = [self.clock.total_steps] if self._uses_total else []
        if self._uses_epoch:
            return [self.clock.step, *self.clock.epoch_variables, *length]
        return [self.clock.step, *length]

    def _own_variables(self) -> list[Any]:
        return [*self._step_state(), *self._state.values()]

    def _step_state(self) -> list[Any]:
        return [self.scale, self.override, self.cooldown_start, self.cooldown_form]

    @property
    def step_variables(self) -> list[Any]:
        """The variables a training step reads for ``value``: the clock's, ``scale``,
        ``override`` and the cooldown's (not a controller's state, which only its callback
        reads). Every one exists from the hyperparameter's creation; a JAX optimizer carries
        exactly these through its jitted step (and the table, once armed: :meth:`arm`)."""
        return [*self._clock_variables(), *self._step_state(), *(self._armed or ())]

    def save_own_variables(self, store: Any) -> None:
        for variable in self._own_variables():
            store[variable.name] = variable

    def load_own_variables(self, store: Any) -> None:
        self._load_named({key: store[key] for key in store.keys()})

    def _load_named(self, values: dict[str, Any]) -> None:
        """Assign saved state by name; a state not created yet (a controller built after the
        load) waits for :meth:`add_state` (:meth:`unread_state` lists what still waits)."""
        by_name = {v.name: v for v in self._own_variables()}
        for key, value in values.items():
            if key in by_name:
                by_name[key].assign(value)
            else:  # state a controller adds later (see add_state)
                self._pending[key] = value[()] if hasattr(value, "shape") else value

    def unread_state(self) -> list[str]:
        """The names of saved state that was loaded but that no object has created yet
        (a controller's, such as ``plateau_best``, until that controller is built again)."""
        return sorted(self._pending)

    # ---- config -------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config["value"] = keras.saving.serialize_keras_object(self._raw_schedule)
        # created without a clock: loaded without one, to follow the optimizer's again
        follows = self.follows_optimizer
        config["clock"] = None if follows else keras.saving.serialize_keras_object(self.clock)
        return config

    @classmethod
    @naming_loaded_file()
    def from_config(cls, config: dict[str, Any]) -> Hyperparameter:
        config = dict(config)
        config["value"] = keras.saving.deserialize_keras_object(config["value"])
        if config.get("clock") is not None:
            config["clock"] = keras.saving.deserialize_keras_object(config["clock"])
        return cls(**config)

    def __repr__(self) -> str:
        return f"Hyperparameter({self._raw_schedule!r}, name={self.name!r})"


def copy_of(value: Any) -> Any:
    """A Keras initializer that returns a copy of ``value`` (read when the variable is created,
    or lifted out of a ``tf.function`` that creates it)."""

    def initial(shape: Any, dtype: Any = None) -> Any:
        return ops.copy(ops.cast(ops.convert_to_tensor(value), dtype))

    return initial


def track(owner: Any, name: str, value: Any) -> None:
    """Name ``value`` as a checkpoint dependency of ``owner`` (TensorFlow only)."""
    track_trackable = getattr(owner, "_track_trackable", None)
    if track_trackable is not None:
        track_trackable(value, name=name, overwrite=True)


def _exact_scale(base: np.float32, value: float) -> np.float32:
    """The float32 ``scale`` nearest ``value / base`` for which ``float32(base * scale)`` is
    ``float32(value)`` exactly, as Keras reads back an assigned learning rate (one exists
    but for rare ``base``; then the nearest one, at most an ulp off)."""
    with np.errstate(all="ignore"):
        target = np.float32(value)
        scale = np.float32(float(target) / float(base))
        up, down = np.nextafter(scale, np.float32(np.inf)), np.nextafter(scale, np.float32(0))
        two = (np.nextafter(up, np.float32(np.inf)), np.nextafter(down, np.float32(0)))
        for candidate in (scale, up, down, *two):
            if np.float32(base * candidate) == target:
                return np.float32(candidate)
        return scale


def controlled_hyperparameter(
    target: Any, owner: str = "ReduceOnPlateau(target=...)"
) -> Hyperparameter:
    """The hyperparameter a controller acts on: ``target`` itself, or the ``learning_rate``
    of the one hyperstep optimizer ``target`` is or wraps; else an error naming ``owner``."""
    inside = hyperstep_optimizers(target)
    if len(inside) > 1:
        raise InvalidTypeError(
            f"`{owner}` names one hyperparameter, but {type(target).__name__} holds "
            f"{len(inside)} hyperstep optimizers ({[o.name for o in inside]}): pass one of "
            "them (`multi.optimizers[i]`) or its `hyperparameters['learning_rate']`. "
            f"Received: target of type {type(target).__name__}"
        )
    target = hyperstep_optimizer(target)  # through LossScaleOptimizer, SkipNonFinite, ...
    hyperparameters = getattr(target, "hyperparameters", None)
    if isinstance(hyperparameters, dict) and "learning_rate" in hyperparameters:
        target = hyperparameters["learning_rate"]
    if not isinstance(target, Hyperparameter):
        raise InvalidTypeError(
            f"`{owner}` must be a hs.Hyperparameter such as "
            "opt.hyperparameters['learning_rate'] (or a hs.scheduled optimizer). "
            f"Received: target of type {type(target).__name__}"
        )
    return target
