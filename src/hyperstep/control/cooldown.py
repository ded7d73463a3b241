"""A cooldown started at run time: :class:`Cooldown` and the callback :class:`StartCooldown`.

Warmup-stable-decay training (MiniCPM, arXiv 2404.06395; Hagele et al., arXiv 2405.18392)
decides when to cool down while it runs: a budget is reached, the loss flattens, a
checkpoint is worth branching from: a :class:`Cooldown` starts then, without retracing.
"""

from __future__ import annotations

import os
import time
from typing import Any

import keras
from keras import ops

from hyperstep.backends import concrete
from hyperstep.backends.fit import held_state, write_through
from hyperstep.clock import check_step
from hyperstep.control import value_forms
from hyperstep.control.epochs import epoch_began, fit_began
from hyperstep.control.hyperparameter import controlled_hyperparameter
from hyperstep.errors import InvalidArgumentError
from hyperstep.schedules.base import check_number
from hyperstep.schedules.checks import check_choice, check_positive, check_steps
from hyperstep.schedules.wsd import DECAY_TYPES

__all__ = ["Cooldown", "StartCooldown"]


class Cooldown:
    """Cool a hyperparameter down from the step :meth:`start` is called on.

    ``base(step) = schedule(step)`` before the start step ``s0``, then
    ``end + (schedule(s0) - end) * f(min(step - s0, steps) / steps)``, and as always
    ``value = override if set else base(step) * scale``. ``f`` is the decay shape, as the
    ``cooldown`` schedule word computes it (:func:`hyperstep.schedules.wsd.cooled_value`).

    So the value goes from the one in force at the start (the schedule there times the
    scale) to ``end * scale`` in ``steps`` steps, and stays there. ``scale`` and overrides
    keep working during the cooldown: a :class:`hyperstep.ReduceOnPlateau` reduction still
    multiplies it, and an override still wins. Before :meth:`start` nothing changes.

    Create it at any time, also after the training step was traced (``fit``, decide,
    create, start, ``fit`` again): it assigns the dormant cooldown every hyperparameter
    carries (:mod:`hyperstep.control.value_forms`), which the step already reads and which
    is saved with the hyperparameter, so a restored run resumes the cooldown exactly.

    Args:
        hyperparameter: The :class:`hyperstep.Hyperparameter` to cool down (or a scheduled
            optimizer, meaning its ``learning_rate``).
        steps: Length of the cooldown, a positive number of steps.
        shape: ``"1-sqrt"`` (default), ``"linear"``, ``"cosine"``, ``"exponential"`` or
            ``"minus_sqrt"``.
        end: The value at the end, in the units of the schedule (``scale`` multiplies it).

    Raises:
        InvalidArgumentError: On a bad ``steps``, ``shape`` or ``end``, or a hyperparameter
            that already has a cooldown.

    Example:
        >>> import hyperstep as hs
        >>> lr = hs.Hyperparameter(0.1, name="learning_rate")
        >>> cooldown = hs.Cooldown(lr, steps=4, shape="linear")
        >>> cooldown.start(at=2)
        >>> [round(float(v), 4) for v in lr.at([0, 2, 3, 4, 6, 9])]
        [0.1, 0.1, 0.075, 0.05, 0.0, 0.0]
    """

    def __init__(
        self,
        hyperparameter: Any,
        steps: float,
        shape: str = "1-sqrt",
        end: float = 0.0,
    ) -> None:
        self.target = controlled_hyperparameter(hyperparameter, "Cooldown(hyperparameter=...)")
        self.steps = check_steps("Cooldown", "steps", steps)
        self.shape = check_choice("Cooldown", "shape", shape, DECAY_TYPES)
        self.end = check_number("Cooldown", "end", end)
        if self.target.cooldown is not None:
            raise InvalidArgumentError(
                f"Hyperparameter {self.target.name!r} already has a cooldown; one is enough "
                f"(start it later, or cancel it). Received: hyperparameter={self.target.name!r}"
            )
        self._start = self.target.cooldown_start
        self._form = self.target.cooldown_form
        write_through(self._form, value_forms.form_of(self.steps, self.end, self.shape))
        object.__setattr__(self.target, "_cooldown", self)  # not tracked as a sublayer

    # ---- run time -------------------------------------------------------------------------
    def start(self, at: Any = None) -> None:
        """Start the cooldown at step ``at`` (default: the clock's current step).

        Writes one variable; runs eagerly or inside ``tf.function`` (``at`` may be a
        tensor). A cooldown already started keeps its start: call :meth:`cancel` first to
        move it. ``at`` may lie in the future (the cooldown begins there) or in the past
        (the value follows the cooldown as if started then).
        """
        if at is None:
            with self.target._held():  # a JAX fit's step, where one holds it
                at = self.target.clock.step.value
                at = int(at) if concrete(at) else at
        elif isinstance(at, (bool, int, float)):
            at = check_step("Cooldown.start", "at", at)
        held = held_state([self._start]) is not None  # a JAX fit holds it: eager
        if concrete(at) and (held or concrete(self._start.value)):
            if not self.started:  # eagerly (reaches a JAX fit in progress)
                write_through(self._start, int(at))  # a new buffer, not the step's
            return
        new = ops.cast(at, self._start.dtype)
        current = self._start.value
        self._start.assign(ops.where(ops.greater_equal(current, 0), current, new))

    def cancel(self) -> None:
        """Forget the start: the value follows the schedule again."""
        write_through(self._start, -1)

    @property
    def started(self) -> bool:
        """Whether :meth:`start` was called (read eagerly)."""
        return self.start_step is not None

    @property
    def start_step(self) -> int | None:
        """The step the cooldown starts at, or None before :meth:`start` (read eagerly)."""
        with self.target._held():
            value = int(ops.convert_to_numpy(self._start))  # (a MirroredVariable too)
        return value if value >= 0 else None

    @property
    def variables(self) -> list[Any]:
        """The state variables, start and form (also in ``hyperparameter.variables``)."""
        return [self._start, self._form]

    def __repr__(self) -> str:
        return (
            f"Cooldown({self.target.name!r}, steps={self.steps}, shape={self.shape!r}, "
            f"end={self.end})"
        )


