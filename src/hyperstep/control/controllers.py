"""Metric-driven controllers: :class:`ReduceOnPlateau` multiplies a hyperparameter's scale.

A controller never rebinds a value and never touches the schedule: it ``assign``s
``target.scale``, so the schedule keeps running underneath, nothing retraces, and its own
state (``best``, ``wait``, ``cooldown``, ``reductions``) lives in variables created with
``target.add_state`` -- saved and restored with the hyperparameter and kept across ``fit()``
calls.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import keras
import numpy as np
from keras import ops

from hyperstep import backends
from hyperstep.backends.scopes import concrete as is_concrete
from hyperstep.clock import check_step
from hyperstep.control.epochs import epoch_began, fit_began
from hyperstep.control.hyperparameter import controlled_hyperparameter
from hyperstep.control.plateau import RULES, PlateauParams, PlateauState
from hyperstep.control.reading import epoch_values, savers_before
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.schedules.checks import check_choice

__all__ = ["ReduceOnPlateau"]

MODES = ("auto", "min", "max")
# default (min_delta, rtol) of each rule: Keras's absolute 1e-4, torch's and optax's relative 1e-4
_THRESHOLDS = {None: (1e-4, 0.0), "keras": (1e-4, 0.0), "torch": (0.0, 1e-4), "optax": (0.0, 1e-4)}
_INCREASING = ("accuracy", "acc", "auc", "precision", "recall", "f1_score", "iou")


class ReduceOnPlateau(keras.callbacks.Callback):
    """Multiply a hyperparameter's ``scale`` by ``factor`` when a metric stops improving.

    ``effective = schedule(step) * scale``; a reduction does ``scale.assign(scale * factor)``.
    The default rule (``compat=None``) is :func:`~hyperstep.control.plateau.default_rule`, in
    ``min`` mode (``max`` mirrors it). Its floor keeps the value at the current step from
    going below ``min_value`` through a reduction (the schedule itself may later go lower),
    and the scale never rises.

    * NaN or +-inf metrics count as "no improvement" and never become ``best`` (a warning
      when the value is concrete); the state stays finite.
    * while an override is set (``target.set(v)``) reductions still multiply the scale;
      they show once the override is cleared (floors use ``schedule * scale``).

    ``compat`` picks a peer's rule exactly, one function of
    :mod:`hyperstep.control.plateau` each: ``"keras"`` (``keras.callbacks.ReduceLROnPlateau``,
    :func:`~hyperstep.control.plateau.keras_rule`), ``"torch"``
    (:func:`~hyperstep.control.plateau.torch_rule`; ``rtol`` is torch's ``threshold`` with
    ``threshold_mode="rel"``, ``min_delta`` with ``"abs"``) and ``"optax"``
    (:func:`~hyperstep.control.plateau.optax_rule`; ``min`` mode only, ``min_value`` 0).

    ``min_delta``/``rtol`` left as ``None`` take the rule's own default: ``min_delta=1e-4``
    (absolute) for the default and Keras rules, ``rtol=1e-4`` (relative) for torch and optax
    (with ``compat="torch"``, giving only ``min_delta`` means ``threshold_mode="abs"``).

    The object is a Keras callback: ``model.fit(..., callbacks=[plateau])`` calls
    :meth:`update` with ``logs[monitor]`` at each epoch end (an error lists the log keys if
    ``monitor`` is missing) and first writes ``logs[target.name]``, the value the epoch
    trained with, for History, CSVLogger and TensorBoard (as Keras's ``ReduceLROnPlateau``
    and, in any order, :class:`~hyperstep.callbacks.LogHyperparameters`). Unlike
    Keras, ``on_train_begin`` does not reset the state; call :meth:`reset` to do so. In a
    custom loop, call :meth:`update` eagerly or inside a ``tf.function``.

    Resume is exact in any callback order: for a validation metric (``val_...``) the
    decision is taken when ``fit``'s validation ends (``on_test_end``, which every callback
    gets before any ``on_epoch_end``), so ``BackupAndRestore`` and ``ModelCheckpoint`` always
    save it. A training metric (``loss``) is known only at epoch end: then this callback must
    be listed before those two, else ``fit`` fails at its start with an error naming the
    order (before any state is saved).

    Args:
        target: The :class:`hyperstep.Hyperparameter` to control (or a scheduled optimizer,
            meaning its ``learning_rate``).
        monitor: The ``fit`` log key to watch.
        factor: Multiplier applied at each reduction, ``0 < factor < 1``.
        patience: Non-improving updates before a reduction (see the rule above).
        cooldown: Updates after a reduction during which bad values are not counted.
        min_delta: Absolute improvement threshold (``None``: the rule's default).
        min_value: Floor on the effective value, applied by reductions.
        mode: ``"min"``, ``"max"`` or ``"auto"`` (min for names ending in ``loss``, max for
            accuracy-like names, else the Keras metric's direction under ``fit``).
        compat: ``None``, ``"keras"``, ``"torch"`` or ``"optax"``.
        rtol: Relative improvement threshold (``None``: the rule's default).
        min_scale: Floor on the scale.
        eps: torch's minimal change (``compat="torch"`` only).
        name: Prefix of the state variables (two controllers on one target need two names).
        verbose: 1 prints a line at each reduction under ``fit``.

    Raises:
        InvalidArgumentError: On a value outside the ranges above.
        InvalidTypeError: If ``target`` is not a hyperparameter.

    Example:
        >>> import hyperstep as hs
        >>> lr = hs.Hyperparameter(0.1, name="learning_rate")
        >>> plateau = hs.ReduceOnPlateau(lr, monitor="val_loss", factor=0.5, patience=1)
        >>> for loss in [1.0, 0.5, 0.6, 0.7]:
        ...     _ = plateau.update(loss)
        >>> round(float(lr.value), 6), plateau.reductions, plateau.best
        (0.025, 2, 0.5)
    """

    def __init__(
        self,
        target: Any,
        monitor: str = "val_loss",
        factor: float = 0.1,
        patience: int = 10,
        cooldown: int = 0,
        min_delta: float | None = None,
        min_value: float = 0.0,
        mode: str = "auto",
        compat: str | None = None,
        *,
        rtol: float | None = None,
        min_scale: float = 0.0,
        eps: float = 1e-8,
        name: str = "plateau",
        verbose: int = 0,
    ) -> None:
        super().__init__()
        self.target = controlled_hyperparameter(target)
        if compat not in RULES:
            raise InvalidArgumentError(
                f"`ReduceOnPlateau(compat=...)` must be one of {list(RULES)}. "
                f"{received('compat', compat)}"
            )
        check_choice("ReduceOnPlateau", "mode", mode, MODES)
        if not isinstance(monitor, str) or not monitor:
            raise InvalidArgumentError(
                f"`ReduceOnPlateau(monitor=...)` must be a log key such as 'val_loss'. "
                f"{received('monitor', monitor)}"
            )
        if not (isinstance(factor, (int, float)) and 0.0 < factor < 1.0):
            raise InvalidArgumentError(
                "`ReduceOnPlateau(factor=...)` must be a number with 0 < factor < 1 "
                f"(a reduction multiplies the scale by it). {received('factor', factor)}"
            )
        default_delta, default_rtol = _THRESHOLDS[compat]
        if compat == "torch" and min_delta is not None and rtol is None:
            default_rtol = 0.0  # min_delta alone means threshold_mode="abs"
        self.min_delta = _non_negative(
            "min_delta", default_delta if min_delta is None else min_delta
        )
        self.rtol = _non_negative("rtol", default_rtol if rtol is None else rtol)
        if self.rtol > 1.0:
            raise InvalidArgumentError(
                f"`ReduceOnPlateau(rtol=...)` must be at most 1. {received('rtol', rtol)}"
            )
        self.min_value = _non_negative("min_value", min_value)
        self.min_scale = _non_negative("min_scale", min_scale)
        self.eps = _non_negative("eps", eps)
        self.patience = check_step("ReduceOnPlateau", "patience", patience)
        self.cooldown = check_step("ReduceOnPlateau", "cooldown", cooldown)
        _check_compat(compat, self.min_delta, self.rtol, self.min_value)
        self.monitor, self.factor, self.mode, self.compat = monitor, float(factor), mode, compat
        self.name, self.verbose = name, verbose
        # fit's progress: the epoch running and the last one decided by on_test_end
        self._fitting = False
        self._epoch: int | None = None
        self._decided: int | None = None
        self._sign: float | None = _direction_from_name(monitor, mode)
        if compat == "optax" and self._sign == -1.0:
            raise _optax_max_error(monitor, mode)
        # ``best`` is stored for minimisation: sign * value, so it always starts at +inf.
        #: the rule of ``compat`` (:data:`hyperstep.control.plateau.RULES`), chosen once
        self.rule = RULES[compat]
        # Keras's own reduction `lr = max(lr * factor, min_lr)` is assigned as that number
        self._assigns_value = compat == "keras"
        #: the rule's state in variables, the target's ``scale`` among them
        self._state = PlateauState(
            best=self.target.add_state(f"{name}_best", math.inf, "float32"),
            wait=self.target.add_state(f"{name}_wait", 0, "int64"),
            cooldown=self.target.add_state(f"{name}_cooldown", 0, "int64"),
            scale=self.target.scale,
            reductions=self.target.add_state(f"{name}_reductions", 0, "int64"),
        )

    # ---- state ------------------------------------------------------------------------------
    @property
    def best(self) -> float:
        """The best value seen so far (``+inf`` in min mode, ``-inf`` in max, before any)."""
        return (self._sign or 1.0) * float(ops.convert_to_numpy(self._state.best))

    @property
    def wait(self) -> int:
        """Non-improving updates counted since the last improvement or reduction."""
        return int(ops.convert_to_numpy(self._state.wait))

    @property
    def cooldown_counter(self) -> int:
        """Updates of cooldown left."""
        return int(ops.convert_to_numpy(self._state.cooldown))

    @property
    def reductions(self) -> int:
        """How many reductions lowered the scale so far."""
        return int(ops.convert_to_numpy(self._state.reductions))

    @property
    def variables(self) -> list[Any]:
        """The state variables (they are also in ``target.variables``)."""
        return [v for v in self._state if v is not self.target.scale]

    def reset(self) -> None:
        """Forget ``best``, ``wait`` and the cooldown (the scale and ``reductions`` stay)."""
        self._state.best.assign(math.inf)
        self._state.wait.assign(0)
        self._state.cooldown.assign(0)

    # ---- the rule -----------------------------------------------------------------------------
    def update(self, value: Any, reduce: str | None = "mean") -> Any:
        """Feed one metric value; return a bool tensor, True if the scale was lowered.

        Runs eagerly or inside ``tf.function`` (``value`` may be a tensor): the rule is
        written with ``keras.ops`` on the state variables, with no Python branch on a tensor.

        Under ``tf.distribute`` the value is first reduced across replicas and workers
        (``reduce="mean"`` or ``"sum"``; see :func:`hyperstep.control.distribute.reduce_metric`),
        so every worker takes the same decision: inside ``strategy.run`` by ``all_reduce``,
        outside it across workers (every worker must then call ``update``). ``reduce=None``
        trusts the value to be equal everywhere already. Without a strategy it does nothing.
        """
        if value is None or isinstance(value, (str, bytes, bool, dict, list, tuple)):
            raise InvalidTypeError(
                f"`ReduceOnPlateau.update(value=...)` takes the monitored metric, a number or "
                f"a scalar tensor. {received('value', value)}"
            )
        value = _reduce(value, reduce, self.target.scale)
        sign = self._direction()
        concrete = _concrete_float(value)
        if concrete is not None and not math.isfinite(concrete):
            warnings.warn(
                f"ReduceOnPlateau(monitor={self.monitor!r}) received a non-finite value "
                f"({concrete}); it counts as no improvement and does not change `best`.",
                RuntimeWarning,
                stacklevel=2,
            )
        x = ops.reshape(ops.cast(ops.convert_to_tensor(value), "float32"), ()) * sign
        state = PlateauState(*(ops.convert_to_tensor(v) for v in self._state))
        new = self.rule(state, x, self._params(sign))
        lowered = ops.less(new.scale, state.scale)
        if self._assigns_value and is_concrete(lowered) and bool(ops.convert_to_numpy(lowered)):
            # Keras's ReduceLROnPlateau: `opt.learning_rate = max(float(lr) * factor, min_lr)`,
            # which reads back exactly float32 of that number (Hyperparameter.assign)
            old = float(ops.convert_to_numpy(self.target.value))
            self.target.assign(max(old * self.factor, self.min_value))
        else:
            self.target.scale.assign(new.scale)
        for variable, value in zip(self._state, new, strict=True):
            if variable is not self.target.scale:  # (assigned above)
                variable.assign(value)
        return lowered

    def _params(self, sign: float) -> PlateauParams:
        """The rule's constants, and the value the scale multiplies at this step."""
        base = ops.cast(self.target.base_at(self.target.clock.step), "float32")
        return PlateauParams(
            factor=self.factor,
            patience=self.patience,
            cooldown=self.cooldown,
            min_delta=self.min_delta,
            rtol=self.rtol,
            min_value=self.min_value,
            min_scale=self.min_scale,
            eps=self.eps,
            sign=sign,
            base=base,
        )

    def _direction(self) -> float:
        if self._sign is None and self._model is not None:
            self._sign = _direction_from_model(self._model, self.monitor)
            if self.compat == "optax" and self._sign == -1.0:
                raise _optax_max_error(self.monitor, self.mode)
        if self._sign is None:
            raise InvalidArgumentError(
                f"ReduceOnPlateau cannot tell whether monitor={self.monitor!r} should go down "
                "or up. Pass mode='min' or mode='max'. Received: mode='auto'"
            )
        return self._sign

    # ---- Keras callback -------------------------------------------------------------------------
    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        """Follow fit's epochs (the clock learns ``steps_per_epoch`` from ``fit`` if it lacks
        it, see :class:`hyperstep.callbacks.FollowEpochs`); keep all state."""
        fit_began(self.model, self.params, [self.target.clock])
        ahead = [] if self.monitor.startswith("val_") else savers_before(self)
        if ahead:
            raise InvalidArgumentError(
                f"ReduceOnPlateau(monitor={self.monitor!r}) decides at each epoch end, after "
                f"{', '.join(ahead)} (listed before it) saved the epoch: a resumed run would "
                "miss that decision. List ReduceOnPlateau before BackupAndRestore and "
                f"ModelCheckpoint in `callbacks=[...]`. Received: callbacks with {ahead[0]} "
                "first"
            )
        self._fitting, self._epoch, self._decided = True, None, None

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self._fitting = False

    def on_epoch_begin(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        self._epoch = epoch
        epoch_began(self.model, epoch, [self.target.clock])

    def on_test_end(self, logs: dict[str, Any] | None = None) -> None:
        """Inside ``fit``, decide on a ``val_`` metric here: before any ``on_epoch_end``."""
        name = self.monitor.removeprefix("val_")
        epoch = self._epoch if self._fitting else None
        if epoch is not None and name != self.monitor and logs is not None and name in logs:
            epoch_values(self.target, epoch)  # noted before the decision changes it
            self._decide(epoch, logs[name])
            self._decided = epoch

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        logs = logs if logs is not None else {}
        if self.monitor not in logs:
            raise InvalidArgumentError(
                f"ReduceOnPlateau(monitor={self.monitor!r}) found no {self.monitor!r} in the "
                f"logs at the end of epoch {epoch}. Available keys: {sorted(logs)}. Pass "
                "validation data to fit() (every epoch) or monitor one of these keys."
            )
        # the value the epoch, ending now, trained with (before any change at its end)
        logs[self.target.name] = epoch_values(self.target, epoch)[self.target.name]
        if self._decided != epoch:  # else decided by on_test_end
            self._decide(epoch, logs[self.monitor])

    def _logged_hyperparameters(self) -> dict[str, Any]:
        """What ``on_epoch_end`` logs (``fit`` puts it into the logs before any callback)."""
        return {self.target.name: self.target}

    def _decide(self, epoch: int, value: Any) -> None:
        reduced = self.update(value)
        if self.verbose and bool(ops.convert_to_numpy(reduced)):
            value = float(ops.convert_to_numpy(self.target.value))
            print(
                f"\nEpoch {epoch + 1}: ReduceOnPlateau reducing {self.target.name} to {value:.6g}."
            )

    def __repr__(self) -> str:
        return (
            f"ReduceOnPlateau({self.target.name!r}, monitor={self.monitor!r}, "
            f"factor={self.factor}, patience={self.patience}, cooldown={self.cooldown}, "
            f"min_delta={self.min_delta}, min_value={self.min_value}, mode={self.mode!r}, "
            f"compat={self.compat!r}, rtol={self.rtol}, min_scale={self.min_scale})"
        )


def _reduce(value: Any, reduce: str | None, variable: Any) -> Any:
    """``value`` reduced across replicas and workers (TensorFlow); checked elsewhere."""
    if not backends.distributes():
        if reduce not in ("mean", "sum", None):
            raise InvalidArgumentError(
                "`ReduceOnPlateau.update(reduce=...)` must be 'mean', 'sum' or None. "
                f"{received('reduce', reduce)}"
            )
        return value
    from hyperstep.control.distribute import reduce_metric

    return reduce_metric(value, reduce, variable)


def _non_negative(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise InvalidArgumentError(
            f"`ReduceOnPlateau({name}=...)` must be a finite number >= 0. {received(name, value)}"
        )
    return float(value)


def _check_compat(compat: str | None, min_delta: float, rtol: float, min_value: float) -> None:
    if compat == "keras" and rtol > 0.0:
        raise InvalidArgumentError(
            "Keras's ReduceLROnPlateau has only an absolute threshold: with compat='keras' use "
            f"min_delta and leave rtol=None. {received('rtol', rtol)}"
        )
    if compat == "torch" and rtol > 0.0 and min_delta > 0.0:
        raise InvalidArgumentError(
            "torch's ReduceLROnPlateau has one threshold: with compat='torch' give rtol "
            "(threshold_mode='rel') or min_delta (threshold_mode='abs'), not both. "
            f"Received: rtol={rtol}, min_delta={min_delta}"
        )
    if compat == "optax":
        if rtol == 0.0 and min_delta == 0.0:
            raise InvalidArgumentError(
                "optax's reduce_on_plateau needs rtol > 0 or min_delta (atol) > 0. "
                f"Received: rtol={rtol}, min_delta={min_delta}"
            )
        if min_value > 0.0:
            raise InvalidArgumentError(
                "optax's reduce_on_plateau floors the scale, not the value: with "
                f"compat='optax' use min_scale=... instead. {received('min_value', min_value)}"
            )


def _optax_max_error(monitor: str, mode: str) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"optax's reduce_on_plateau minimises only: monitor={monitor!r} is maximised; with "
        f"compat='optax' negate the metric and use mode='min'. {received('mode', mode)}"
    )


def _direction_from_name(monitor: str, mode: str) -> float | None:
    if mode != "auto":
        return 1.0 if mode == "min" else -1.0
    name = monitor.removeprefix("val_")
    if name.endswith("loss") or name.endswith("error"):
        return 1.0
    if name.endswith(_INCREASING):
        return -1.0
    return None


def _direction_from_model(model: Any, monitor: str) -> float | None:
    name = monitor.removeprefix("val_")
    for metric in _flat_metrics(getattr(model, "metrics", [])):
        if getattr(metric, "name", None) == name and hasattr(metric, "_direction"):
            return -1.0 if metric._direction == "up" else 1.0
    return None


def _flat_metrics(metrics: Any) -> list[Any]:
    found: list[Any] = []
    for metric in metrics:
        inner = getattr(metric, "metrics", None)
        found.extend(_flat_metrics(inner) if isinstance(inner, list) and inner else [metric])
    return found


def _concrete_float(value: Any) -> float | None:
    """Return ``value`` as a Python float when it is concrete (not symbolic), else None."""
    if isinstance(value, (int, float, np.number, np.ndarray)):
        return float(np.asarray(value).reshape(()))
    if backends.builds_graph():
        return None
    try:
        return float(np.asarray(ops.convert_to_numpy(value)).reshape(()))
    except Exception:  # a tracer or a symbolic tensor: no warning possible
        return None
