"""A user's own optimizers, as a user's module defines them (no hyperstep import): one
registered with Keras, one Keras finds only through ``custom_objects``."""

from __future__ import annotations

from typing import Any

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="fresh_user")
class SignDescent(keras.optimizers.Optimizer):
    """``w -= lr * shrink * sign(g)``, with ``shrink`` a numeric hyperparameter."""

    def __init__(self, learning_rate: Any = 0.01, shrink: float = 0.5, **kwargs: Any) -> None:
        kwargs.setdefault("name", "sign_descent")
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.shrink = shrink

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> None:
        lr = ops.cast(learning_rate, variable.dtype)
        shrink = ops.cast(self.shrink, variable.dtype)
        self.assign_sub(variable, lr * shrink * ops.sign(gradient))

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "shrink": self.shrink}


class UnregisteredSignDescent(SignDescent):
    """The same update, not registered: loads given ``custom_objects``."""