class StartCooldown(keras.callbacks.Callback):
    """Start a :class:`Cooldown` in ``fit`` at a step, an epoch, a time budget or a file.

    The first trigger that fires starts the cooldown (later ones do nothing):

    * ``at_step=k``: at step ``k`` of the clock (written at ``on_train_begin``, so the
      cooldown begins exactly at update ``k``, also in a run resumed before it);
    * ``at_epoch=e``: at the first step of epoch ``e`` (fit's 0-based epoch index);
    * ``after_seconds=t``: at the first batch that begins ``t`` seconds or more after the
      first ``on_train_begin`` of this callback (wall-clock, ``time.monotonic``);
    * ``when_file=path``: at the first batch that begins once ``path`` exists: run
      ``touch path`` from a shell to cool down a run in progress.

    Args:
        cooldown: The :class:`Cooldown` to start.
        at_step: A step (an integer >= 0), or None.
        at_epoch: An epoch index (an integer >= 0), or None.
        after_seconds: A wall-clock budget in seconds (> 0), or None.
        when_file: A file path, or None.
        verbose: 1 prints a line when the cooldown starts.

    Raises:
        InvalidArgumentError: If no trigger is given, or one is out of range.

    Example:
        >>> import hyperstep as hs, keras, numpy as np
        >>> opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
        >>> cooldown = hs.Cooldown(opt, steps=2, shape="linear")
        >>> model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
        >>> model.compile(opt, "mse")
        >>> _ = model.fit(np.ones((8, 1)), np.ones((8, 1)), batch_size=2, epochs=2, verbose=0,
        ...               callbacks=[hs.callbacks.StartCooldown(cooldown, at_epoch=1)])
        >>> cooldown.start_step, round(float(opt.hyperparameters["learning_rate"].value), 4)
        (4, 0.0)
    """

    def __init__(
        self,
        cooldown: Cooldown,
        *,
        at_step: int | None = None,
        at_epoch: int | None = None,
        after_seconds: float | None = None,
        when_file: str | os.PathLike[str] | None = None,
        verbose: int = 0,
    ) -> None:
        super().__init__()
        if not isinstance(cooldown, Cooldown):
            raise InvalidArgumentError(
                f"`StartCooldown(cooldown=...)` must be a hs.Cooldown. "
                f"Received: cooldown of type {type(cooldown).__name__}"
            )
        if at_step is None and at_epoch is None and after_seconds is None and when_file is None:
            raise InvalidArgumentError(
                "`StartCooldown(...)` needs a trigger: at_step=, at_epoch=, after_seconds= or "
                "when_file=. Received: none of them"
            )
        if at_step is not None:  # kept as the int checked (an integral float is accepted)
            at_step = check_step("StartCooldown", "at_step", at_step)
        if at_epoch is not None:
            at_epoch = check_step("StartCooldown", "at_epoch", at_epoch)
        if after_seconds is not None:
            after_seconds = check_positive("StartCooldown", "after_seconds", after_seconds)
        self.cooldown = cooldown
        self.at_step, self.at_epoch, self.after_seconds = at_step, at_epoch, after_seconds
        self.when_file = None if when_file is None else os.fspath(when_file)
        self.verbose = verbose
        self._began: float | None = None

    def _fire(self, why: str, at: int | None = None) -> None:
        if self.cooldown.started:
            return
        _ = self.model  # on JAX, Keras puts the training state back into the variables first
        self.cooldown.start(at)
        if self.verbose:
            print(
                f"\nStartCooldown: cooling {self.cooldown.target.name} down from step "
                f"{self.cooldown.start_step} ({why})."
            )

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        fit_began(self.model, self.params, [self.cooldown.target.clock])
        if self._began is None:
            self._began = time.monotonic()
        if self.at_step is not None:
            self._fire(f"at_step={self.at_step}", self.at_step)

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        epoch_began(self.model, epoch, [self.cooldown.target.clock])
        if self.at_epoch is not None and epoch >= self.at_epoch:
            self._fire(f"epoch {epoch}")

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self.when_file is not None and os.path.exists(self.when_file):
            self._fire(f"found {self.when_file}")
        if self.after_seconds is not None and self._began is not None:
            if time.monotonic() - self._began >= self.after_seconds:
                self._fire(f"{self.after_seconds:g} s elapsed")

    def __repr__(self) -> str:
        triggers = {
            "at_step": self.at_step,
            "at_epoch": self.at_epoch,
            "after_seconds": self.after_seconds,
            "when_file": self.when_file,
        }
        shown = ", ".join(f"{k}={v!r}" for k, v in triggers.items() if v is not None)
        return f"StartCooldown({self.cooldown!r}, {shown})"
