"""The :class:`Clock`: the one definition of "step" and "epoch".

A clock owns one int64, non-trainable variable, ``step`` = the number of updates already
applied, and two that place fit's epochs on it (``epoch_index``, ``epoch_start``).
Optimizers, free hyperparameters, controllers and loggers read the same clock; exactly one
thing advances it per training step (see :class:`Clock` for the rule).
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import keras
from keras import ops

from hyperstep import backends
from hyperstep.backends import integer_dtype
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received


@keras.saving.register_keras_serializable(package="hyperstep")
class Clock(keras.layers.Layer):
    """The training step, shared by everything that depends on it.

    ``step`` = number of updates already applied (int64, starts at 0; int32 on JAX unless
    ``jax_enable_x64`` is on);
    ``epoch = epoch_index + (step - epoch_start) // length``, ``length = epoch_length or
    steps_per_epoch``.

    ``epoch_index``, ``epoch_start`` and ``epoch_length`` are 0 until ``model.fit`` starts:
    then they are the index fit gives its callbacks, the step at which that epoch began
    (:meth:`begin_epoch`) and fit's epoch length, so inside ``fit`` ``epoch`` is fit's own
    epoch, also when epochs differ in length (an input that runs out early); outside
    ``fit`` it is ``step // steps_per_epoch`` (continued from fit's last epoch after one).
    Before the epoch length is known ``epoch`` is 0 while nothing was trained (step 0) and
    while Keras builds a model; later it raises, naming what to pass.

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

    In stateless training (JAX) every optimizer on the clock, and a model holding a
    hyperparameter on it, carries its own copy of ``step`` (and of the epoch's variables
    where it reads ``epoch``); the advancing optimizer's copy wins. ``model.fit`` hands it
    to the model's copy at every step; in a custom ``jax.jit`` loop,
    :meth:`stateless_copy` hands it on (to the model's state and to the other optimizers'
    states) after each update.

    A clock is a Keras layer: assigned as an attribute of a layer, a model or an optimizer
    it is saved and restored with it (``.keras``, ``save_weights``, ``tf.train.Checkpoint``),
    its three variables together (a file saved with ``step`` alone still loads).

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
        # where fit's current epoch began, and fit's epoch length (0: steps_per_epoch)
        self.epoch_index = self._counter("epoch_index")
        self.epoch_start = self._counter("epoch_start")
        self.epoch_length = self._counter("epoch_length")
        self.built = True
        #: set by hyperstep's fit hook and callbacks: fit gives the epoch (see begin_epoch)
        self.follows_fit = False
        self._owner: Any = None  # weakref to the optimizer that advances this clock

    def _counter(self, name: str) -> Any:
        return self.add_weight(
            shape=(),
            dtype=integer_dtype(),
            initializer="zeros",
            trainable=False,
            aggregation="only_first_replica",
            name=name,
        )

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
        if known or _not_after(since) or _positive(self.epoch_length):
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
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
            raise InvalidArgumentError(
                f"`Clock.begin_epoch(epoch=...)` must be an integer >= 0 (fit's epoch index). "
                f"{received('epoch', epoch)}"
            )
        self.epoch_index.assign(ops.cast(epoch, self.epoch_index.dtype))
        # a copy: on JAX one buffer in two variables is donated twice by a jitted step
        self.epoch_start.assign(ops.copy(self.step.value))

    @property
    def epoch_variables(self) -> list[Any]:
        """``[epoch_index, epoch_start, epoch_length]``: what reading ``epoch`` needs besides
        ``step``."""
        return [self.epoch_index, self.epoch_start, self.epoch_length]

    # ---- advancing ----------------------------------------------------------------------
    def advance(self) -> Any:
        """Add one to ``step`` (``step.assign_add(1)``) and return the variable's new value."""
        # eager torch: in place (Keras's assign_add costs ~70 us of Python there)
        found = backends.add_one_in_place(self.step)
        return found if found is not None else self.step.assign_add(1)

    def host_step(self) -> int | None:
        """``step`` as a Python int where reading it is free, else ``None``.

        Free on eager torch with the step on the CPU, outside ``keras.StatelessScope``
        (``hs.scheduled`` then hands Keras Python numbers, see
        :meth:`hyperstep.Hyperparameter.host_float`). Under ``torch.compile`` a Python number
        would be baked into the graph (a recompile per value), on a GPU reading it waits for
        the device, and in graphs (TensorFlow, JAX) it is a symbolic value: ``None`` there.
        """
        return backends.host_int(self.step)

    @property
    def claimed(self) -> bool:
        """Whether an optimizer advances this clock (see :meth:`claim`)."""
        return self._owner is not None and self._owner() is not None

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
        backends.on_claim()  # JAX: the optimizer will hold a copy of `step` in fit
        return bool(advance)

    # ---- stateless training (JAX) -------------------------------------------------------
    def stateless_copy(self, source: Any, target: Any) -> list[Any]:
        """Return ``target``'s values with this clock's step taken from ``source``.

        The epoch's variables (``epoch_index``, ``epoch_start``) are copied too where both
        lists hold them (a reader of ``epoch`` carries them).

        Stateless training (a ``jax.jit`` step with ``model.stateless_call`` and
        ``optimizer.stateless_apply``) passes each owner's variables as a list of arrays.
        A shared clock then has one copy of ``step`` per list: in the state of every
        optimizer on it and, when a hyperparameter read in the forward pass uses it, in
        the model's non-trainable state. Only the advancing optimizer's copy moves, so
        copy it into the others after each update: the next forward pass and the next
        update of every optimizer then read the same step. ``model.fit`` does this for
        the model's copy itself (the optimizer's copy wins).

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
        source_variables, source_values = self._stateless_pair("source", source)
        target_variables, target_values = self._stateless_pair("target", target)
        step = source_values[self._stateless_index("source", source_variables)]
        target_values[self._stateless_index("target", target_variables)] = step
        for variable in self.epoch_variables:  # where both hold it (epoch-based reads)
            found = [i for i, v in enumerate(source_variables) if v is variable]
            into = [i for i, v in enumerate(target_variables) if v is variable]
            if found and into:
                target_values[into[0]] = source_values[found[0]]
        return target_values

    def _stateless_pair(self, argument: str, pair: Any) -> tuple[list[Any], list[Any]]:
        call = f"`Clock(name={self.name!r}).stateless_copy({argument}=...)`"
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InvalidTypeError(
                f"{call} takes a pair `(variables, values)`, such as "
                f"`(optimizer.variables, optimizer_variables)`. {received(argument, pair)}"
            )
        variables, values = list(pair[0]), list(pair[1])
        if len(variables) != len(values):
            raise InvalidArgumentError(
                f"{call} needs one value per variable. Received: {len(variables)} variables "
                f"and {len(values)} values."
            )
        return variables, values

    def _stateless_index(self, argument: str, variables: list[Any]) -> int:
        for index, variable in enumerate(variables):
            if variable is self.step:
                return index
        raise InvalidArgumentError(
            f"`Clock(name={self.name!r}).stateless_copy({argument}=...)`: the clock's step "
            f"is not among the {len(variables)} variables given; pass the state of an "
            "optimizer on this clock (`optimizer.variables`) or of a model holding a "
            "hyperparameter on it (`model.non_trainable_variables`). Received: variables "
            f"{[getattr(v, 'path', v) for v in variables]}"
        )

    # ---- saving -------------------------------------------------------------------------
    def load_own_variables(self, store: Any) -> None:
        """Load ``step`` and the epoch's variables; a clock saved before the epoch's
        variables existed (``step`` alone) loads its step and starts epochs at 0."""
        for index, variable in enumerate(self.weights):
            if str(index) in store:
                variable.assign(store[str(index)])

    # ---- config -------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config["steps_per_epoch"] = self._steps_per_epoch
        return config

    def __repr__(self) -> str:
        return f"Clock(steps_per_epoch={self._steps_per_epoch!r}, name={self.name!r})"


def _positive(variable: Any) -> bool:
    """Whether an integer variable is concretely > 0 (False in a traced step)."""
    value = variable.value  # (int(variable) fails on a tf.distribute MirroredVariable)
    return backends.concrete(value) and int(ops.convert_to_numpy(value)) > 0


def _not_after(since: Any) -> bool:
    """Whether every concrete ``step - epoch_start`` is <= 0 (False in a traced step)."""
    if not backends.concrete(since):
        return False
    return bool((ops.convert_to_numpy(since) <= 0).all())


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
