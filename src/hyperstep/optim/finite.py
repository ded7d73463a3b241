"""Skip updates whose gradients are not finite, without advancing the clock.

``SkipNonFinite(optimizer)`` wraps any Keras optimizer (a hyperstep one included), as
``keras.optimizers.LossScaleOptimizer`` does, and follows ``optax.apply_if_finite``::

    finite      = all(isfinite(g) for g in grads)
    consecutive = 0 if finite else consecutive + 1
    total_skips = total_skips + (0 if finite else 1)
    if finite or consecutive > max_consecutive_errors: optimizer.apply(grads)

A skipped update changes no weight and no slot, and neither the wrapped optimizer's
``iterations`` nor its clock advance, so every schedule resumes where it stopped. After
more than ``max_consecutive_errors`` skips in a row the update goes through, as optax
lets it: the run fails visibly (non-finite weights; ``keras.callbacks.TerminateOnNaN``
stops ``fit``) instead of skipping forever. Both counters are saved variables.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from hyperstep.backends import concrete
from hyperstep.backends.internals import naming_loaded_file
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.iteration import conditional

__all__ = ["SkipNonFinite"]


@keras.saving.register_keras_serializable(package="hyperstep")
class SkipNonFinite(keras.optimizers.Optimizer):
    """An optimizer that skips updates with non-finite gradients (``optax.apply_if_finite``).

    Args:
        inner_optimizer: The Keras optimizer to wrap.
        max_consecutive_errors: How many non-finite updates in a row are skipped; the next
            one is applied.
        name: The optimizer's name.

    Attributes:
        consecutive_skips: Non-finite updates in a row (int32 variable, optax's
            ``notfinite_count``).
        total_skips: Non-finite updates in all (optax's ``total_notfinite``).

    Example:
        >>> import hyperstep as hs, keras, numpy as np
        >>> opt = hs.SkipNonFinite(hs.StepOptimizer("sgd", learning_rate=0.1))
        >>> w = keras.Variable([1.0])
        >>> opt.apply([keras.ops.convert_to_tensor([np.nan])], [w])
        >>> float(w.numpy()[0]), int(opt.total_skips), int(opt.clock.step)
        (1.0, 1, 0)
    """

    def __init__(
        self, inner_optimizer: Any, max_consecutive_errors: int = 5, name: str | None = None
    ) -> None:
        if not isinstance(inner_optimizer, keras.optimizers.Optimizer):
            raise InvalidTypeError(
                "`SkipNonFinite(inner_optimizer=...)` must be a Keras optimizer. "
                + received("inner_optimizer", inner_optimizer)
            )
        if not isinstance(max_consecutive_errors, int) or max_consecutive_errors < 0:
            raise InvalidArgumentError(
                "`SkipNonFinite(max_consecutive_errors=...)` must be an integer >= 0. "
                + received("max_consecutive_errors", max_consecutive_errors)
            )
        super().__init__(learning_rate=0.0, name=name)
        self.inner_optimizer = inner_optimizer
        self.max_consecutive_errors = max_consecutive_errors

    def build(self, var_list: Any) -> None:
        if self.built:  # type: ignore[has-type]
            return
        self.consecutive_skips = self.add_variable((), "zeros", "int32", name="consecutive_skips")
        self.total_skips = self.add_variable((), "zeros", "int32", name="total_skips")
        self.inner_optimizer.build(var_list)
        super().build(var_list)

    @property
    def variables(self) -> list[Any]:
        return self._variables + self.inner_optimizer.variables

    def _count(self, grads: Any) -> Any:
        """Update the counters; return whether the update goes through."""
        finite = ops.all(
            ops.convert_to_tensor([ops.all(ops.isfinite(g)) for g in grads if g is not None])
        )
        skipped = ops.cast(ops.logical_not(finite), "int32")
        consecutive = (self.consecutive_skips + 1) * skipped
        self.consecutive_skips.assign(consecutive)
        self.total_skips.assign(self.total_skips + skipped)
        return ops.logical_or(finite, consecutive > self.max_consecutive_errors)

    def apply(self, grads: Any, trainable_variables: Any = None) -> None:
        grads = list(grads)
        if not self.built:  # type: ignore[has-type]
            self.build(trainable_variables)
            self.built = True
        go = self._count(grads)
        if not concrete(go):  # traced: the iteration's clock advances only where it applies
            with conditional(go):
                apply = self.inner_optimizer.apply
                ops.cond(go, lambda: apply(grads, trainable_variables), lambda: None)
        elif bool(ops.convert_to_numpy(go)):
            self.inner_optimizer.apply(grads, trainable_variables)

    def stateless_apply(
        self, optimizer_variables: Any, grads: Any, trainable_variables: Any
    ) -> tuple[list[Any], list[Any]]:
        mapping = list(zip(self.variables, optimizer_variables, strict=True))
        with keras.StatelessScope(state_mapping=mapping) as scope:
            go = self._count(list(grads))
        own = [scope.get_current_value(v) for v in self._variables]
        # arrays: inside LossScaleOptimizer's stateless_apply these are its own variables
        inner_values = [ops.convert_to_tensor(v) for v in optimizer_variables[len(own) :]]

        def applied() -> Any:
            return self.inner_optimizer.stateless_apply(inner_values, grads, trainable_variables)

        def skipped() -> Any:
            return list(trainable_variables), inner_values

        with conditional(go):
            new_trainable, new_inner = ops.cond(go, applied, skipped)
        return list(new_trainable), own + list(new_inner)

    # ---- the wrapped optimizer's surface ------------------------------------------------
    @property
    def learning_rate(self) -> Any:
        return self.inner_optimizer.learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        self.inner_optimizer.learning_rate = value

    @property
    def iterations(self) -> Any:
        return self.inner_optimizer.iterations

    @property
    def clock(self) -> Any:
        """The wrapped optimizer's :class:`hyperstep.Clock` (hyperstep optimizers)."""
        return self.inner_optimizer.clock

    @property
    def hyperparameters(self) -> Any:
        return self.inner_optimizer.hyperparameters

    def finalize_variable_values(self, var_list: Any) -> None:
        self.inner_optimizer.finalize_variable_values(var_list)

    def get_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "inner_optimizer": keras.saving.serialize_keras_object(self.inner_optimizer),
            "max_consecutive_errors": self.max_consecutive_errors,
        }

    @classmethod
    @naming_loaded_file()
    def from_config(cls, config: dict[str, Any], custom_objects: Any = None) -> SkipNonFinite:
        config = dict(config)
        inner = keras.saving.deserialize_keras_object(config.pop("inner_optimizer"), custom_objects)
        return cls(inner, **config)
