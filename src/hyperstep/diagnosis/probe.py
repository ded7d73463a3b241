"""Facts about a model's variables, gathered from evidence, never guessed.

The doctor's checks read only what this module measures, on every Keras backend (the
backend's own evidence comes from :func:`hyperstep.backends.doctor.tracer`):

* **bindings**: every ``keras.Variable`` and raw variable (TF: ``tf.Variable``; torch:
  ``torch.nn.Parameter``; JAX: a floating ``jax.Array``) reachable from a layer's
  attributes (and lists, tuples, dicts and modules inside them), each named
  ``<layer.path>/<attribute>``; compared by identity with ``model.variables`` they show
  untracked and rebound variables;
* **the batch**: empty (a leading dimension of 0), or a loss that is not finite;
* **gradients**: one forward and backward pass of the loss on the given batch with the
  backend's own gradients (``tf.GradientTape``, ``jax.value_and_grad``,
  ``torch.autograd.grad``), every floating variable measured (trainable or not), gives for
  each variable "no gradient", "exactly zero" or "non-zero";
* **paths** (traced only when some gradient is missing or zero): which op stops the
  gradient, and where in the user's code (TF: :class:`hyperstep.diagnosis.graph.GraphFacts`;
  JAX and torch: :class:`hyperstep.diagnosis.paths.TraceFacts`);
* **optimizer**: the variables a built optimizer tracks, the variables captured by a cached
  ``model.train_function``, and the learning rate at the current and the next step.

Every pass that could change state (``training=True`` updates BatchNormalization
statistics and advances seed generators) runs between :func:`snapshot` and
:func:`restore`, so the model and the optimizer end bit for bit as they started.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import keras
import numpy as np

from hyperstep.backends.doctor import tracer
from hyperstep.diagnosis.bindings import (
    Binding,
    bindings,
    is_float,
    is_keras_class,
    key,
    layers_of,
    underlying,
)
from hyperstep.diagnosis.optimizer_facts import (
    LearningRate,
    learning_rates,
    optimizer_variables,
    train_function_variables,
)
from hyperstep.diagnosis.paths import PathFact, TraceFacts


def first_batch(data: Any) -> Any:
    """Return one batch: the first element of a ``tf.data.Dataset``, ``PyDataset``, torch
    ``DataLoader`` or iterator, or ``data`` itself (an array, a tuple
    ``(x, y[, sample_weight])`` or a dict)."""
    backend = tracer()
    if backend.is_dataset(data):
        batch = next(iter(data))
    elif isinstance(data, keras.utils.PyDataset):
        batch = data[0]
    elif isinstance(data, Iterator):
        batch = next(data)
    elif type(data).__name__ == "DataLoader" and hasattr(data, "__iter__"):
        batch = next(iter(data))
    else:
        batch = data
    return backend.numpy_batch(batch)


def empty_batch(batch: Any) -> tuple[int, ...] | None:
    """The shape of the first array in ``batch`` with no rows (``None`` when none is empty)."""
    for item in keras.tree.flatten(batch):
        shape = getattr(item, "shape", None)
        if shape is not None and len(shape) > 0 and shape[0] == 0:
            return tuple(int(d) if d is not None else -1 for d in shape)
    return None


def loss_function(model: Any, loss_fn: Callable[..., Any] | None) -> Callable[[Any], Any]:
    """Return ``batch -> loss``: ``loss_fn(model, batch)``, or the compiled loss of ``fit()``."""
    if loss_fn is not None:
        return lambda batch: loss_fn(model, batch)

    def compiled(batch: Any) -> Any:
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(batch)
        if getattr(model, "_call_has_training_arg", True):
            y_pred = model(x, training=True)
        else:
            y_pred = model(x)
        return model._compute_loss(
            x=x, y=y, y_pred=y_pred, sample_weight=sample_weight, training=True
        )

    return compiled


def snapshot(variables: Iterable[Any]) -> list[tuple[Any, Any]]:
    """Copy the value of every distinct variable, for :func:`restore`."""
    return list(tracer().snapshot(variables))


def restore(saved: list[tuple[Any, Any]]) -> None:
    """Assign back the values copied by :func:`snapshot`."""
    tracer().restore(saved)


def _split(variables: list[Any], found: dict[int, Binding]) -> tuple[list[Any], list[Any]]:
    """Keras variables, and raw ones as bindings (a ``var_list`` item found nowhere gets a
    binding with no holder)."""
    tracked, raw = [], []
    for variable in variables:
        if isinstance(variable, keras.Variable):
            tracked.append(variable)
        else:
            raw.append(found.get(key(variable)) or types.SimpleNamespace(variable=variable))
    return tracked, raw


def gradient_kinds(
    compute: Callable[[Any], Any],
    batch: Any,
    variables: list[Any],
    found: dict[int, Binding] | None = None,
) -> tuple[float, dict[int, str]]:
    """Run the loss and its gradient once, with the backend's own gradients.

    Returns:
        The loss value, and for each floating variable's :func:`key` one of ``"none"``
        (no gradient), ``"zero"`` (exactly zero everywhere) or ``"nonzero"``.
    """
    tracked, raw = _split([v for v in variables if is_float(v)], found or {})
    loss, kinds = tracer().gradient_kinds(compute, batch, tracked, raw)
    if loss is None:
        raise TypeError("the loss is None")
    value = float(np.sum(np.asarray(keras.ops.convert_to_numpy(loss), dtype=np.float64)))
    return value, kinds


@dataclasses.dataclass
class VariableFact:
    """Everything the checks need to know about one variable.

    Attributes:
        path: Keras ``variable.path``, or the binding's path for raw attributes, or the
            variable's name for variables that come only from ``var_list``.
        variable: The variable.
        origin: ``"model"`` (in ``model.variables``), ``"attribute"`` (found in an
            attribute but not tracked) or ``"var_list"`` (passed only in ``var_list``).
        binding: Where it was found among the attributes (``None`` if not found there).
        owner: The layer that owns it (``None`` when unknown).
        trainable: Whether the training loop sees it as trainable.
        gradient: ``"none"``, ``"zero"``, ``"nonzero"``, or ``"skipped"`` (not measured).
    """

    path: str
    variable: Any
    origin: str
    binding: Binding | None
    owner: Any
    trainable: bool
    gradient: str = "skipped"

    @property
    def key(self) -> int:
        return key(self.variable)

    @property
    def is_float(self) -> bool:
        return is_float(self.variable)


@dataclasses.dataclass(frozen=True)
class StaleFact:
    """A variable that something still updates although the model now reads another one."""

    path: str
    old: Any
    current: Any
    holders: tuple[str, ...]


@dataclasses.dataclass
class Facts:
    """The evidence about one model, one loss and one batch (see the module docstring)."""

    model: Any
    variables: list[VariableFact]
    loss: float | None
    custom_loop: bool
    var_list_keys: set[int] | None
    optimizer: Any
    optimizer_keys: set[int] | None
    rebound: dict[int, Binding]
    stale: list[StaleFact]
    learning_rates: list[LearningRate]
    compute: Callable[[Any], Any]
    batch: Any
    measured: list[Any] = dataclasses.field(default_factory=list)
    found: dict[int, Binding] = dataclasses.field(default_factory=dict)
    problem: str | None = None
    empty_shape: tuple[int, ...] | None = None
    _graph: Any = None
    trace_error: str | None = None

    def graph(self) -> Any:
        """The traced loss (:class:`~hyperstep.diagnosis.paths.TraceFacts`, or on TensorFlow
        :class:`~hyperstep.diagnosis.graph.GraphFacts`), traced on first use (``None`` if
        tracing failed)."""
        if self._graph is None and self.trace_error is None:
            try:
                tracked, raw = _split([v for v in self.measured if is_float(v)], self.found)
                trace = tracer().trace(self.compute, self.batch, tracked, raw)
                if trace is None:
                    from hyperstep.diagnosis.graph import GraphFacts

                    self._graph = GraphFacts(self.compute, self.batch)
                else:
                    self._graph = TraceFacts(trace, key)
            except Exception as error:  # the gradient pass worked; a trace is a bonus
                self.trace_error = f"{type(error).__name__}: {error}"
        return self._graph

    def path(self, variable: Any, opaque: bool = False) -> PathFact | None:
        """The variable's paths to the loss in the traced graph (``None`` if tracing failed)."""
        graph = self.graph()
        return None if graph is None else graph.path(variable, opaque)


