"""Facts about a model's variables, gathered from evidence, never guessed.

The doctor's checks read only what this module measures:

* **bindings**: every ``keras.Variable`` and raw ``tf.Variable`` reachable from a layer's
  attributes (and lists, tuples, dicts and ``tf.Module`` objects inside them), each named
  ``<layer.path>/<attribute>``; compared by identity with ``model.variables`` they show
  untracked and rebound variables;
* **gradients**: one eager forward and backward pass of the loss on the given batch,
  watching every floating variable explicitly (trainable or not), gives for each
  variable "no gradient", "exactly zero" or "non-zero";
* **graph paths** (:class:`hyperstep.doctor.graph.GraphFacts`, traced only when some
  gradient is missing or zero): which op stops the gradient, and where in the user's code;
* **optimizer**: the variables a built optimizer tracks, the variables captured by a cached
  ``model.train_function``, and the learning rate at the current and the next step.

Every pass that could change state (``training=True`` updates BatchNormalization
statistics and advances seed generators) runs between :func:`snapshot` and
:func:`restore`, so the model and the optimizer end bit for bit as they started.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import keras

from hyperstep._backend import require_tensorflow

require_tensorflow("hyperstep.doctor.probe (the doctor's graph analysis)")

import tensorflow as tf  # noqa: E402

from hyperstep.doctor.bindings import (  # noqa: E402
    _MAX_DEPTH as _MAX_DEPTH,
)
from hyperstep.doctor.bindings import (  # noqa: E402
    _SKIP_ATTRIBUTES as _SKIP_ATTRIBUTES,
)
from hyperstep.doctor.bindings import (  # noqa: E402
    Binding,
    bindings,
    is_float,
    is_keras_class,
    key,
    layers_of,
    underlying,
)
from hyperstep.doctor.bindings import _attributes as _attributes  # noqa: E402
from hyperstep.doctor.bindings import _scan as _scan  # noqa: E402
from hyperstep.doctor.bindings import describe_owner as describe_owner  # noqa: E402
from hyperstep.doctor.bindings import layer_path as layer_path  # noqa: E402
from hyperstep.doctor.graph import GraphFacts, PathFact  # noqa: E402
from hyperstep.doctor.optimizer_facts import (  # noqa: E402
    LearningRate,
    learning_rates,
    optimizer_variables,
    train_function_variables,
)
from hyperstep.doctor.optimizer_facts import learning_rate as learning_rate  # noqa: E402


def first_batch(data: Any) -> Any:
    """Return one batch: the first element of a ``tf.data.Dataset``, ``PyDataset`` or iterator,
    or ``data`` itself (an array, a tuple ``(x, y[, sample_weight])`` or a dict)."""
    if isinstance(data, tf.data.Dataset):
        return next(iter(data))
    if isinstance(data, keras.utils.PyDataset):
        return data[0]
    if isinstance(data, Iterator):
        return next(data)
    return data


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


def snapshot(variables: Iterable[Any]) -> list[tuple[tf.Variable, tf.Tensor]]:
    """Copy the value of every distinct variable, for :func:`restore`."""
    saved: dict[int, tuple[tf.Variable, tf.Tensor]] = {}
    for variable in variables:
        handle = underlying(variable)
        if id(handle) not in saved:
            saved[id(handle)] = (handle, tf.identity(handle.read_value()))
    return list(saved.values())


def restore(saved: list[tuple[tf.Variable, tf.Tensor]]) -> None:
    """Assign back the values copied by :func:`snapshot`."""
    for handle, value in saved:
        handle.assign(value)


def gradient_kinds(
    compute: Callable[[Any], Any], batch: Any, variables: list[Any]
) -> tuple[float, dict[int, str]]:
    """Run the loss and its gradient eagerly once.

    Returns:
        The loss value, and for each floating variable's :func:`key` one of ``"none"``
        (no gradient), ``"zero"`` (exactly zero everywhere) or ``"nonzero"``.
    """
    handles = [underlying(v) for v in variables if is_float(v)]
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        for handle in handles:
            tape.watch(handle)
        loss = compute(batch)
    if loss is None:
        raise TypeError("the loss is None")
    loss = tf.convert_to_tensor(loss)
    grads = tape.gradient(loss, handles)
    kinds: dict[int, str] = {}
    for handle, grad in zip(handles, grads, strict=True):
        if grad is None:
            kinds[id(handle)] = "none"
            continue
        values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
        kinds[id(handle)] = "nonzero" if bool(tf.reduce_any(values != 0)) else "zero"
    return float(tf.reduce_sum(tf.cast(loss, tf.float32))), kinds


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
    loss: float
    custom_loop: bool
    var_list_keys: set[int] | None
    optimizer: Any
    optimizer_keys: set[int] | None
    rebound: dict[int, Binding]
    stale: list[StaleFact]
    learning_rates: list[LearningRate]
    compute: Callable[[Any], Any]
    batch: Any
    _graph: GraphFacts | None = None
    trace_error: str | None = None

    def graph(self) -> GraphFacts | None:
        """The traced loss, traced on first use (``None`` if tracing failed)."""
        if self._graph is None and self.trace_error is None:
            try:
                self._graph = GraphFacts(self.compute, self.batch)
            except Exception as error:  # the eager pass worked; a graph is a bonus
                self.trace_error = f"{type(error).__name__}: {error}"
        return self._graph

    def path(self, variable: Any, opaque: bool = False) -> PathFact | None:
        """The variable's paths to the loss in the traced graph (``None`` if tracing failed)."""
        graph = self.graph()
        return None if graph is None else graph.path(variable, opaque)


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
        facts[key(binding.variable)] = VariableFact(
            binding.path,
            binding.variable,
            "attribute",
            binding,
            binding.owner,
            bool(binding.variable.trainable),
        )
        old = by_path.get(binding.path)
        if old is not None:
            rebound[key(old)] = binding
    for variable in var_list or ():
        if key(variable) not in facts:
            name = getattr(variable, "path", None) or underlying(variable).name.split(":")[0]
            facts[key(variable)] = VariableFact(
                str(name), variable, "var_list", None, None, bool(variable.trainable)
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
    loss, kinds = gradient_kinds(compute, batch, measured)
    for fact in facts.values():
        fact.gradient = kinds.get(fact.key, "skipped")
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
    )
