"""The saved state of a weight average (:class:`~hyperstep.SWA`, :class:`~hyperstep.EMA`).

One Keras layer attached to the optimizer holds ``n_averaged``, ``swapped``, one average
per trained variable (a teacher network's variables too, :meth:`hyperstep.EMA.network`)
and EMA's ``decay`` (a :class:`~hyperstep.Hyperparameter`), so the average is saved and
restored with the optimizer: by ``.keras`` (its config in the optimizer's), ``save_weights``
and ``tf.train.Checkpoint`` (docs/backends.md, "Saving"). The averages exist once the
optimizer is built (created at the first update, save or load).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import keras
from keras import ops

from hyperstep.backends import integer_dtype
from hyperstep.control.hyperparameter import Hyperparameter, track
from hyperstep.errors import InvalidArgumentError, received

__all__ = ["ATTRIBUTE", "AverageState", "attach", "config_of", "copy_of", "restore"]

ATTRIBUTE = "_hs_average_state"  # the optimizer's attribute (and .keras path) that holds it


@keras.saving.register_keras_serializable(package="hyperstep")
class AverageState(keras.layers.Layer):
    """``n_averaged``, ``swapped``, the averages and EMA's decay of one weight average.

    Example:
        >>> import hyperstep as hs
        >>> opt = hs.StepOptimizer("sgd")
        >>> state = hs.SWA(opt, start=5).state
        >>> state.get_config()["start"], int(state.n_averaged)
        (5, 0)
    """

    def __init__(
        self,
        kind: str,
        start: int = 0,
        every: int = 1,
        decay: Any = None,
        clock: Any = None,
        name: str = "average",
        init: str = "copy",
        form: str = "difference",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        for key, value in (("start", start), ("every", every)):  # (also as loaded from a file)
            low = 1 if key == "every" else 0
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value < 2**63:
                raise InvalidArgumentError(
                    f"`{kind.upper()}({key}=...)` must be an integer >= {low} and below 2**63 "
                    f"(a step). {received(key, value)}"
                )
        self.kind, self.start, self.every = kind, start, every
        self.init, self.form = init, form  # EMA: how it starts, which formula (EMA's docs)
        self.n_averaged = self.add_weight(
            shape=(), dtype=integer_dtype(), initializer="zeros", trainable=False, name="n_averaged"
        )
        self.swapped = self.add_weight(
            shape=(), dtype="bool", initializer="zeros", trainable=False, name="swapped"
        )
        self.decay: Hyperparameter | None = None
        if kind == "ema":
            self.decay = Hyperparameter(decay, clock=clock, name="ema_decay")
        self.averages: list[Any] = []
        self._optimizer: Any = None  # a weak reference, set by `attach`
        self._pending: tuple[Any, ...] = ()  # saved averages loaded before they existed
        self.built = True

    def build_averages(
        self, variables: Iterable[Any] | None = None, initial: Sequence[Any] | None = None
    ) -> list[Any]:
        """Create one average per variable (the optimizer's trained ones by default), zeros
        or the values ``initial`` (read when the averages are created)."""
        if not self.averages:
            if variables is None:
                optimizer = self._optimizer() if self._optimizer is not None else None
                if optimizer is None or not optimizer.built:
                    raise InvalidArgumentError(
                        f"{self.kind.upper()}: build the optimizer first (or pass `variables`)."
                    )
                variables = optimizer._trainable_variables
            variables = list(variables)
            values = [None] * len(variables) if initial is None else list(initial)
            self.averages = [
                self.add_weight(
                    shape=v.shape,
                    dtype=v.dtype,
                    initializer="zeros" if value is None else copy_of(value),
                    trainable=False,
                    name=f"{v.name.split('/')[-1]}_average",
                )
                for v, value in zip(variables, values, strict=True)
            ]
            self._track_averages()
        return self.averages

    def use_averages(self, variables: Sequence[Any]) -> None:
        """Make ``variables`` (a teacher network's) the averages: the values saved or held so
        far move into them first, and they are saved as this state's averages."""
        held = [ops.copy(a.value) for a in self.averages] if self.averages else None
        if held is not None:
            for variable, value in zip(variables, held, strict=True):
                variable.assign(value)
            for average in self.averages:  # no longer this layer's own weights
                self._untrack_variable(average)
        self.averages = list(variables)
        self._track_averages()

    def _track_averages(self) -> None:
        for index, average in enumerate(self.averages):  # restored now if pending
            track(self, f"average_{index}", average)
        pending, self._pending = self._pending, ()
        for average, value in zip(self.averages, pending, strict=False):
            average.assign(value)

    @property
    def stored(self) -> list[Any]:
        """What is saved, in order: ``n_averaged``, ``swapped``, then the averages."""
        return [self.n_averaged, self.swapped, *self.averages]

    def _build_if_possible(self) -> None:
        optimizer = self._optimizer() if self._optimizer is not None else None
        if not self.averages and optimizer is not None and optimizer.built:
            self.build_averages()

    def save_own_variables(self, store: Any) -> None:
        self._build_if_possible()
        for index, variable in enumerate(self.stored):
            store[str(index)] = variable

    def load_own_variables(self, store: Any) -> None:
        self._build_if_possible()
        own = self.stored
        if len(store.keys()) != len(own) and (self.averages or len(store.keys()) < len(own)):
            raise InvalidArgumentError(
                f"{self.kind.upper()}: the saved average holds {len(store.keys())} values and "
                f"this one {len(own)} (2 counters and one average per variable)."
            )
        # the optimizer is not built yet (an optimizer loaded on its own, as `pickle` does):
        # the counters now, the averages when they are created
        for index, variable in enumerate(own):
            variable.assign(store[str(index)])
        self._pending = tuple(store[str(i)][...] for i in range(len(own), len(store.keys())))

    def matches(self, other: AverageState) -> bool:
        """Whether ``other`` describes the same average (then it continues this one)."""
        return self.get_config() == other.get_config()

    def get_config(self) -> dict[str, Any]:
        decay = None
        if self.decay is not None:
            decay = keras.saving.serialize_keras_object(self.decay._raw_schedule)
        config = {
            "name": self.name,
            "kind": self.kind,
            "start": self.start,
            "every": self.every,
            "decay": decay,
        }
        if self.kind == "ema":
            config.update(init=self.init, form=self.form)
        return config

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> AverageState:
        config = dict(config)
        if config.get("decay") is not None:
            config["decay"] = keras.saving.deserialize_keras_object(config["decay"])
        return cls(**config)


def copy_of(value: Any) -> Any:
    """A Keras initializer that returns a copy of ``value`` (read when the variable is created,
    or lifted out of a ``tf.function`` that creates it)."""

    def initial(shape: Any, dtype: Any = None) -> Any:
        return ops.copy(ops.cast(ops.convert_to_tensor(value), dtype))

    return initial


def attach(optimizer: Any, state: AverageState) -> AverageState:
    """Make ``state`` the average saved with ``optimizer``; returns it."""
    state._optimizer = weakref.ref(optimizer)
    setattr(optimizer, ATTRIBUTE, state)  # on TensorFlow, also a checkpoint dependency
    return state


def config_of(optimizer: Any) -> dict[str, Any]:
    """``{"average": config}`` for an optimizer with an average, else ``{}``."""
    state = getattr(optimizer, ATTRIBUTE, None)
    return {} if state is None else {"average": state.get_config()}


def restore(optimizer: Any, config: Mapping[str, Any] | None) -> Any:
    """Attach the average ``config`` describes (:func:`config_of`); return ``optimizer``."""
    if config is not None:
        attach(optimizer, AverageState.from_config({**config, "clock": optimizer.clock}))
    return optimizer