def _is_expected_raw(binding: Binding) -> bool:
    """Whether a raw variable counts: always a ``tf.Variable`` or torch ``Parameter``; a
    ``jax.Array`` (which may be a constant on purpose) only on the user's own layer, and
    only if the loss has a non-zero gradient for it (checked after the gradient pass)."""
    if tracer().raw_kind(binding.variable) != "jax.Array":
        return True
    return not is_keras_class(binding.owner)


def _owners(model: Any) -> dict[int, Any]:
    owners: dict[int, Any] = {}
    for layer in layers_of(model):
        own = list(getattr(layer, "_trainable_variables", [])) + list(
            getattr(layer, "_non_trainable_variables", [])
        )
        for variable in own:
            owners.setdefault(key(variable), layer)
    return owners


def _holders(
    model: Any, optimizer: Any
) -> tuple[dict[int, tuple[Any, list[str]]], set[int] | None]:
    held: dict[int, tuple[Any, list[str]]] = {}
    in_optimizer = optimizer_variables(optimizer)
    for variable in in_optimizer or ():
        held.setdefault(key(variable), (variable, []))[1].append("the optimizer")
    for variable in train_function_variables(model):
        held.setdefault(key(variable), (variable, []))[1].append("the cached model.train_function")
    keys = None if in_optimizer is None else {key(v) for v in in_optimizer}
    return held, keys


