"""The doctor's entry point: validate, snapshot, gather facts, run the checks, restore."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import keras

from hyperstep.backends.doctor import tracer
from hyperstep.doctor import checks, probe
from hyperstep.doctor.report import Diagnosis
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


def _global_seed_state() -> list[Any]:
    from hyperstep.backends.internals import global_seed_generator

    generator = global_seed_generator()
    if generator is None:
        return []
    state = getattr(generator, "state", None)
    return [] if state is None else [state]


def _state(model: Any, optimizer: Any, variables: list[Any] | None) -> list[Any]:
    return [
        *model.variables,
        *getattr(model, "metrics_variables", ()),
        *[b.variable for b in probe.bindings(model)],
        *(variables or ()),
        *(getattr(optimizer, "variables", None) or ()),
        *_global_seed_state(),
    ]


def diagnose(
    model: Any,
    data: Any,
    *,
    loss_fn: Callable[[Any, Any], Any] | None = None,
    optimizer: Any = None,
    var_list: Sequence[Any] | None = None,
) -> Diagnosis:
    """Run the doctor (see :func:`hyperstep.doctor.doctor`, which documents it)."""
    variables = _validate(model, data, loss_fn, var_list)
    if optimizer is None:
        optimizer = getattr(model, "optimizer", None)
    batch = probe.first_batch(data)
    compute = probe.loss_function(model, loss_fn)

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

    if not all(getattr(layer, "built", True) for layer in probe.layers_of(model)):
        # run the loss once, then put back every variable (new ones to their initial value)
        tracer().build(checked, batch, _state(model, optimizer, variables))
    saved = probe.snapshot(_state(model, optimizer, variables))
    try:
        facts = probe.collect(model, batch, checked, optimizer, variables, loss_fn is not None)
        findings = checks.run_checks(facts)
    finally:
        probe.restore(saved)
    return Diagnosis(findings, variables=len(facts.variables), loss=facts.loss)
