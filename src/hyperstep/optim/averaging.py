"""Weights to evaluate: schedule-free's ``x``, SWA's equal average, an EMA on a schedule.

Training updates one sequence of weights; evaluation and checkpoints often want another.
:class:`SWA` and :class:`EMA` keep one (saved with the optimizer); ``with
averaged_weights(source):`` and the callback :class:`AveragedWeights` exchange it with the
model's variables, bit for bit (:mod:`hyperstep.optim.average_exchange`). Usage:
docs/recipes.md, "Weight averaging".
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any, cast

import keras
from keras import ops

from hyperstep.backends.fit import layers_of
from hyperstep.clock import Clock
from hyperstep.control.epochs import epoch_began, fit_began
from hyperstep.control.hyperparameter import Hyperparameter
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.optim.average_exchange import (
    Average,
    average_of,
    averaged_weights,
    exchange,
    given_values,
)
from hyperstep.schedules import combinators, decays, families
from hyperstep.schedules.checks import check_choice
from hyperstep.schedules.expressions import as_schedule

__all__ = [
    "EMA",
    "SWA",
    "AveragedWeights",
    "averaged_weights",
    "refresh_batch_norm",
    "swa_learning_rate",
]


class SWA(Average):
    """Stochastic weight averaging: the equal average of the weights at due steps.

    ``avg = avg + (w - avg) / (n + 1)``, taken after the update that brings the clock to a
    step ``s`` with ``s >= start`` and ``(s - start) % every == 0``; ``n`` counts the
    weights averaged so far (``torch.optim.swa_utils.AveragedModel``). Pair it with
    :func:`swa_learning_rate`. As a Keras callback it updates after each batch of ``fit``;
    in a custom loop call :meth:`update` after each optimizer update. Saved with the
    optimizer; the same ``SWA(...)`` on a loaded optimizer continues it.

    Args:
        optimizer: A hyperstep optimizer (its clock decides the steps).
        start: The first step averaged.
        every: Average every ``every`` steps.

    Example:
        >>> import hyperstep as hs, keras
        >>> opt = hs.StepOptimizer("sgd", learning_rate=1.0)
        >>> w = keras.Variable([0.0])
        >>> swa = hs.SWA(opt, start=1)
        >>> for _ in range(3):
        ...     opt.apply([keras.ops.ones(1)], [w])
        ...     swa.update()
        >>> with hs.averaged_weights(opt):      # the average of -1, -2, -3
        ...     float(w.numpy()[0])
        -2.0
    """

    kind = "swa"

    def __init__(self, optimizer: Any, start: int = 0, every: int = 1) -> None:
        super().__init__(optimizer, start, every)

    def _weight(self, step: Any, n: Any) -> Any:
        return 1.0 / (ops.cast(n, "float32") + 1.0)


class EMA(Average):
    """An exponential moving average whose decay follows a schedule of the step.

    ``avg = avg + (w - avg) * (1 - decay(step))`` (``form="difference"``, TF1's
    ``ExponentialMovingAverage``) or ``avg = decay(step) * avg + (1 - decay(step)) * w``
    (``form="momentum"``: Keras's ``use_ema``, BYOL's and DINO's teachers) after each due
    update; ``decay`` is a number, a schedule or an expression, read on the optimizer's clock
    as a :class:`hyperstep.Hyperparameter` (so it can be set or scaled).

    The average starts (``init``) as a copy of the weights at the first due update
    (``"copy"``), as the weights before the first update (``"initial"``: TF1's
    ``ExponentialMovingAverage`` with ``num_updates=step`` bit for bit), or as given weights
    (a list, one per trained variable, or a ``keras.Model`` holding them, e.g. BYOL's
    independently initialized target or ``keras.models.clone_model(network)``).

    Updated by :meth:`update` after each update (or as a callback in ``fit``), it reads the
    clock then. :meth:`network` makes it a second network used inside the step (a teacher):
    then the optimizer's update updates it, at the update's own step.

    Without an optimizer (``optimizer=None``: a student trained by anything) the average
    reads ``clock`` (the training loop's, advanced by :meth:`hyperstep.Clock.iteration`),
    or a clock of its own that each :meth:`update` advances after averaging; call
    :meth:`update` after each update (also with a network), after :meth:`build` with the
    variables or :meth:`network`. Its state (:attr:`state`, a Keras layer) is then saved by
    whatever tracks it; a network's weights are the averages.

    Args:
        optimizer: A hyperstep optimizer, or ``None``.
        decay: The decay, e.g. ``"min(0.999, (1 + step) / (10 + step))"``.
        start: The first step averaged.
        every: Average every ``every`` steps.
        init: ``"copy"``, ``"initial"``, a list of weights or a ``keras.Model``.
        form: ``"difference"`` or ``"momentum"`` (the two roundings of the formula above).
        clock: Without an optimizer, the clock whose step the decay reads.

    Example:
        >>> import hyperstep as hs, keras
        >>> opt = hs.StepOptimizer("sgd", learning_rate=1.0)
        >>> ema = hs.EMA(opt, decay=0.5)
        >>> ema.decay.value.numpy().item()
        0.5
    """

    kind = "ema"

    def __init__(
        self,
        optimizer: Any = None,
        decay: Any = 0.999,
        start: int = 0,
        every: int = 1,
        init: Any = "copy",
        form: str = "difference",
        clock: Any = None,
    ) -> None:
        super().__init__(optimizer, start, every, decay, init=init, form=form, clock=clock)

    @property
    def decay(self) -> Hyperparameter:
        """The decay, a :class:`hyperstep.Hyperparameter` on the optimizer's clock."""
        return cast(Hyperparameter, self.state.decay)

    def _keep(self, step: Any, n: Any) -> Any:
        return self.decay.at(step)

    def _weight(self, step: Any, n: Any) -> Any:
        return 1.0 - self.decay.at(step)

    def network(self, model: Any) -> Any:
        """The average as a second network: a ``keras.Model`` of ``model``'s architecture
        whose trainable weights are the averages of ``model``'s.

        ``teacher = ema.network(student)`` is ``init`` when that is a model, else
        ``keras.models.clone_model(student)`` with the student's weights (and the given
        weights for a list). From now on the optimizer's update (``apply``, in ``fit`` or
        a custom loop; without an optimizer, :meth:`update`) updates the teacher right
        after it updates the weights, at that update's step ``t``: ``teacher = decay(t) *
        teacher + (1 - decay(t)) * student`` (``form="momentum"``) when ``t`` is due. Its
        weights are the average's, so they are saved and restored with the optimizer (and
        with any model that holds the teacher); ``network`` on a restored average continues
        it. Its non-trainable weights (BatchNorm statistics) are its own.

        Args:
            model: The student, a built ``keras.Model`` whose trainable weights the
                optimizer updates.

        Returns:
            The teacher, a ``keras.Model`` (the same one on every call).

        Raises:
            TypeError: If ``model`` is not a built ``keras.Model``.
            ValueError: For a second student, ``init`` weights of other shapes, or an ``init``
                model holding the student's own weights (the student itself).

        Example:
            >>> import hyperstep as hs, keras, numpy as np
            >>> student = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
            >>> opt = hs.StepOptimizer("sgd", learning_rate=0.1)
            >>> ema = hs.EMA(opt, decay=0.9, init="initial", form="momentum")
            >>> teacher = ema.network(student)
            >>> opt.apply([keras.ops.ones_like(v) for v in student.trainable_variables],
            ...           student.trainable_variables)
            >>> bias = teacher.trainable_variables[1]  # 0.9 * 0 + 0.1 * -0.1
            >>> round(float(bias.numpy()[0]), 6)
            -0.01
        """
        if self._network is not None:
            if model is self._student:
                return self._network
            raise InvalidArgumentError(
                "`EMA.network(model)` was already called with another model; one EMA averages "
                f"one student. {received('model', model)}"
            )
        if not isinstance(model, keras.Model) or not model.built:
            raise InvalidTypeError(
                "`EMA.network(model)` takes a built `keras.Model` (the student). "
                + received("model", model)
            )
        variables = list(model.trainable_variables)
        if isinstance(self._given, keras.Model):
            teacher = self._given
            student_ids = {id(v) for v in variables}
            if any(id(v) in student_ids for v in teacher.trainable_variables):
                raise InvalidArgumentError(
                    "`EMA(init=...)` holds the student's own weights, so the teacher would be "
                    "the student. Pass a copy: `init=keras.models.clone_model(student)`. "
                    f"{received('init', self._given)}"
                )
        else:
            teacher = keras.models.clone_model(model)
            teacher.set_weights(model.get_weights())
        targets = list(teacher.trainable_variables)
        if [tuple(v.shape) for v in targets] != [tuple(v.shape) for v in variables]:
            raise InvalidArgumentError(
                "`EMA.network(model)`: the teacher's trainable weights must match the "
                f"student's. Received: shapes {[tuple(v.shape) for v in targets]} for "
                f"{[tuple(v.shape) for v in variables]}."
            )
        held = self.state.averages or self.state._pending
        if held and len(held) != len(targets):
            if int(ops.convert_to_numpy(self.n_averaged)) > 0:
                raise InvalidArgumentError(
                    f"`EMA.network(model)`: the average holds {len(held)} weights and the "
                    f"model has {len(targets)} trainable weights."
                )
            self.state.averages, self.state._pending = [], ()  # nothing averaged yet
        elif not held and isinstance(self._given, (list, tuple)):
            given = given_values(self._given, variables, "EMA")
            for target, value in zip(targets, given, strict=True):
                target.assign(value)
        self.state.use_averages(targets)
        self.variables = variables
        self._network, self._student = teacher, model
        self.follows_apply = self.optimizer is not None  # else `update()` after each update
        return teacher


def swa_learning_rate(
    before: Any, swa_lr: float, start: int, anneal_steps: int = 10, anneal_strategy: str = "cos"
) -> Any:
    """The learning rate of ``before`` until ``start``, then annealed to ``swa_lr`` (SWALR).

    ``lr(start + s) = swa_lr * a + lr0 * (1 - a)``, ``a = (1 - cos(pi * t)) / 2`` (``"cos"``)
    or ``t`` (``"linear"``), ``t = min(s / anneal_steps, 1)``, ``lr0 = before(start)``:
    ``torch.optim.swa_utils.SWALR`` stepped once per step from ``start``
    (``anneal_steps=0``: ``swa_lr`` from ``start`` on, as SWALR's ``anneal_epochs=0``).

    Raises:
        ValueError: Where SWALR raises (``anneal_strategy`` not ``"cos"``/``"linear"``,
            ``anneal_steps`` not an ``int`` or below 0), or ``start`` not an int >= 0.
        TypeError: For a ``swa_lr`` that is not a number.

    Example:
        >>> lr = swa_learning_rate(0.1, swa_lr=0.05, start=100, anneal_steps=10)
        >>> [round(float(lr(s)), 4) for s in (99, 100, 105, 110, 200)]
        [0.1, 0.1, 0.075, 0.05, 0.05]
    """
    check_choice("swa_learning_rate", "anneal_strategy", anneal_strategy, ("cos", "linear"))
    if not isinstance(anneal_steps, int) or anneal_steps < 0:  # torch's check (True is 1)
        raise InvalidArgumentError(
            "`swa_learning_rate(anneal_steps=...)` must be an integer >= 0 (as SWALR's "
            f"anneal_epochs). {received('anneal_steps', anneal_steps)}"
        )
    if isinstance(swa_lr, bool) or not isinstance(swa_lr, numbers.Real):
        raise InvalidTypeError(
            f"`swa_learning_rate(swa_lr=...)` must be a number. {received('swa_lr', swa_lr)}"
        )
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise InvalidArgumentError(
            "`swa_learning_rate(start=...)` must be an integer >= 0 (the step SWA starts "
            f"at). {received('start', start)}"
        )
    before = as_schedule(before, name="before")
    lr0 = float(ops.convert_to_numpy(before(start)))
    if anneal_steps == 0:  # SWALR(anneal_epochs=0): swa_lr from the first step on
        anneal = as_schedule(float(swa_lr), name="swa_lr")
    elif anneal_strategy == "cos":
        anneal = families.cosine(lr0, steps=int(anneal_steps), end=swa_lr)
    else:
        anneal = decays.linear(lr0, swa_lr, steps=int(anneal_steps))
    return combinators.join([before, anneal], [start])


class AveragedWeights(keras.callbacks.Callback):
    """Evaluate, predict and save with the averaged weights inside ``fit``.

    The averaged weights are exchanged in for ``evaluate`` and ``predict`` (also fit's
    validation), and at the end of each epoch, so callbacks listed after this one
    (``ModelCheckpoint``) save them; the training weights come back when the next epoch
    begins. With ``at_end="averaged"`` the model keeps the averaged weights after ``fit``.

    Args:
        source: As for :func:`averaged_weights` (built lazily: the optimizer is built by
            ``fit``).
        at_end: ``"averaged"`` or ``"training"``: the weights left after ``fit``.

    Example:
        >>> import hyperstep as hs
        >>> opt = hs.StepOptimizer(hs.rules.ScheduleFreeAdamWRule())
        >>> hs.callbacks.AveragedWeights(opt).at_end
        'averaged'
    """

    def __init__(self, source: Any, at_end: str = "averaged") -> None:
        super().__init__()
        self.source = source
        self.at_end = check_choice("AveragedWeights", "at_end", at_end, ("averaged", "training"))
        self._moved = False

    def _to(self, averaged: bool, warn: bool = False) -> bool:
        optimizer = getattr(self.source, "optimizer", self.source)
        if not getattr(optimizer, "built", False):
            return False
        return exchange(self.source, averaged, warn=warn)

    def on_train_begin(self, logs: Any = None) -> None:
        average = average_of(self.source)
        if average is not None and not average.follows_apply and average.fit_model is None:
            kind = average.kind
            raise InvalidArgumentError(
                f"`AveragedWeights`: the `hs.{kind.upper()}` of this optimizer is not among "
                "`fit`'s callbacks, so it would average nothing. Pass it too: "
                f"`{kind} = hs.{kind.upper()}(opt, ...)` and `model.fit(..., callbacks=[{kind}, "
                f"hs.callbacks.AveragedWeights(opt)])`. Received: callbacks without the {kind}."
            )
        fit_began(self.model, self.params, _clocks(self.source))
        self._to(False)

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        epoch_began(self.model, epoch, _clocks(self.source))
        self._to(False)

    def on_test_begin(self, logs: Any = None) -> None:
        self._moved = self._to(True)

    def on_test_end(self, logs: Any = None) -> None:
        if self._moved:
            self._to(False)
            self._moved = False

    on_predict_begin = on_test_begin
    on_predict_end = on_test_end

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self._to(True)

    def on_train_end(self, logs: Any = None) -> None:
        self._to(self.at_end == "averaged", warn=True)


def _clocks(source: Any) -> list[Any]:
    """The clock of ``source`` (an optimizer, or a model's optimizer), if it has one."""
    clock = getattr(getattr(source, "optimizer", source), "clock", None)
    return [clock] if isinstance(clock, Clock) else []


def refresh_batch_norm(model: Any, data: Iterable[Any]) -> None:
    """Recompute every BatchNormalization layer's statistics over ``data`` (``update_bn``).

    ``moving_mean`` and ``moving_variance`` become the equal averages over the batches of
    the batch mean and (biased, as Keras's training uses) batch variance, computed in
    training mode at the weights now in the model (call it inside
    :func:`averaged_weights`). Weights other than the statistics do not change.

    Args:
        model: A Keras model.
        data: An iterable of input batches, or of ``(inputs, ...)`` tuples.
    """
    layers = [
        layer for layer in layers_of(model) if isinstance(layer, keras.layers.BatchNormalization)
    ]
    if not layers:
        return
    momenta = [layer.momentum for layer in layers]
    try:
        for n, batch in enumerate(data):
            inputs = batch[0] if isinstance(batch, tuple | list) else batch
            for layer in layers:
                layer.momentum = n / (n + 1)  # moving = (n * moving + batch) / (n + 1)
            model(inputs, training=True)
    finally:
        for layer, momentum in zip(layers, momenta, strict=True):
            layer.momentum = momentum
