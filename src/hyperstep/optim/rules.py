"""Update rules: the equation of one optimizer step for one variable.

A rule declares the hyperparameters it reads (with their defaults) and the slots it keeps
per variable, and computes the new value of one variable from its gradient, its slots, the
current hyperparameter values and ``step``, the number of updates already applied (the
first update sees ``step = 0``). :class:`hyperstep.StepOptimizer` turns a rule into a
Keras optimizer; every hyperparameter becomes a :class:`hyperstep.Hyperparameter` on the
optimizer's clock, so it can be a number, a schedule or an expression, per group.

``update`` returns one of:

- the new value of the variable (a tensor): the optimizer assigns it;
- ``(new_value, {"slot": new_slot_value, ...})``: the optimizer assigns both;
- ``None``: the rule assigned everything itself with ``assign``, ``assign_add`` or
  ``assign_sub`` (the in-place form the built-in rules use to match Keras kernel for kernel).

Rules use ``keras.ops`` and no Python ``if`` on a tensor, so they run eagerly, inside
``tf.function`` and under XLA alike. ``hp`` and ``slots`` are read by attribute or by key
(``hp.learning_rate`` or ``hp["learning_rate"]``); hyperparameter values and ``step`` are
float32 scalar tensors.

Example:
    Seed 000's rule ``w -= (step / 1000 + 0.01) * grad``, with its coefficient a
    hyperparameter (so it can also be scheduled, overridden or scaled):

    >>> import hyperstep as hs
    >>> @hs.rules.register_rule
    ... class StepScaled(hs.rules.Rule):
    ...     hyperparameters = {"coefficient": 0.01}
    ...     def update(self, variable, gradient, slots, hp, step):
    ...         return variable - (step / 1000 + hp.coefficient) * gradient
    >>> StepScaled()
    StepScaled()
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar, overload

import keras
from keras import ops

from hyperstep.errors import (
    InvalidArgumentError,
    InvalidTypeError,
    NotRegisteredError,
    received,
)
from hyperstep.schedules.checks import check_flag

PACKAGE = "hyperstep"
R = TypeVar("R", bound=type)


class Values(dict):  # type: ignore[type-arg]
    """A dict whose entries are also attributes: ``hp.learning_rate == hp["learning_rate"]``.

    Args:
        values: The entries.
        complements: ``name -> 1 - value`` where the optimizer knows it more exactly than
            float32 arithmetic does (see :meth:`one_minus`).
    """

    def __init__(self, values: Mapping[str, Any], complements: Mapping[str, Any] | None = None):
        super().__init__(values)
        self._complements = dict(complements or {})

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(
                f"No entry {name!r}; the available ones are {sorted(self)}."
            ) from None

    def one_minus(self, name: str) -> Any:
        """Return ``1 - self[name]``, rounded once as Keras rounds ``1 - beta`` for a float.

        For a constant hyperparameter (not scaled or overridden) this is
        ``float32(1 - value)`` computed in double precision from the Python number, as Keras
        optimizers compute ``1 - self.beta_1``; otherwise it is ``1 - self[name]`` in float32.
        The two differ by one float32 rounding (``1 - float32(0.9)`` is ``0.100000024``),
        which over 100 Adam steps is a 1e-5 relative difference in the weights.

        Example:
            >>> hp = Values({"beta_1": 0.9})
            >>> round(float(hp.one_minus("beta_1")), 6)
            0.1
        """
        if name in self._complements:
            return self._complements[name]
        return 1 - self[name]


class Rule:
    """Base class of update rules: subclass it and write ``update`` like the equation.

    Class attributes:
        hyperparameters: Name -> default value of every hyperparameter the rule reads.
        slots: Names of the per-variable state the rule keeps (zeros at start, one
            variable of the parameter's shape and dtype each).
        copied_slots: The slots among ``slots`` that start at the variable's value.
        scalar_slots: Name -> initial value of per-variable float32 scalars, passed in
            ``slots`` too.
        averaged_slot: The slot that :func:`hyperstep.averaged_weights` swaps in.
        fused_slots: Full-size scratch buffers the one-pass kernel needs, created only
            where ``StepOptimizer`` fuses and the backend has the kernel (passed in
            ``slots`` then; not optimizer variables: nothing of them is saved).
        fuses_by_default: Whether ``StepOptimizer(fused=None)`` (the default) takes the
            one-pass kernel: for a rule whose kernel is faster and that promises no
            bitwise equality with a Keras optimizer.

    Constructor arguments of a rule are structural options (``nesterov``, ``amsgrad``),
    never hyperparameters: those are given to the optimizer or to a group. A rule with
    constructor arguments overrides ``get_config`` to return them.
    """

    hyperparameters: ClassVar[Mapping[str, float]] = {}
    slots: tuple[str, ...] = ()
    scalar_slots: ClassVar[Mapping[str, float]] = {}
    copied_slots: tuple[str, ...] = ()
    averaged_slot: ClassVar[str | None] = None
    fused_slots: ClassVar[tuple[str, ...]] = ()
    fuses_by_default: ClassVar[bool] = False

    def update(self, variable: Any, gradient: Any, slots: Values, hp: Values, step: Any) -> Any:
        """Return the new value of ``variable`` (see the module docstring for the forms).

        Args:
            variable: The variable before this update (read it, or assign to it).
            gradient: Its gradient, cast to the variable's dtype.
            slots: The rule's slot variables for this variable, by name.
            hp: The current hyperparameter values of the variable's group, by name.
            step: The number of updates already applied, a float32 scalar tensor.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement `update`.")

    def get_config(self) -> dict[str, Any]:
        """Return the constructor arguments (structural options) of this rule."""
        return {}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Rule:
        return cls(**config)

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self.get_config().items())
        return f"{type(self).__name__}({args})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.get_config() == other.get_config()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), tuple(sorted(self.get_config().items()))))


