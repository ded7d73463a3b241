"""The doctor's entry point, ``hs.doctor``: validate, snapshot, gather facts, run the checks,
restore."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import keras

from hyperstep.backends import internals, random_state
from hyperstep.backends.doctor import tracer
from hyperstep.backends.fit import layers_of
from hyperstep.diagnosis import checks, probe
from hyperstep.diagnosis.report import Diagnosis
from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _validate(model: Any, data: Any, loss_fn: Any, var_list: Any) -> list[Any] | None:
    if not isinstance(model, keras.layers.Layer):
        raise InvalidTypeError(
            "`hs.doctor(model=...)` needs a Keras model or layer. "
            f"Received: model={_short(model)} of type {type(model).__name__}"
        )
    if data is None:
        raise InvalidArgumentError(
            "`hs.doctor(data=...)` needs one batch, e.g. data=(x, y) or a tf.data.Dataset. "
            + received("data", data)
        )
    if loss_fn is not None and not callable(loss_fn):
        raise InvalidTypeError(
            "`hs.doctor(loss_fn=...)` must be a function loss_fn(model, batch) -> loss. "
            + received("loss_fn", loss_fn)
        )
    if loss_fn is None and not getattr(model, "compiled", False):
        raise InvalidArgumentError(
            "`hs.doctor` needs a loss: compile the model with one for fit() "
            "(model.compile(optimizer=..., loss=...)), or pass "
            "loss_fn=lambda model, batch: ... for a custom loop. Received: loss_fn=None and "
            f"a model that is not compiled ({type(model).__name__} {model.name!r})"
        )
    if var_list is None:
        return None
    variables = list(var_list)
    for item in variables:
        if not (isinstance(item, keras.Variable) or tracer().is_raw_variable(item)):
            raise InvalidTypeError(
                "`hs.doctor(var_list=...)` must hold the variables the loop passes to the "
                f"optimizer. Received: an item {_short(item)} of type {type(item).__name__}"
            )
    return variables


def _state(model: Any, optimizer: Any, variables: list[Any] | None) -> list[Any]:
    return [
        *model.variables,
        *getattr(model, "metrics_variables", ()),
        *[b.variable for b in probe.bindings(model)],
        *(variables or ()),
        *(getattr(optimizer, "variables", None) or ()),
    ]


def doctor(
    model: Any,
    data: Any,
    *,
    loss_fn: Callable[[Any, Any], Any] | None = None,
    optimizer: Any = None,
    var_list: Sequence[Any] | None = None,
) -> Diagnosis:
    """Explain, from evidence, why each variable of ``model`` does or does not train.

    ``doctor(model, data) = Diagnosis(findings)``, one :class:`Finding` per problem, each
    with a stable code (:data:`CODES`), the variable's path, and what to type instead.
    The evidence is one eager forward and backward pass of the loss on one batch (which
    variables get a gradient, and whether it is exactly zero), the loss traced as a graph
    when a gradient is missing or zero (which op stops it, and where in your code), the
    layers' attributes compared with ``model.variables``, and the optimizer's state.
    Nothing changes: every variable of the model and the optimizer ends bit for bit as it
    started (BatchNormalization statistics and seed generators are put back), and so does
    every global random generator (Python's, NumPy's, Keras's, torch's and TensorFlow's), so
    a seeded ``fit`` after the doctor trains as it would without it.

    The codes: ``untracked`` (a raw ``tf.Variable`` on a layer, or a variable in a
    container Keras does not track), ``stale-in-optimizer`` (the optimizer or a cached
    ``model.train_function`` holds a variable that was since rebound), ``non-float-dtype``
    (trainable but not floating), ``not-trainable`` (``trainable=False`` although the loss
    has a gradient for it; only for your own layers' variables, never under a layer with
    ``trainable=False`` nor for Keras's own state such as BatchNormalization statistics),
    ``not-in-optimizer``, ``unused`` (no path to the loss), ``blocked`` (every path stops
    at ``stop_gradient`` or a non-differentiable op, which is named with your source
    line), ``zero-gradient`` (exactly 0 on this batch, e.g. dead ReLUs) and
    ``zero-learning-rate`` (0 at this step and, for a schedule, at the next); and about
    the batch itself (:data:`BATCH_CODES`, reported instead of any gradient finding):
    ``empty-batch`` (no rows) and ``nan-loss`` (the loss is NaN or infinite). The rules
    are in :mod:`hyperstep.diagnosis.checks`. A model whose ``train_step`` is overridden is
    diagnosed with the compiled loss; pass ``loss_fn`` to diagnose your own step.

    Args:
        model: A Keras model (or layer). Compiled with a loss for ``fit()`` style, or any
            model together with ``loss_fn`` for custom loops.
        data: One batch: ``(x, y)``, ``(x, y, sample_weight)``, ``x`` or a dict; or a
            ``tf.data.Dataset``, ``keras.utils.PyDataset`` or iterator, of which the first
            batch is used.
        loss_fn: ``loss_fn(model, batch) -> scalar loss`` for custom loops. Default: the
            loss ``fit()`` uses (``model.compute_loss`` on ``model(x, training=True)``).
        optimizer: The optimizer that trains the model. Default: ``model.optimizer``.
        var_list: The variables a custom loop passes to the optimizer. Default: all
            trainable variables.

    Returns:
        A :class:`Diagnosis`; ``diagnosis.ok`` is ``True`` when there are no findings.

    Raises:
        BackendError: Keras runs on another backend than TensorFlow, JAX or torch.
        InvalidTypeError: ``model`` is not a Keras layer or model.
        InvalidArgumentError: there is no loss (not compiled and no ``loss_fn``), or the
            loss cannot be computed on ``data``.

    Example:
        >>> import keras, numpy as np
        >>> import hyperstep as hs
        >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> x, y = np.ones((4, 3), "float32"), np.zeros((4, 1), "float32")
        >>> hs.doctor(model, (x, y)).ok
        True
    """
    tracer()  # refuses a backend the doctor does not run on (numpy, openvino)
    variables = _validate(model, data, loss_fn, var_list)
    if optimizer is None:
        optimizer = getattr(model, "optimizer", None)
    batch = probe.first_batch(data)
    compute = probe.loss_function(model, loss_fn)
    # what the loss builds (a compiled model's loss and metrics), fit must build again
    builds = internals.first_fit_builds(model) if isinstance(model, keras.Model) else []

    def checked(b: Any) -> Any:
        try:
            loss = compute(b)
        except Exception as error:
            raise InvalidArgumentError(
                f"`hs.doctor` could not compute the loss on `data`: {type(error).__name__}: {error}"
            ) from error
        if loss is None:
            raise InvalidArgumentError(
                "`hs.doctor` needs a loss, and the loss function returned None. "
                + received("loss", loss)
            )
        return loss

    if not all(getattr(layer, "built", True) for layer in layers_of(model)):
        # run the loss once, then put back every variable (new ones to their initial value)
        tracer().build(checked, batch, _state(model, optimizer, variables))
    saved = tracer().snapshot(_state(model, optimizer, variables))
    generators = random_state.capture()  # after a build, whose draws fit would make too
    try:
        facts = probe.collect(model, batch, checked, optimizer, variables)
        findings = checks.run_checks(facts)
    finally:
        tracer().restore(saved)
        random_state.restore(generators)
        internals.build_again_in_fit(builds)
    return Diagnosis(findings, variables=len(facts.variables), loss=facts.loss)