def collect(
    model: Any,
    batch: Any,
    compute: Callable[[Any], Any],
    optimizer: Any,
    var_list: list[Any] | None,
    custom_loop: bool,
) -> Facts:
    """Gather the facts. Runs the model once (callers snapshot and restore around it)."""
    tracked = list(model.variables)
    trainable = {key(v) for v in model.trainable_variables}
    owners = _owners(model)
    found = bindings(model)
    by_path = {v.path: v for v in tracked}
    var_list_keys = None if var_list is None else {key(v) for v in var_list}

    facts: dict[int, VariableFact] = {}
    rebound: dict[int, Binding] = {}
    for variable in tracked:
        facts[key(variable)] = VariableFact(
            variable.path,
            variable,
            "model",
            None,
            owners.get(key(variable)),
            key(variable) in trainable,
        )
    for binding in found:
        fact = facts.get(key(binding.variable))
        if fact is not None:
            fact.binding = fact.binding or binding
            continue
        if not isinstance(binding.variable, keras.Variable) and not _is_expected_raw(binding):
            continue
        facts[key(binding.variable)] = VariableFact(
            binding.path,
            binding.variable,
            "attribute",
            binding,
            binding.owner,
            bool(binding.variable.trainable)
            if isinstance(binding.variable, keras.Variable)
            else tracer().raw_trainable(binding.variable),
        )
        old = by_path.get(binding.path)
        if old is not None:
            rebound[key(old)] = binding
    for variable in var_list or ():
        if key(variable) not in facts:
            name = (
                getattr(variable, "path", None)
                or str(getattr(underlying(variable), "name", "variable")).split(":")[0]
            )
            facts[key(variable)] = VariableFact(
                str(name),
                variable,
                "var_list",
                None,
                None,
                bool(getattr(variable, "trainable", tracer().raw_trainable(variable))),
            )

    held, optimizer_keys = _holders(model, optimizer)
    stale = []
    for k, (variable, names) in held.items():
        if k in rebound:
            stale.append(
                StaleFact(rebound[k].path, facts[k].variable, rebound[k].variable, tuple(names))
            )
        elif k not in facts:
            path = getattr(variable, "path", None)
            if path in by_path:
                stale.append(StaleFact(str(path), variable, by_path[path], tuple(names)))

    measured = [
        f.variable
        for f in facts.values()
        if f.trainable or f.origin != "model" or not (f.owner is None or is_keras_class(f.owner))
    ]
    by_key = {key(b.variable): b for b in found}
    empty = empty_batch(batch)
    problem = None
    loss: float | None = None
    kinds: dict[int, str] = {}
    if empty is not None:
        problem = "empty-batch"  # a loss on no rows is NaN or 0: no gradient says anything
    else:
        loss, kinds = gradient_kinds(compute, batch, measured, by_key)
        if not math.isfinite(loss):
            problem, kinds = "nan-loss", {}  # every gradient is NaN or meaningless
    for fact in facts.values():
        fact.gradient = kinds.get(fact.key, "skipped")
    for k, fact in list(facts.items()):
        # a jax.Array is a constant to Keras: it counts only when the loss moves with it
        if fact.origin == "attribute" and fact.gradient != "nonzero":
            if not isinstance(fact.variable, keras.Variable) and (
                tracer().raw_kind(fact.variable) == "jax.Array"
            ):
                del facts[k]
    return Facts(
        model=model,
        variables=list(facts.values()),
        loss=loss,
        custom_loop=custom_loop,
        var_list_keys=var_list_keys,
        optimizer=optimizer,
        optimizer_keys=optimizer_keys,
        rebound=rebound,
        stale=stale,
        learning_rates=learning_rates(optimizer),
        compute=compute,
        batch=batch,
        measured=measured,
        found=by_key,
        problem=problem,
        empty_shape=empty,
    )
