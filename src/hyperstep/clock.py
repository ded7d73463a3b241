"""The :class:`Clock`: the one definition of "step" and "epoch".

A clock owns one int64, non-trainable variable, ``step`` = the number of updates already
applied. Optimizers, free hyperparameters, controllers and loggers read the same clock;
exactly one thing advances it per training step (see :class:`Clock` for the rule).
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import keras
from keras import ops

from hyperstep._backend import integer_dtype
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received


@keras.saving.register_keras_serializable(package="hyperstep")
class Clock(keras.layers.Layer):
    """The training step, shared by everything that depends on it.

    ``step`` = number of updates already applied (int64, starts at 0; int32 on JAX unless
    ``jax_enable_x64`` is on);
    ``epoch = step // steps_per_epoch``.

    The update at step ``t`` uses hyperparameter values computed from ``t``; then the
    clock advances to ``t + 1``. The first update uses step 0.

    **Who advances the clock (one advance per training step).** A clock is advanced by
    exactly one *owner*:

    * the optimizer returned by ``hs.scheduled(opt, clock=clock)`` owns the clock when it
      is the first scheduled optimizer created with it (or when ``advance=True`` is
      passed); it advances the clock right after it applies its update, inside ``apply``
      (the values of that update were computed from the step before the advance, so the
      ordering is explicit and race-free, also inside ``tf.function``);
    * every other optimizer on the same clock only reads it (``advance=False``). In a GAN
      loop where the discriminator steps ``k`` times and then the generator once, make the
      generator the owner (schedule it first, or pass ``advance=True`` to it and
      ``advance=False`` to the discriminator): both then see the same step, and the clock
      counts generator steps;
    * with no scheduled optimizer (a free hyperparameter in a custom loop), call
      :meth:`advance` yourself after each update.

    A clock is a Keras layer: assigned as an attribute of a layer, a model or an optimizer
    it is saved and restored with it (``.keras``, ``save_weights``, ``tf.train.Checkpoint``).

    Args:
        steps_per_epoch: Updates per epoch (a positive integer), or ``None`` when not known
            yet. It can be set once later (``clock.steps_per_epoch = n``; the hyperstep
            ``fit`` callbacks do this from ``fit``'s ``steps``); setting a different value
            afterwards raises.
        name: Name of the layer and prefix of its variable's path.

    Example:
        >>> clock = Clock(steps_per_epoch=10)
        >>> for _ in range(25):
        ...     _ = clock.advance()
        >>> int(clock.step), int(clock.epoch)
        (25, 2)
    """

    def __init__(
        self, steps_per_epoch: int | None = None, name: str = "clock", **kwargs: Any
    ) -> None:
        super().__init__(name=name, **kwargs)
        self._steps_per_epoch: int | None = None
        if steps_per_epoch is not None:
            self.steps_per_epoch = steps_per_epoch
        self.step = self.add_weight(
            shape=(),
            dtype=integer_dtype(),
            initializer="zeros",
            trainable=False,
            aggregation="only_first_replica",
            name="step",
        )
        self.built = True
        self._owner: Any = None  # weakref to the optimizer that advances this clock

    # ---- epochs -------------------------------------------------------------------------
    @property
    def steps_per_epoch(self) -> int | None:
        """Updates per epoch, or ``None`` when not known yet (settable once)."""
        return self._steps_per_epoch

    @steps_per_epoch.setter
    def steps_per_epoch(self, value: int) -> None:
        value = _positive_int(value)
        if self._steps_per_epoch is not None and self._steps_per_epoch != value:
            raise InvalidArgumentError(
                f"`Clock(name={self.name!r})` already counts {self._steps_per_epoch} steps "
                "per epoch and schedules were bound to it; it cannot change. Use a new "
                f"clock for a different epoch length. {received('steps_per_epoch', value)}"
            )
        self._steps_per_epoch = value

    @property
    def epoch(self) -> Any:
        """The current epoch, ``step // steps_per_epoch`` (an int64 tensor)."""
        if self._steps_per_epoch is None:
            raise InvalidArgumentError(
                f"`Clock(name={self.name!r}).epoch` needs `steps_per_epoch`. Pass "
                "`hs.Clock(steps_per_epoch=...)` or set `clock.steps_per_epoch = n` before "
                "reading epochs. Received: steps_per_epoch=None"
            )
        return ops.floor_divide(self.step.value, self._steps_per_epoch)

    # ---- advancing ----------------------------------------------------------------------
    def advance(self) -> Any:
        """Add one to ``step`` (``step.assign_add(1)``) and return the variable's new value."""
        return self.step.assign_add(1)

    def claim(self, owner: Any, advance: bool | None) -> bool:
        """Decide whether ``owner`` advances this clock; return that decision.

        ``advance=None`` means "advance if nobody does yet". ``advance=True`` when another
        live object already advances the clock raises: two advances per step would count
        each training step twice.
        """
        current = self._owner() if self._owner is not None else None
        if advance is None:
            advance = current is None or current is owner
        if advance:
            if current is not None and current is not owner:
                raise InvalidArgumentError(
                    f"`Clock(name={self.name!r})` is already advanced by {current!r}; "
                    "exactly one optimizer may advance a shared clock. Pass "
                    "`advance=False` to the others. Received: advance=True"
                )
            self._owner = weakref.ref(owner)
        return bool(advance)

    # ---- config -------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config["steps_per_epoch"] = self._steps_per_epoch
        return config

    def __repr__(self) -> str:
        return f"Clock(steps_per_epoch={self._steps_per_epoch!r}, name={self.name!r})"


def _positive_int(value: Any) -> int:
    """Return ``value`` as an int > 0, or raise naming ``steps_per_epoch``."""
    message = "`Clock(steps_per_epoch=...)` must be a positive integer. " + received(
        "steps_per_epoch", value
    )
    if isinstance(value, bool) or not hasattr(value, "__float__"):
        raise InvalidTypeError(message)
    number = float(value)
    if not math.isfinite(number) or number != int(number) or number <= 0:
        raise InvalidArgumentError(message)
    return int(number)
