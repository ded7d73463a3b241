"""The :class:`Clock`: the one definition of "step" and "epoch", read by optimizers, free
hyperparameters, controllers and loggers alike.
"""

from __future__ import annotations

import contextlib
import math
import weakref
from typing import Any

import keras
from keras import ops

from hyperstep import backends
from hyperstep.backends import integer_dtype
from hyperstep.backends.fit import readable_in_fit, write_through
from hyperstep.backends.jax import stateless_copy
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.iteration import Iteration, training_iteration


@keras.saving.register_keras_serializable(package="hyperstep")
class Clock(keras.layers.Layer):
    """The training step, shared by everything that depends on it.

    ``step`` = number of updates already applied (int64, starts at 0; int32 on JAX unless
    ``jax_enable_x64`` is on);
    ``epoch = epoch_index + (step - epoch_start) // length``, ``length = epoch_length or
    steps_per_epoch``.

    ``epoch_index``, ``epoch_start`` and ``epoch_length`` are 0 until ``model.fit`` starts:
    inside ``fit`` ``epoch`` is fit's own epoch, also when epochs differ in length
    (:meth:`epoch_at` has the rule).

    **The step is the training iteration**: every update and hyperparameter read during
    iteration ``i`` sees step ``i``, in any number and order of optimizers, and the clock
    advances once after it, by the updates applied (a skipped update or a
    gradient-accumulation micro-step leaves it, as it leaves Keras's ``iterations``).

    * ``model.fit`` needs nothing.
    * A custom loop wraps each iteration in :meth:`iteration` (one line)::

          for batch in data:
              with clock.iteration():   # inside a tf.function step too
                  d_optimizer.apply(...); g_optimizer.apply(...)  # a GAN, in any order

    * Without it, the optimizer that claimed the clock advances it after each of its
      updates (docs/recipes.md, "Several optimizers on one clock").

    In stateless training (JAX) each state carries its own copy of ``step``
    (:meth:`stateless_copy`; docs/backends.md, "The clock's step in two states").

    A clock is a Keras layer: assigned as an attribute of a layer, a model or an optimizer
    it is saved and restored with it (``.keras``, ``save_weights``, ``tf.train.Checkpoint``),
    all its variables together.

    Args:
        steps_per_epoch: Updates per epoch (a positive integer), or ``None`` when not known
            yet. It can be set once later (``clock.steps_per_epoch = n``; every ``fit``
            does this from its ``steps``); setting a different value afterwards raises.
        name: Name of the layer and prefix of its variable's path.

    Example:
        >>> clock = Clock(steps_per_epoch=10)
        >>> for _ in range(25):
        ...     _ = clock.advance()
        >>> int(clock.step), int(clock.epoch)
        (25, 2)
    """

    def __init__(
        self,
        steps_per_epoch: int | None = None,
        name: str = "clock",
        total: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        self._steps_per_epoch: int | None = None
        if steps_per_epoch is not None:
            self.steps_per_epoch = steps_per_epoch
        self.step = state_variable(self, "step")
        # where fit's current epoch began, and fit's epoch length (0: steps_per_epoch)
        self.epoch_index = state_variable(self, "epoch_index")
        self.epoch_start = state_variable(self, "epoch_start")
        self.epoch_length = state_variable(self, "epoch_length")
        #: the run's length (training iterations), 0 while unknown: see :attr:`total`
        self.total_steps = state_variable(self, "total")
        # read from a JAX fit's batch callbacks: the value the trainer holds
        readable_in_fit([self.step, *self.epoch_variables, self.total_steps])
        #: whether ``total`` was set by the user (``fit`` keeps it) or bound by a ``fit``
        self.total_given = False
        #: the hyperparameters read with this clock's ``total``: each checks a new length
        self.total_readers: weakref.WeakSet[Any] = weakref.WeakSet()
        if total is not None:
            self.total = total
        self.built = True
        #: set by hyperstep's fit hook and callbacks: fit gives the epoch (see begin_epoch)
        self.follows_fit = False

    # ---- epochs -------------------------------------------------------------------------
    @property
    def steps_per_epoch(self) -> int | None:
        """Updates per epoch, or ``None`` when not known yet (settable once)."""
        return self._steps_per_epoch

    @steps_per_epoch.setter
    def steps_per_epoch(self, value: int) -> None:
        value = check_step("Clock", "steps_per_epoch", value, minimum=1)
        if self._steps_per_epoch is not None and self._steps_per_epoch != value:
            raise InvalidArgumentError(
                f"`Clock(name={self.name!r})` already counts {self._steps_per_epoch} steps "
                "per epoch and schedules were bound to it; it cannot change. Use a new "
                f"clock for a different epoch length. {received('steps_per_epoch', value)}"
            )
        self._steps_per_epoch = value

    @property
    def epoch(self) -> Any:
        """The current epoch, ``epoch_index + (step - epoch_start) // steps_per_epoch``
        (an integer tensor); see :meth:`epoch_at`."""
        return ops.cast(self.epoch_at(self.step.value), self.step.dtype)

    def epoch_at(self, step: Any) -> Any:
        """The epoch at ``step`` (a float32 tensor of ``step``'s shape) on this clock.

        ``epoch_index + floor((step - epoch_start) / length)`` with ``length`` the last
        ``fit``'s epoch length (``epoch_length``), else ``steps_per_epoch``: fit's epoch
        inside ``fit``, ``floor(step / steps_per_epoch)`` before any ``fit``. With no
        length known it is ``epoch_index`` where fit gives the epoch (:attr:`follows_fit`),
        and 0 while Keras builds a model and at steps not after ``epoch_start`` (nothing
        trained yet); anywhere else it raises.

        Raises:
            ValueError: If the epoch length is unknown and ``step`` is past the epoch's
                start outside ``fit`` (or in a traced step outside ``fit``).

        Example:
            >>> clock = Clock(steps_per_epoch=5)
            >>> [int(e) for e in clock.epoch_at([0, 4, 5, 16])]
            [0, 0, 1, 3]
            >>> _ = clock.step.assign(16)
            >>> clock.begin_epoch(4)  # fit's epochs ran 5, 5, 5 and 1 steps
            >>> [int(e) for e in clock.epoch_at([16, 20, 21])]
            [4, 4, 5]
        """
        step = ops.cast(ops.convert_to_tensor(step), "float32")
        index = ops.cast(self.epoch_index.value, "float32")
        since = step - ops.cast(self.epoch_start.value, "float32")
        spe = self._steps_per_epoch
        known = spe is not None or self.follows_fit or backends.building_model()
        # (.value: int() of a tf.distribute MirroredVariable fails)
        if known or _every(since, ops.less_equal) or _every(self.epoch_length.value, ops.greater):
            # no length at all (fit did not know it): epoch_index, within fit's epoch
            fallback = math.inf if spe is None else float(spe)
            length = ops.cast(self.epoch_length.value, "float32")
            length = ops.where(ops.greater(length, 0.0), length, fallback)
            return index + ops.floor(since / length)
        raise InvalidArgumentError(
            f"`Clock(name={self.name!r})` cannot tell the epoch at this step: it does not "
            "know how many steps an epoch has, and no `model.fit` gives it the epoch. Pass "
            "`hs.Clock(steps_per_epoch=...)` or set `clock.steps_per_epoch = n`. In "
            "`model.fit` hyperstep takes fit's epochs by itself; for a clock the model does "
            "not reach, pass `callbacks=[hs.callbacks.FollowEpochs(clock)]`. "
            "Received: steps_per_epoch=None"
        )

    def begin_epoch(self, epoch: int) -> None:
        """Start epoch ``epoch`` at the current step: ``epoch_index <- epoch``,
        ``epoch_start <- step``.

        Called by hyperstep at each ``on_epoch_begin`` of ``model.fit`` with fit's epoch
        index; call it yourself in a custom loop whose epochs differ in length.
        """
        epoch = check_step("Clock.begin_epoch", "epoch", epoch)
        self.epoch_index.assign(ops.cast(epoch, self.epoch_index.dtype))
        # a copy: on JAX one buffer in two variables is donated twice by a jitted step
        self.epoch_start.assign(ops.copy(self.step.value))

    @property
    def epoch_variables(self) -> list[Any]:
        """``[epoch_index, epoch_start, epoch_length]``: what reading ``epoch`` needs besides
        ``step``."""
        return [self.epoch_index, self.epoch_start, self.epoch_length]

    # ---- the run's length ---------------------------------------------------------------
    @property
    def total(self) -> int | None:
        """The number of training iterations in the run, or ``None`` while unknown.

        Schedules read it as ``total`` (``cosine(3e-4, steps=total)``, ``progress = step /
        total``) from the variable ``total_steps``, saved with the clock: setting it is an
        ``assign``, so a traced step reads the new length without retracing. ``model.fit``
        binds it at its start to ``epochs`` x steps per epoch unless it was set
        (``clock.total = n``, ``hs.Clock(total=n)``); a length a ``fit`` bound, or a
        checkpoint restored, that differs from a later ``fit``'s is refused, naming both.

        Example:
            >>> clock = Clock(total=1000)
            >>> clock.total
            1000
            >>> clock.total = 1500  # no retrace: an assign
            >>> int(clock.total_steps.value)
            1500
        """
        value = self.total_steps.value
        if not backends.concrete(value):
            return None
        number = int(self.total_steps.numpy())
        return number if number > 0 else None

    @total.setter
    def total(self, value: int | None) -> None:
        self.bind_total(value, given=True)

    def bind_total(self, value: int | None, given: bool = False) -> None:
        """Set :attr:`total` (``None``: unknown); ``given``: the user's, which ``fit`` keeps."""
        number = 0 if value is None else check_step("Clock", "total", value, minimum=1)
        for reader in list(self.total_readers) if number else []:  # before the length changes
            if reader.clock is self:
                reader.check_total(number)
        write_through(self.total_steps, ops.cast(number, self.total_steps.dtype))
        self.total_given = given and value is not None

    # ---- advancing ----------------------------------------------------------------------
    def advance(self) -> Any:
        """Add one to ``step`` (``step.assign_add(1)``) and return the variable's new value."""
        # eager torch: in place (Keras's assign_add costs ~70 us of Python there)
        found = backends.add_one_in_place(self.step)
        return found if found is not None else self.step.assign_add(1)

    # ---- training iterations ------------------------------------------------------------
    def iteration(self) -> contextlib.AbstractContextManager[Iteration]:
        """One training iteration of a custom loop: ``with clock.iteration(): ...``.

        Every update and every read inside sees the step the iteration started at, in any
        order of any number of optimizers on this clock; on leaving the block (without an
        exception) the clock advances once, by whether an update was applied (with no
        optimizer on the clock: by one). Works eagerly and inside ``tf.function``,
        ``jax.jit`` (stateful ``apply``) and ``torch.compile``; ``model.fit`` does the
        same for each train step by itself.

        Example:
            >>> import hyperstep as hs, keras
            >>> clock = hs.Clock()
            >>> g = hs.scheduled(keras.optimizers.SGD(), clock=clock, learning_rate="1 + step")
            >>> d = hs.scheduled(keras.optimizers.SGD(), clock=clock, learning_rate="1 + step")
            >>> w, v = keras.Variable([0.0]), keras.Variable([0.0])
            >>> for _ in range(2):
            ...     with clock.iteration():
            ...         g.apply([keras.ops.ones(1)], [w])  # G first, then D: same step
            ...         d.apply([keras.ops.ones(1)], [v])
            ...         after = float(d.learning_rate)
            >>> float(w.numpy()[0]), float(v.numpy()[0]), int(clock.step), after
            (-3.0, -3.0, 2, 2.0)
        """
        return training_iteration([self])

    # ---- stateless training (JAX) -------------------------------------------------------
    def stateless_copy(self, source: Any, target: Any) -> list[Any]:
        """Return ``target``'s values with this clock's step taken from ``source``.

        The epoch's variables (``epoch_index``, ``epoch_start``) are copied too where both
        lists hold them (a reader of ``epoch`` carries them).

        In a stateless (``jax.jit``) loop only the advancing optimizer's copy of ``step``
        moves: copy it into the other states after each update (docs/backends.md, "The
        clock's step in two states").

        Args:
            source: ``(variables, values)`` holding the current step, e.g.
                ``(optimizer.variables, optimizer_variables)`` after ``stateless_apply``.
            target: ``(variables, values)`` to update, e.g.
                ``(model.non_trainable_variables, non_trainable_variables)`` or another
                optimizer's ``(variables, values)``.

        Returns:
            A new list: ``target``'s values with the step replaced by ``source``'s.

        Raises:
            ValueError: If the clock's step is not among the variables of ``source`` or
                ``target``, or a pair does not give one value per variable.
            TypeError: If ``source`` or ``target`` is not a ``(variables, values)`` pair.

        Example:
            >>> clock = Clock()
            >>> a, b = keras.Variable(1.0), keras.Variable(2.0)
            >>> new = clock.stateless_copy(([clock.step, a], [7, 1.5]), ([b, clock.step], [2.5, 0]))
            >>> [float(v) for v in new]
            [2.5, 7.0]
        """
        return stateless_copy(self, source, target)

    # ---- config -------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config["steps_per_epoch"] = self._steps_per_epoch
        return config

    def __repr__(self) -> str:
        total = f", total={self.total!r}" if self.total is not None else ""
        return f"Clock(steps_per_epoch={self._steps_per_epoch!r}{total}, name={self.name!r})"


def state_variable(
    layer: Any, name: str, initializer: Any = "zeros", dtype: str = "int64", shape: Any = ()
) -> Any:
    """A non-trainable variable of ``layer``'s hyperstep state, one for every replica (``int64``
    is :func:`~hyperstep.backends.integer_dtype`: int32 on JAX without x64)."""
    return layer.add_weight(
        shape=shape,
        dtype=integer_dtype() if dtype == "int64" else dtype,
        initializer=initializer,
        trainable=False,
        aggregation="only_first_replica",
        name=name,
    )


def _every(value: Any, compare: Any) -> bool:
    """Whether ``compare(value, 0)`` holds at every element of a concrete ``value`` (False in
    a traced step)."""
    return backends.concrete(value) and bool(ops.all(compare(value, 0)))


def check_step(owner: str, name: str, value: Any, minimum: int = 0) -> int:
    """Return ``value`` as an int from ``minimum`` (0 or 1) below 2**63 (a step, a number of
    steps, an epoch), or raise naming ``owner(name=...)`` and the value."""
    what = "a positive integer" if minimum else "an integer >= 0"
    message = f"`{owner}({name}=...)` must be {what} below 2**63. {received(name, value)}"
    if isinstance(value, bool) or not hasattr(value, "__float__"):
        raise InvalidTypeError(message)
    whole = isinstance(value, int) or (math.isfinite(float(value)) and float(value).is_integer())
    if not whole or not minimum <= value < 2**63:
        raise InvalidArgumentError(message)
    return int(value)