@overload
def register_rule(cls: R, *, package: str = ...) -> R: ...
@overload
def register_rule(cls: None = None, *, package: str = ...) -> Callable[[R], R]: ...
def register_rule(cls: Any = None, *, package: str = "Custom") -> Any:
    """Register a rule class for Keras serialization, so a saved optimizer finds it by name.

    Use as ``@register_rule`` or ``@register_rule(package="my_project")``; the rule is then
    stored in configs and ``.keras`` files as ``"package>ClassName"``.

    Raises:
        TypeError: If the decorated object is not a :class:`Rule` subclass.
    """

    def decorate(rule_class: Any) -> Any:
        if not (isinstance(rule_class, type) and issubclass(rule_class, Rule)):
            raise InvalidTypeError(
                "`register_rule` decorates subclasses of `hs.rules.Rule`. "
                f"{received('cls', rule_class)}"
            )
        return keras.saving.register_keras_serializable(package=package)(rule_class)

    return decorate if cls is None else decorate(cls)


def deserialize_rule(config: Any, custom_objects: Any = None) -> Rule:
    """The rule a saved optimizer's config names; a custom rule this process has not
    registered is refused in one line that says which and what to import.

    Raises:
        ValueError: For a registered name that no imported module registered.
    """
    name = config.get("registered_name") if isinstance(config, dict) else None
    found = [
        keras.saving.get_registered_object(key, custom_objects)
        for key in (name, config.get("class_name") if name else None)
        if key
    ]
    if name and not any(found):
        raise NotRegisteredError(
            f"The saved optimizer's update rule {name!r} is not registered in this process: "
            f"a rule registers with `@hs.rules.register_rule` when its module is imported, "
            f"so import the module that defines it ({config.get('module')!r}) before loading. "
            f"Received: rule={name!r}"
        )
    return keras.saving.deserialize_keras_object(config, custom_objects)  # type: ignore[no-any-return]


def get_rule(rule: Any) -> Rule:
    """Return ``rule`` as a :class:`Rule` instance.

    Accepts a Rule instance, a Rule subclass (built with no arguments), the name of a
    built-in rule (``"sgd"``, ``"adam"``, ``"adamw"``, ``"lion"``, any case, with or
    without ``Rule``: ``"AdamRule"``) or a registered
    name (``"Custom>MyRule"``).

    Raises:
        ValueError: For an unknown name, listing the built-in ones.
        TypeError: For anything else.

    Example:
        >>> get_rule("adam")
        AdamRule(amsgrad=False)
    """
    if isinstance(rule, Rule):
        return rule
    if isinstance(rule, type) and issubclass(rule, Rule):
        return rule()
    if isinstance(rule, str):
        key = rule.lower()
        found = (
            BUILTIN.get(key)
            or BUILTIN.get(key.removesuffix("rule"))
            or keras.saving.get_registered_object(rule)
        )
        if isinstance(found, type) and issubclass(found, Rule):
            return found()
        raise InvalidArgumentError(
            f"Unknown update rule name. Built-in rules: {sorted(BUILTIN)}; a custom rule is "
            f"found by its registered name ('Custom>MyRule'). {received('rule', rule)}"
        )
    raise InvalidTypeError(
        "`rule` must be an `hs.rules.Rule` instance or subclass, or a rule name such as "
        f"'adam'. {received('rule', rule)}"
    )


# ---- built-in rules --------------------------------------------------------------------
# Each is written in the same order of operations as its Keras optimizer, in place, so that
# it matches Keras numerically (and costs the same kernels).


@register_rule(package=PACKAGE)
class SGDRule(Rule):
    """Stochastic gradient descent with momentum (Keras ``SGD``).

    ``m = momentum * m - learning_rate * g``;
    ``w = w + m``, or with ``nesterov``: ``w = w + momentum * m - learning_rate * g``.
    With ``momentum = 0`` this is ``w = w - learning_rate * g``.

    Args:
        nesterov: Whether to apply Nesterov momentum.

    Example:
        >>> SGDRule(nesterov=True).hyperparameters
        {'learning_rate': 0.01, 'momentum': 0.0}
    """

    hyperparameters: ClassVar[Mapping[str, float]] = {"learning_rate": 0.01, "momentum": 0.0}
    slots = ("momentum",)

    def __init__(self, nesterov: bool = False) -> None:
        self.nesterov = check_flag("SGDRule", "nesterov", nesterov)

    def update(self, variable: Any, gradient: Any, slots: Values, hp: Values, step: Any) -> Any:
        m = slots.momentum
        m.assign(m * hp.momentum - gradient * hp.learning_rate)
        if self.nesterov:
            variable.assign_add(m * hp.momentum - gradient * hp.learning_rate)
        else:
            variable.assign_add(m)

    def get_config(self) -> dict[str, Any]:
        return {"nesterov": self.nesterov}


