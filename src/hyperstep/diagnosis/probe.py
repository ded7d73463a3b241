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
  gradient, and where in the user's code (:class:`hyperstep.diagnosis.paths.TraceFacts`);
* **optimizer**: the variables a built optimizer tracks, the variables captured by a cached
  ``model.train_function``, and the learning rate at the current and the next step.

Every pass that could change state (``training=True`` updates BatchNormalization
statistics and advances seed generators) runs between the backend's ``snapshot`` and
``restore``, so the model and the optimizer end bit for bit as they started.
"""

from __future__ import annotations

import dataclasses
import math
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import keras
import numpy as np

from hyperstep.backends.doctor import tracer
from hyperstep.backends.fit import layers_of
from hyperstep.diagnosis.paths import PathFact, TraceFacts

# ---- bindings: the variables in the layers' attributes ---------------------------------
# Keras bookkeeping attributes that hold no user state worth walking.
_SKIP_ATTRIBUTES = frozenset(
    {
        "_tracker",
        "_trainable_variables",
        "_non_trainable_variables",
        "_layers",
        "_metrics",
        "_seed_generators",
        "_loss_tracker",
        "_compile_loss",
        "_compile_metrics",
        "_inbound_nodes",
        "_outbound_nodes",
        "_losses",
        "optimizer",
        "_optimizer",
        "train_function",
        "test_function",
        "predict_function",
        "_functional",
        "_operations",
        "_inputs_struct",
        "torch_params",
        "_torch_params",
        "_modules",
        "_parameters",
        "_buffers",
        "_outputs_struct",
        "_nodes",
        "_nodes_by_depth",
        "_operations_by_depth",
    }
)


_MAX_DEPTH = 4


def key(variable: Any) -> int:
    """Identity of a variable: the id of the object that names it across reads (TF: the
    ``tf.Variable`` behind a ``keras.Variable``; torch: its ``Parameter``; JAX: the
    ``keras.Variable``)."""
    return id(tracer().underlying(variable))


def is_float(variable: Any) -> bool:
    """Whether gradients can flow into the variable (floating or complex dtype)."""
    name = tracer().dtype_name(variable)
    return name.startswith(("float", "bfloat", "complex", "half", "double"))


@dataclasses.dataclass
class Binding:
    """A variable found in a layer's attributes.

    Attributes:
        path: ``<layer.path>/<attribute>[/<index or key>...]``.
        variable: The ``keras.Variable`` or ``tf.Variable`` found there.
        owner: The layer whose attribute holds it.
        attribute: The attribute chain below the layer, e.g. ``scale`` or ``scales/0``.
        container: ``"attribute"``, ``"list"``, ``"dict"`` or ``"module"`` (a ``tf.Module``
            or other plain object that Keras does not look inside).
    """

    path: str
    variable: Any
    owner: Any
    attribute: str
    container: str
    holder: Any = None
    slot: Any = None

    def put(self, value: Any) -> None:
        """Hold ``value`` where the variable was found (the doctor swaps in traced values);
        only for bindings with a ``holder`` (not in tuples nor torch's ``_parameters``)."""
        if self.container in ("attribute", "module"):
            object.__setattr__(self.holder, self.slot, value)
        else:
            self.holder[self.slot] = value


def layer_path(layer: Any) -> str:
    return str(getattr(layer, "path", None) or layer.name)


def bindings(model: Any) -> list[Binding]:
    """Every variable reachable from the attributes of the model's layers."""
    found: list[Binding] = []
    seen: set[int] = set()
    for layer in layers_of(model):
        base = layer_path(layer)
        for name, value in _attributes(layer):
            found.extend(_scan(value, base, layer, name, "attribute", 0, seen, layer, name))
        # torch: a Parameter assigned to a layer (a torch.nn.Module) lands in _parameters
        parameters = vars(layer).get("_parameters")
        if isinstance(parameters, dict):
            for name, value in parameters.items():
                if value is not None and tracer().is_raw_variable(value):
                    found.append(Binding(f"{base}/{name}", value, layer, name, "attribute"))
    return found


def _attributes(obj: Any) -> list[tuple[str, Any]]:
    """The object's attributes worth walking, public first (so a variable is named after
    the attribute users wrote, not after TensorFlow's checkpoint bookkeeping)."""
    items = [
        (name, value)
        for name, value in vars(obj).items()
        if name not in _SKIP_ATTRIBUTES and not name.startswith("_self_")
    ]
    return sorted(items, key=lambda item: item[0].startswith("_"))


def _is_module(value: Any) -> bool:
    """A plain container of attributes Keras does not look inside."""
    if isinstance(value, types.SimpleNamespace):
        return True
    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(value, tf.Module)


def _scan(
    value: Any,
    base: str,
    owner: Any,
    attribute: str,
    container: str,
    depth: int,
    seen: set[int],
    holder: Any = None,
    slot: Any = None,
) -> Iterator[Binding]:
    if isinstance(value, keras.Variable) or tracer().is_raw_variable(value):
        yield Binding(f"{base}/{attribute}", value, owner, attribute, container, holder, slot)
        return
    if depth >= _MAX_DEPTH or id(value) in seen:
        return
    if isinstance(value, (str, bytes, int, float, np.ndarray)) or value is None:
        return
    if isinstance(value, (keras.layers.Layer, keras.optimizers.Optimizer, keras.metrics.Metric)):
        return
    if keras.ops.is_tensor(value):
        return
    seen.add(id(value))
    if isinstance(value, dict):
        for k, item in list(value.items()):
            yield from _scan(
                item, base, owner, f"{attribute}/{k}", "dict", depth + 1, seen, value, k
            )
    elif isinstance(value, (list, tuple, set, frozenset)):
        mutable = value if isinstance(value, list) else None
        for i, item in enumerate(value):
            yield from _scan(
                item, base, owner, f"{attribute}/{i}", "list", depth + 1, seen, mutable, i
            )
    elif _is_module(value):
        for k, item in _attributes(value):
            yield from _scan(
                item, base, owner, f"{attribute}/{k}", "module", depth + 1, seen, value, k
            )


def describe_owner(binding: Binding) -> str:
    return f"{type(binding.owner).__name__} `{layer_path(binding.owner)}`"


def is_keras_class(obj: Any) -> bool:
    """Whether the object's class is Keras's own (its design decides what trains)."""
    return type(obj).__module__.split(".")[0] in ("keras", "tf_keras")


# ---- the optimizer's variables and learning rates ---------------------------------------
def optimizer_variables(optimizer: Any) -> list[Any] | None:
    """The variables a built optimizer updates, or ``None`` when it is not built yet."""
    inner = getattr(optimizer, "inner_optimizer", None)
    if inner is not None:
        optimizer = inner
    if optimizer is None or not getattr(optimizer, "built", False):
        return None
    found = getattr(optimizer, "_trainable_variables", None)
    return None if found is None else list(found)


def train_function_variables(model: Any) -> list[Any]:
    """The variables captured by the graphs of a cached ``model.train_function`` (on
    TensorFlow; JAX's and torch's trainers read the model's variables at each call)."""
    function = getattr(model, "train_function", None)
    found: dict[int, Any] = {}
    stack: list[tuple[Any, int]] = [(function, 0)]
    visited: set[int] = set()
    while stack:
        obj, depth = stack.pop()
        if obj is None or id(obj) in visited or depth > 4:
            continue
        visited.add(id(obj))
        concrete = getattr(obj, "_list_all_concrete_functions", None)
        if concrete is not None:
            for cf in concrete():
                for variable in getattr(cf, "variables", ()):
                    found[id(variable)] = variable
        for cell in getattr(obj, "__closure__", None) or ():
            try:
                stack.append((cell.cell_contents, depth + 1))
            except ValueError:
                continue
        wrapped = getattr(obj, "__wrapped__", None) or getattr(obj, "_python_function", None)
        if wrapped is not None:
            stack.append((wrapped, depth + 1))
    return list(found.values())


@dataclasses.dataclass(frozen=True)
class LearningRate:
    """An optimizer's learning rate now and at the next step (``None`` when not a schedule)."""

    path: str
    step: int
    current: float
    following: float | None


def learning_rates(optimizer: Any) -> list[LearningRate]:
    """Every learning rate of ``optimizer``: its own and each parameter group's.

    For a hyperstep optimizer (``opt.hyperparameters`` holding ``learning_rate`` and
    ``"<group>/learning_rate"``) each is read now and at the next step of its clock; for any
    other optimizer, ``optimizer.learning_rate`` (see :func:`learning_rate`).
    """
    hyperparameters = getattr(optimizer, "hyperparameters", None)
    if not isinstance(hyperparameters, dict):
        rate = learning_rate(optimizer)
        return [] if rate is None else [rate]
    found = []
    for key, hp in hyperparameters.items():
        if key != "learning_rate" and not key.endswith("/learning_rate"):
            continue
        try:
            step = int(keras.ops.convert_to_numpy(hp.clock.step))
            current = float(np.asarray(keras.ops.convert_to_numpy(hp.value)))
            following: float | None = float(np.asarray(keras.ops.convert_to_numpy(hp.at(step + 1))))
        except Exception:
            continue
        if bool(keras.ops.convert_to_numpy(hp.is_set)):
            following = None  # an override holds until cleared: no schedule to look ahead on
        found.append(LearningRate(f"{optimizer.name}/{key}", step, current, following))
    return found


def learning_rate(optimizer: Any) -> LearningRate | None:
    """Read ``optimizer.learning_rate`` at its current iteration (no state is changed)."""
    if optimizer is None:
        return None
    try:
        current = float(np.asarray(keras.ops.convert_to_numpy(optimizer.learning_rate)))
        step = int(keras.ops.convert_to_numpy(optimizer.iterations))
    except Exception:
        return None
    inner = getattr(optimizer, "inner_optimizer", None) or optimizer
    schedule = getattr(inner, "_learning_rate", None)
    following = None
    if isinstance(schedule, keras.optimizers.schedules.LearningRateSchedule):
        following = float(np.asarray(keras.ops.convert_to_numpy(schedule(step + 1))))
    path = (
        getattr(schedule, "path", None)
        or f"{getattr(optimizer, 'name', 'optimizer')}/learning_rate"
    )
    return LearningRate(str(path), step, current, following)


# ---- the facts --------------------------------------------------------------------------
def first_batch(data: Any) -> Any:
    """Return one batch: the first element of a ``tf.data.Dataset``, ``PyDataset``, torch
    ``DataLoader`` or iterator, or ``data`` itself (an array, a tuple
    ``(x, y[, sample_weight])`` or a dict)."""
    tf = sys.modules.get("tensorflow")
    if isinstance(data, keras.utils.PyDataset):
        batch = data[0]
    elif isinstance(data, Iterator):
        batch = next(data)
    elif (tf is not None and isinstance(data, tf.data.Dataset)) or (
        type(data).__name__ == "DataLoader" and hasattr(data, "__iter__")
    ):
        batch = next(iter(data))
    else:
        batch = data
    return tracer().numpy_batch(batch)


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

    variables: list[VariableFact]
    loss: float | None
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
    _graph: TraceFacts | None = None
    trace_error: str | None = None

    def graph(self) -> TraceFacts | None:
        """The traced loss, traced on first use (``None`` if tracing failed)."""
        if self._graph is None and self.trace_error is None:
            try:
                tracked, raw = _split([v for v in self.measured if is_float(v)], self.found)
                trace = tracer().trace(self.compute, self.batch, tracked, raw)
                self._graph = TraceFacts(trace, key)
            except Exception as error:  # the gradient pass worked; a trace is a bonus
                self.trace_error = f"{type(error).__name__}: {error}"
        return self._graph

    def path(self, variable: Any, opaque: bool = False) -> PathFact | None:
        """The variable's paths to the loss in the traced graph (``None`` if tracing failed)."""
        graph = self.graph()
        return None if graph is None else graph.path(variable, opaque)


def _jax_array(variable: Any) -> bool:
    """Whether ``variable`` is a raw ``jax.Array``, which may be a constant on purpose: it
    counts only on the user's own layer, and only if the loss has a non-zero gradient for it
    (a ``tf.Variable`` or torch ``Parameter`` always counts)."""
    return not isinstance(variable, keras.Variable) and tracer().raw_kind(variable) == "jax.Array"


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
        if _jax_array(binding.variable) and is_keras_class(binding.owner):
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
                or str(getattr(tracer().underlying(variable), "name", "variable")).split(":")[0]
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
        if fact.origin == "attribute" and fact.gradient != "nonzero" and _jax_array(fact.variable):
            del facts[k]
    found_facts = Facts(
        variables=list(facts.values()),
        loss=loss,
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
    for fact in found_facts.variables:
        # JAX gives zeros for an input the loss does not read: no path to the loss is none
        path = found_facts.path(fact.variable) if fact.gradient == "zero" else None
        if path is not None and path.kind == "unused":
            fact.gradient = "none"
    return found_facts
