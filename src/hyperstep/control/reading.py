"""Reading hyperparameters: ``collect`` them by name, ``read_all`` their values in one transfer,
``epoch_values`` the values the epoch ending now trained with (the one convention of every log).
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Mapping
from typing import Any

import keras
from keras import ops

from hyperstep.backends.fit import follow_epoch_ends, follow_fit
from hyperstep.control import wrapped
from hyperstep.control.hyperparameter import Hyperparameter
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received

__all__ = ["collect", "epoch_values", "read_all", "savers_before"]

#: hyperparameter -> (epoch, step, value) noted by the first read at an epoch's end
#: (:func:`epoch_values`); forgotten when a ``fit`` or one of its epochs begins
_EPOCH_VALUES: weakref.WeakKeyDictionary[Any, tuple[int, int, float]] = weakref.WeakKeyDictionary()


def collect(hyperparameters: Any, owner: str = "LogHyperparameters") -> dict[str, Any]:
    """Return ``{name: hyperparameter}`` from a hyperparameter, a list, a dict or an object
    with a ``.hyperparameters`` attribute (a scheduled optimizer).

    Raises:
        InvalidTypeError: If an entry is not a hyperparameter.
        InvalidArgumentError: If nothing is given or two entries share a name.
    """
    source = getattr(
        wrapped.hyperstep_optimizer(hyperparameters), "hyperparameters", hyperparameters
    )
    if isinstance(source, Hyperparameter):
        source = [source]
    if isinstance(source, Mapping):
        items = [(str(key), value) for key, value in source.items()]
    elif isinstance(source, (list, tuple)):
        items = [(getattr(value, "name", "?"), value) for value in source]
    else:
        raise InvalidTypeError(
            f"`{owner}(hyperparameters=...)` takes a hs.Hyperparameter, a list or dict of them, "
            "or a hs.scheduled optimizer. "
            f"Received: hyperparameters of type {type(hyperparameters).__name__}"
        )
    found: dict[str, Any] = {}
    for name, value in items:
        if not isinstance(value, Hyperparameter):
            raise InvalidTypeError(
                f"`{owner}(hyperparameters=...)` must hold hs.Hyperparameter objects. "
                f"Received: {name}={value!r}"
            )
        if name in found:
            raise InvalidArgumentError(
                f"`{owner}(hyperparameters=...)` has two hyperparameters named {name!r}; pass a "
                "dict to give them distinct names. "
                f"Received: names={[n for n, _ in items]}"
            )
        found[name] = value
    if not found:
        raise InvalidArgumentError(
            f"`{owner}(hyperparameters=...)` needs at least one hyperparameter. "
            f"{received('hyperparameters', hyperparameters)}"
        )
    return found


def savers_before(callback: Any) -> list[str]:
    """Names of the ``BackupAndRestore``/``ModelCheckpoint`` listed before ``callback`` in the
    ``fit`` whose ``on_train_begin`` is running (``[]`` outside ``fit``).

    Such a callback saves the training state at each epoch end *before* ``callback`` runs its
    ``on_epoch_end``; a decision ``callback`` takes there would be missing from the saved state
    and lost on resume. Keras gives a callback no handle on its list: it is read from the
    calling ``keras.callbacks.CallbackList`` (the frame that called ``on_train_begin``).
    """
    savers = (keras.callbacks.BackupAndRestore, keras.callbacks.ModelCheckpoint)
    frame = inspect.currentframe()
    try:
        caller = frame.f_back if frame is not None else None
        for _ in range(4):  # this helper <- on_train_begin (<- super()) <- CallbackList
            if caller is None:
                break
            owner = caller.f_locals.get("self")
            if isinstance(owner, keras.callbacks.CallbackList):
                listed = list(owner.callbacks)
                ahead = next((i for i, c in enumerate(listed) if c is callback), 0)
                return [type(c).__name__ for c in listed[:ahead] if isinstance(c, savers)]
            caller = caller.f_back
    finally:
        del frame
    return []


def read_all(hyperparameters: Any) -> dict[str, float]:
    """Return every effective value as a Python float, ``{name: value}``, in one transfer.

    Args:
        hyperparameters: A hyperparameter, a list or dict of them, or a scheduled optimizer.

    Example:
        >>> import hyperstep as hs
        >>> lr = hs.Hyperparameter(0.1, name="learning_rate")
        >>> beta = hs.Hyperparameter(0.9, name="beta_1", clock=lr.clock)
        >>> {k: round(v, 6) for k, v in read_all([lr, beta]).items()}
        {'learning_rate': 0.1, 'beta_1': 0.9}
    """
    found = collect(hyperparameters, owner="read_all")
    stacked = ops.stack([ops.cast(ops.reshape(hp.value, ()), "float32") for hp in found.values()])
    return dict(zip(found, (float(v) for v in ops.convert_to_numpy(stacked)), strict=True))


def epoch_values(hyperparameters: Any, epoch: int) -> dict[str, float]:
    """Return the values epoch ``epoch``, ending now, trained with: ``{name: value}``.

    The first call for a hyperparameter at an epoch's end reads its value
    (:func:`read_all`) and notes it; a later call for the same epoch at the same step
    returns the noted value. Every hyperstep logger and controller calls this at an
    epoch's end before it logs or changes a value, so History, CSVLogger and TensorBoard
    get the value before any change made at that epoch's end, whatever the callback
    order: what Keras's ``ReduceLROnPlateau`` records. The notes are forgotten when a
    ``fit`` or one of its epochs begins.

    Args:
        hyperparameters: A hyperparameter, a list or dict of them, or a scheduled optimizer.
        epoch: The index of the epoch ending (``on_epoch_end``'s).

    Example:
        >>> import hyperstep as hs
        >>> lr = hs.Hyperparameter(0.1, name="learning_rate")
        >>> round(epoch_values(lr, 0)["learning_rate"], 6)  # noted, before a controller acts
        0.1
        >>> _ = lr.scale.assign(0.5)  # the controller's change, at the same epoch's end
        >>> round(epoch_values(lr, 0)["learning_rate"], 6)  # what the epoch trained with
        0.1
        >>> round(epoch_values(lr, 1)["learning_rate"], 6)  # the next epoch's end reads again
        0.05
    """
    found = collect(hyperparameters, owner="epoch_values")
    values = read_all(found)
    for name, hyperparameter in found.items():
        step = int(ops.convert_to_numpy(hyperparameter.clock.step))
        noted = _EPOCH_VALUES.get(hyperparameter)
        if noted is not None and noted[:2] == (epoch, step):
            values[name] = noted[2]
        else:
            _EPOCH_VALUES[hyperparameter] = (epoch, step, values[name])
    return values


def _forget_epoch_values(model: Any, _: Any) -> None:
    _EPOCH_VALUES.clear()


def _epoch_ends(model: Any, epoch: int, logs: dict[str, Any], callbacks: list[Any]) -> None:
    """At each epoch's end of ``fit``, before any callback: note what every hyperparameter of
    the model's optimizers trained with, and put into ``logs`` the values that hyperstep's
    loggers and controllers in ``callbacks`` log (their ``_logged_hyperparameters()``), so
    a callback listed before them (Keras's ``CSVLogger``) records them too."""
    for optimizer in wrapped.hyperstep_optimizers(getattr(model, "optimizer", None)):
        if optimizer.hyperparameters:
            epoch_values(optimizer, epoch)
    for callback in callbacks:
        logged = getattr(callback, "_logged_hyperparameters", None)
        found = logged() if callable(logged) else None
        for name, value in epoch_values(found, epoch).items() if found else ():
            logs.setdefault(name, value)


def _trained_learning_rate(optimizer: Any) -> float | None:
    """The learning rate ``optimizer`` trained with in the epoch ending now, noted at its
    end (what Keras's ``TensorBoard`` then logs), or None."""
    hyperparameters = getattr(wrapped.hyperstep_optimizer(optimizer), "hyperparameters", {})
    hyperparameter = hyperparameters.get("learning_rate")
    if hyperparameter is None or hyperparameter not in _EPOCH_VALUES:
        return None
    _, step, value = _EPOCH_VALUES[hyperparameter]
    return value if step == int(ops.convert_to_numpy(hyperparameter.clock.step)) else None


follow_fit(_forget_epoch_values, _forget_epoch_values)
follow_epoch_ends(_epoch_ends, _trained_learning_rate)