@register_rule(package=PACKAGE)
class AdamRule(Rule):
    """Adam (Keras ``Adam``), bias-corrected with ``t = step + 1``.

    ``m = m + (g - m) * (1 - beta_1)``; ``v = v + (g**2 - v) * (1 - beta_2)``;
    ``alpha = learning_rate * sqrt(1 - beta_2**t) / (1 - beta_1**t)``;
    ``w = w - m * alpha / (sqrt(v) + epsilon)``; with ``amsgrad``, ``v`` in the last line is
    ``v_hat = max(v_hat, v)``.

    ``t`` counts the updates on the optimizer's clock, which equals Keras's
    ``iterations + 1`` when the clock starts with the optimizer.

    Args:
        amsgrad: Whether to use the AMSGrad variant.

    Example:
        >>> AdamRule().hyperparameters
        {'learning_rate': 0.001, 'beta_1': 0.9, 'beta_2': 0.999, 'epsilon': 1e-07}
    """

    hyperparameters: ClassVar[Mapping[str, float]] = {
        "learning_rate": 0.001,
        "beta_1": 0.9,
        "beta_2": 0.999,
        "epsilon": 1e-7,
    }

    slots: tuple[str, ...] = ("momentum", "velocity")

    def __init__(self, amsgrad: bool = False) -> None:
        self.amsgrad = check_flag(type(self).__name__, "amsgrad", amsgrad)
        if amsgrad:
            self.slots = ("momentum", "velocity", "velocity_hat")

    def update(self, variable: Any, gradient: Any, slots: Values, hp: Values, step: Any) -> Any:
        t = step + 1.0
        alpha = hp.learning_rate * ops.sqrt(1 - hp.beta_2**t) / (1 - hp.beta_1**t)
        m, v = slots.momentum, slots.velocity
        m.assign_add((gradient - m) * hp.one_minus("beta_1"))
        v.assign_add((ops.square(gradient) - v) * hp.one_minus("beta_2"))
        if self.amsgrad:
            slots.velocity_hat.assign(ops.maximum(slots.velocity_hat, v))
            v = slots.velocity_hat
        variable.assign_sub(m * alpha / (ops.sqrt(v) + hp.epsilon))

    def get_config(self) -> dict[str, Any]:
        return {"amsgrad": self.amsgrad}


@register_rule(package=PACKAGE)
class AdamWRule(AdamRule):
    """Adam with decoupled weight decay (Keras ``AdamW``).

    First ``w = w - w * weight_decay * learning_rate``, then the :class:`AdamRule` update.

    Args:
        amsgrad: Whether to use the AMSGrad variant.

    Example:
        >>> AdamWRule().hyperparameters["weight_decay"]
        0.004
    """

    hyperparameters: ClassVar[Mapping[str, float]] = {
        **AdamRule.hyperparameters,
        "weight_decay": 0.004,
    }

    def update(self, variable: Any, gradient: Any, slots: Values, hp: Values, step: Any) -> Any:
        variable.assign_sub(variable * hp.weight_decay * hp.learning_rate)
        super().update(variable, gradient, slots, hp, step)


@register_rule(package=PACKAGE)
class LionRule(Rule):
    """Lion, evolved sign momentum (Keras ``Lion``).

    ``w = w - learning_rate * sign(beta_1 * m + (1 - beta_1) * g)``;
    ``m = beta_2 * m + (1 - beta_2) * g``.

    Example:
        >>> LionRule().hyperparameters
        {'learning_rate': 0.001, 'beta_1': 0.9, 'beta_2': 0.99}
    """

    hyperparameters: ClassVar[Mapping[str, float]] = {
        "learning_rate": 0.001,
        "beta_1": 0.9,
        "beta_2": 0.99,
    }
    slots = ("momentum",)

    def update(self, variable: Any, gradient: Any, slots: Values, hp: Values, step: Any) -> Any:
        m = slots.momentum
        variable.assign_sub(
            hp.learning_rate * ops.sign(m * hp.beta_1 + gradient * (1.0 - hp.beta_1))
        )
        m.assign(m * hp.beta_2 + gradient * (1.0 - hp.beta_2))


BUILTIN: dict[str, type[Rule]] = {
    "sgd": SGDRule,
    "adam": AdamRule,
    "adamw": AdamWRule,
    "lion": LionRule,
}

__all__ = [
    "AdamRule",
    "AdamWRule",
    "LionRule",
    "Rule",
    "SGDRule",
    "Values",
    "get_rule",
    "register_rule",
]
