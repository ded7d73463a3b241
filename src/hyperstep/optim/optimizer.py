"""StepOptimizer: a Keras 3 optimizer built from an update rule, groups and one clock.

At each update, for every variable ``w`` with gradient ``g`` in group ``G``::

    rule.update(w, g, slots(w), hp = {name: G's hyperparameter .value}, step = clock.step)

then ``clock.advance()``. The values are computed once per update, before any variable's,
by the code ``hs.scheduled`` runs too (:func:`hyperstep.optim.core.apply_update`,
:class:`hyperstep.optim.core.Update`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import keras
from keras import ops

from hyperstep import backends
from hyperstep.backends import native_variable
from hyperstep.backends.internals import naming_loaded_file
from hyperstep.clock import Clock
from hyperstep.control.hyperparameter import Hyperparameter, copy_of
from hyperstep.control.named_state import SavedByName
from hyperstep.control.relative import resolve
from hyperstep.errors import InvalidArgumentError, received
from hyperstep.iteration import claim
from hyperstep.optim import rules as _rules
from hyperstep.optim import schedule_free  # noqa: F401  (registers its rules for loading)
from hyperstep.optim.averaging import config_of as average_config
from hyperstep.optim.averaging import restore as restore_average
from hyperstep.optim.core import (
    StatelessValues,
    Update,
    apply_update,
    assign_attribute,
    bind_groups,
    check_arguments,
    from_hyperparameters_config,
    hyperparameters_config,
    live_value,
    value_and_complement,
)
from hyperstep.optim.groups import Group, assign_groups
from hyperstep.optim.rules import Rule, Values, deserialize_rule, get_rule
from hyperstep.schedules.checks import check_flag

#: Keras optimizer arguments StepOptimizer passes through (``weight_decay`` is a rule's).
KERAS_ARGUMENTS = (
    "clipnorm",
    "clipvalue",
    "global_clipnorm",
    "use_ema",
    "ema_momentum",
    "ema_overwrite_frequency",
    "loss_scale_factor",
    "gradient_accumulation_steps",
)


def check_names(rule: Rule, given: Mapping[str, Any]) -> None:
    """Raise for a name in ``given`` that ``rule`` does not declare (naming the valid ones)."""
    unknown = [key for key in given if key not in rule.hyperparameters]
    if unknown:
        shown = ", ".join(received(key, given[key]).removeprefix("Received: ") for key in unknown)
        raise InvalidArgumentError(
            f"`StepOptimizer` got hyperparameters that rule {type(rule).__name__} does not "
            f"declare: {unknown}. Valid ones: {list(rule.hyperparameters)} (and the Keras "
            f"arguments {list(KERAS_ARGUMENTS)}). Received: {shown}"
        )


def pick_clock(clock: Any, tables: list[Mapping[str, Any]], name: str) -> Any:
    """``clock``, else the clock of the first Hyperparameter in ``tables``, else a new
    :class:`~hyperstep.Clock` named ``name``."""
    if clock is not None:
        return clock
    for table in tables:
        for value in table.values():
            if isinstance(value, Hyperparameter):
                return value.clock
    return Clock(name=name)


#: names a rule's hyperparameters may not take (the optimizer's own arguments)
_RESERVED = {"rule", "groups", "clock", "advance", "name", *KERAS_ARGUMENTS}


__all__ = ["StepOptimizer"]


def _no_learning_rate() -> float:  # the base class wants one; StepOptimizer overrides it
    return 0.0


@keras.saving.register_keras_serializable(package="hyperstep")
class StepOptimizer(SavedByName, StatelessValues, keras.optimizers.Optimizer):
    """A Keras optimizer whose update is a :class:`hyperstep.rules.Rule`, per group.

    Every hyperparameter the rule declares is a :class:`hyperstep.Hyperparameter` on the
    optimizer's clock (the rule's default when not given): a number, a schedule, an
    expression string or a Hyperparameter. ``opt.hyperparameters`` holds them all by name;
    a group's own ones are there as ``"group/name"`` and in
    ``opt.groups["group"].hyperparameters["name"]``. Rules see ``step``, the number of
    updates already applied (the first update sees 0); after each update the optimizer
    advances its clock once.

    Its state is saved with it (docs/backends.md, "Saving"). ``learning_rate`` reads the
    default group's value; assigning it works as on ``hs.scheduled`` (docs/runtime.md,
    "Assigning an attribute").

    Args:
        rule: A :class:`~hyperstep.rules.Rule` (instance, subclass or name: ``"adam"``).
        groups: :class:`~hyperstep.Group` objects; unmatched variables use the
            optimizer's own hyperparameters.
        clock: The :class:`hyperstep.Clock` to read and advance; by default the clock of
            a Hyperparameter passed in, else a new one.
        advance: Whether this optimizer advances the clock after each update. ``None``:
            yes unless another optimizer already does (one advance per training step; see
            :class:`hyperstep.Clock` for the GAN pattern).
        name: The optimizer's name.
        fused: Whether a rule takes the backend's one-pass kernel where it has one
            (:class:`~hyperstep.rules.AdamRule` and :class:`~hyperstep.rules.AdamWRule`:
            PyTorch's fused Adam; :class:`~hyperstep.rules.ScheduleFreeAdamWRule`:
            TensorFlow's ``ResourceApplyAdam`` outside XLA), equal to the rule to float32
            rounding (docs/backends.md, "Fused updates"). ``None`` (default): as
            ``Rule.fuses_by_default`` says (``True`` for ``ScheduleFreeAdamWRule``).
        **hyperparameters: Values of the rule's hyperparameters, plus Keras's
            ``clipnorm``, ``clipvalue``, ``global_clipnorm``, ``use_ema``,
            ``ema_momentum``, ``ema_overwrite_frequency``, ``loss_scale_factor`` and
            ``gradient_accumulation_steps`` (then the clock counts applied updates).

    Raises:
        ValueError: For a hyperparameter the rule does not declare (listing the valid
            ones), or a Hyperparameter on another clock.
        TypeError: For a rule or group of the wrong type.

    Example:
        Seed 000's ``w -= (step / 1000 + 0.01) * grad`` as a three-line rule:

        >>> import hyperstep as hs, keras
        >>> class StepScaled(hs.rules.Rule):
        ...     def update(self, variable, gradient, slots, hp, step):
        ...         return variable - (step / 1000 + 0.01) * gradient
        >>> opt = hs.StepOptimizer(StepScaled())
        >>> w = keras.Variable([1.0, 2.0])
        >>> for _ in range(3):
        ...     opt.apply([keras.ops.ones(2)], [w])
        >>> [round(float(x), 4) for x in w.numpy()]  # 1 - 0.01 - 0.011 - 0.012
        [0.967, 1.967]
        >>> int(opt.clock.step)
        3
    """

    def __init__(
        self,
        rule: Any,
        *,
        groups: Iterable[Group] = (),
        clock: Any = None,
        advance: bool | None = None,
        name: str | None = None,
        fused: bool | None = None,
        **hyperparameters: Any,
    ) -> None:
        if fused is not None:
            check_flag("StepOptimizer", "fused", fused)
        keras_arguments = {
            k: hyperparameters.pop(k) for k in KERAS_ARGUMENTS if k in hyperparameters
        }
        rule = get_rule(rule)
        groups = list(groups)
        reserved = sorted(_RESERVED & set(rule.hyperparameters))
        if reserved:
            raise InvalidArgumentError(
                f"Rule {type(rule).__name__} declares hyperparameters named like optimizer "
                f"arguments: {reserved}. Rename them in `hyperparameters`."
            )
        check_names(rule, hyperparameters)
        check_arguments("StepOptimizer", clock, advance, groups)
        super().__init__(learning_rate=_no_learning_rate, name=name, **keras_arguments)
        self.rule = rule
        self.fused = fused
        # whether to take the rule's kernels (`fused`, or the rule's default for None)
        self._fuses = rule.fuses_by_default if fused is None else fused
        self.clock = pick_clock(
            clock,
            [hyperparameters, *(g.hyperparameters for g in groups if isinstance(g, Group))],
            f"{self.name}_clock",
        )
        # expressions may name the rule's other hyperparameters ("0.1 * learning_rate")
        own = resolve(
            {
                key: hyperparameters.get(key, default)
                for key, default in rule.hyperparameters.items()
            },
            self._hyperparameter,
            "StepOptimizer",
        )
        bound = bind_groups(groups, own, self._hyperparameter, "StepOptimizer")
        self.groups: dict[str, Group] = {group.name: group for group in bound}
        self.hyperparameters: dict[str, Any] = dict(own)
        tables = [own]
        for group in bound:
            self.hyperparameters.update(
                {f"{group.name}/{key}": hp for key, hp in group.hyperparameters.items()}
            )
            tables.append({**own, **group.hyperparameters})
        self._tables = tables
        self.__dict__["_hs_update"] = Update()  # untracked: the update in progress
        for variable in [
            self.clock.step,
            *(v for hp in self.hyperparameters.values() for v in hp.step_variables),
        ]:
            if not self._tracker.is_in_store("variables", variable):
                self._track_variable(variable)
        # last: a failed construction claims nothing
        self.advance = claim(self.clock, self, advance)

    # ---- saving (hyperstep.control.named_state.SavedByName) ---------------------------
    _hs_walked_by_name = frozenset({"hyperparameters", "groups", "_tables"})

    def _hs_named(self) -> dict[str, Any]:
        return self.hyperparameters

    # ---- construction helpers ---------------------------------------------------------
    def _hyperparameter(self, name: str, value: Any) -> Any:
        if isinstance(value, Hyperparameter):
            if value.clock is not self.clock:
                raise InvalidArgumentError(
                    f"The Hyperparameter given for `{name}` runs on another clock than the "
                    "optimizer's. Create it with `clock=optimizer_clock`, or pass its clock "
                    f"as `StepOptimizer(clock=...)`. {received(name, value)}"
                )
            return value
        return Hyperparameter(value, clock=self.clock, name=name.replace("/", "."))

    # ---- Keras optimizer lifecycle ------------------------------------------------------
    def build(self, variables: list[Any]) -> None:
        if self.built:
            return
        super().build(variables)
        owners = assign_groups(list(self.groups.values()), variables)
        names = list(self.groups)
        self._variable_group = [0 if g is None else 1 + names.index(g.name) for g in owners]
        slots = [key for key in self.rule.slots if key not in self.rule.copied_slots]
        created = self.add_optimizer_variables(variables, slots) if slots else ()
        self._slots = dict(zip(slots, created, strict=True))
        # the kernel's scratch buffers (TensorFlow's one-pass kernels: the module of fused
        # updates makes them): untracked (set in __dict__), so neither saved nor restored,
        # and a checkpoint is the same with and without `fused`
        scratch: dict[str, list[Any]] = {}
        if self._fuses and backends.adam_pass() is not None:
            kernels = backends.fused_updates()
            scratch = {
                key: [kernels.scratch_buffer(self, v, key) for v in variables]
                for key in self.rule.fused_slots
            }
        self.__dict__["_scratch"] = scratch
        # -- a rule's slots that start at the variable's value and scalar state (Rule) --
        for key in self.rule.copied_slots:
            self._slots[key] = [
                None
                if self._overwrite_variable_with_gradient(v)
                else self.add_variable_from_reference(v, key, initializer=copy_of(v))
                for v in variables
            ]
        for key, initial in self.rule.scalar_slots.items():
            self._slots[key] = [
                self.add_variable(
                    (), keras.initializers.Constant(initial), "float32", name=f"{v.name}_{key}"
                )
                for v in variables
            ]

    def apply(self, grads: Any, trainable_variables: Any = None) -> None:
        grads = list(grads)
        if not grads:
            return
        apply_update(
            self,
            self._hs_update,
            lambda: super(StepOptimizer, self).apply(grads, trainable_variables),
            advance=self.advance,
            host=False,
            values=self._hs_values,
        )

    def _hs_values(self, update: Update) -> dict[str, Any]:
        """The one dict of an update, built at its start: every hyperparameter (a group's
        as ``group/name``) at the update's step, as ``(value, 1 - value)``
        (:func:`~hyperstep.optim.core.value_and_complement`)."""
        return {key: value_and_complement(update, hp) for key, hp in self.hyperparameters.items()}

    def _backend_update_step(
        self, grads: Any, trainable_variables: Any, learning_rate: Any
    ) -> None:
        if self._fuses and self._fused_update(grads, trainable_variables):
            return
        # the values every update of this step reads, computed once and passed the way Keras
        # passes `learning_rate` (so tf.distribute hands them to each replica's update)
        update = self._hs_update
        # (fixed already when called from `apply`)
        with update.fixed(self.clock, host=False, values=self._hs_values):
            read, tables = update.values, []
            for group, table in zip([None, *self.groups], self._tables, strict=True):
                values, complements = {}, {}
                for key in table:  # a group's own entry if it sets the key, else the optimizer's
                    values[key], complement = read.get(f"{group}/{key}") or read[key]
                    if complement is not None:
                        complements[key] = complement
                tables.append((values, complements))
            step = update.step
        # the gradients wait for these scalars, so that no full-size op waits for one
        scalars = [t for values, _ in tables for t in values.values()]
        scalars += [t for _, complements in tables for t in complements.values()]
        grads = update.gate(scalars, grads)
        super()._backend_update_step(grads, trainable_variables, (step, tables))

    def _fused_update(self, grads: Any, variables: Any) -> bool:
        """``fused``: the Adam and AdamW rules through PyTorch's fused kernel, once per group
        (:func:`hyperstep.backends.torch.adam`); eagerly the values are Python numbers (the
        host table), under ``torch.compile`` float64 tensors
        (:meth:`~hyperstep.Hyperparameter.exact_at`: the same numbers, read back when the
        compiled step runs). ``False`` (nothing done) elsewhere: another rule or backend,
        or the clock not readable for free."""
        kernel = backends.multi_tensor_adam()
        rule = self.rule
        if kernel is None or type(rule) not in (_rules.AdamRule, _rules.AdamWRule):
            return False
        compiling = backends.compiling()
        step: Any = None if compiling else backends.host_int(self.clock.step)
        if (step is None and not compiling) or not kernel.applies(grads, variables):
            return False
        keys = (
            ("momentum", "velocity", "velocity_hat") if rule.amsgrad else ("momentum", "velocity")
        )
        members: dict[int, list[int]] = {}
        for variable in variables:
            index = self._get_variable_index(variable)
            members.setdefault(self._variable_group[index], []).append(index)
        position = {self._get_variable_index(v): i for i, v in enumerate(variables)}
        update = self._hs_update
        with update.fixed(self.clock, host=False):  # (fixed already when called from `apply`)
            if compiling:
                step = update.step
            exact: dict[int, Any] = {}  # a Hyperparameter several groups share, read once

            def read(hp: Any) -> Any:
                if not compiling:
                    found = hp.host_float(step)  # its host table, else read back
                    return float(hp.value) if found is None else found
                if id(hp) not in exact:
                    exact[id(hp)] = hp.exact_at(step)
                return exact[id(hp)]

            for group, indices in members.items():
                value = {key: read(hp) for key, hp in self._tables[group].items()}
                decay = value.get("weight_decay", 0.0)
                kernel.adam(
                    [grads[position[i]] for i in indices],
                    [variables[position[i]] for i in indices],
                    [[self._slots[key][i] for key in keys] for i in indices],
                    step=step + 1,
                    learning_rate=value["learning_rate"],
                    beta_1=value["beta_1"],
                    beta_2=value["beta_2"],
                    epsilon=value["epsilon"],
                    weight_decay=[decay] * len(indices),
                    amsgrad=rule.amsgrad,
                )
        return True

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> None:
        step, tables = learning_rate
        index = self._get_variable_index(variable)
        hp, complements = tables[self._variable_group[index]]
        dtype = keras.backend.standardize_dtype(variable.dtype)
        if dtype != "float32":
            hp = {key: ops.cast(value, dtype) for key, value in hp.items()}
            complements = {key: ops.cast(value, dtype) for key, value in complements.items()}
            step = ops.cast(step, dtype)
        gradient = ops.cast(gradient, dtype)
        slots = Values({key: native_variable(self._slots[key][index]) for key in self._slots})
        for key, buffers in self._scratch.items():
            slots[key] = buffers[index]
        result = self.rule.update(variable, gradient, slots, Values(hp, complements), step)
        if result is None:
            return
        new_slots: Mapping[str, Any] = {}
        if isinstance(result, tuple):
            result, new_slots = result
        for key, value in new_slots.items():
            if key not in self._slots:
                raise InvalidArgumentError(
                    f"Rule {type(self.rule).__name__} returned a value for slot {key!r}, which "
                    f"it does not declare; its slots are {list(self._slots)}."
                )
            self.assign(self._slots[key][index], value)
        if result is not None:
            self.assign(variable, result)

    # ---- learning_rate, as Keras callbacks see it ---------------------------------------
    def _get_current_learning_rate(self) -> Any:
        hp = self._tables[0].get("learning_rate") if hasattr(self, "_tables") else None
        if hp is None:
            return None
        return live_value(self, "learning_rate", hp.value, self.__dict__.setdefault("_hs_live", {}))

    @keras.optimizers.Optimizer.learning_rate.setter  # Keras's getter: the method above
    def learning_rate(self, value: Any) -> None:
        hp = self._tables[0].get("learning_rate") if hasattr(self, "_tables") else None
        if hp is None:
            raise InvalidArgumentError(
                f"Rule {type(self.rule).__name__} has no `learning_rate`; its hyperparameters "
                f"are {list(self.rule.hyperparameters)}."
            )
        assign_attribute(hp, "learning_rate", value)  # as hs.scheduled (hyperstep.optim.core)

    # ---- config -------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        """The shared format (:func:`hyperstep.optim.core.hyperparameters_config`), the rule,
        the name and Keras's arguments; each hyperparameter is also under its own name, as
        a Keras optimizer's config lists its hyperparameters."""
        own = self._tables[0]
        shared = hyperparameters_config(
            own,
            list(self.groups.values()),
            self._trainable_variables if self.built else None,
            clock=self.clock,
            advance=self.advance,
            fused=self.fused,
        )
        return {
            "name": self.name,
            "rule": keras.saving.serialize_keras_object(self.rule),
            **{key: getattr(self, key) for key in KERAS_ARGUMENTS},
            **shared["hyperparameters"],
            **shared,
            **average_config(self),  # an hs.SWA/hs.EMA average, saved with it
        }

    @classmethod
    @naming_loaded_file()
    def from_config(cls, config: Mapping[str, Any], custom_objects: Any = None) -> StepOptimizer:
        config = dict(config)
        rule = deserialize_rule(config.pop("rule"), custom_objects)
        average = config.pop("average", None)
        shared = from_hyperparameters_config(config, custom_objects)
        # (the values under their names too, for readers: `hyperparameters` has them)
        config = {k: v for k, v in config.items() if k in ("name", *KERAS_ARGUMENTS)}
        values = shared.pop("hyperparameters")
        return restore_average(cls(rule, **shared, **config, **values), average)
