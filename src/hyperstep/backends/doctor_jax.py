"""The doctor's evidence on JAX: ``jax.value_and_grad`` and the jaxpr of the loss.

    loss, grads = jax.value_and_grad(f)(values),  f(values) = loss_fn(model, batch)

with every variable read through ``keras.StatelessScope(state_mapping=...)`` (nothing is
assigned) and each floating ``jax.Array`` on a layer swapped for its traced value. JAX gives
zeros for an unused input: "no gradient" is no path in the jaxpr. See "The doctor on every
backend" in docs/backends.md.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import keras
import numpy as np

from hyperstep.backends.fit import peek
from hyperstep.backends.jax import state_owners
from hyperstep.backends.traces import Trace, TracedOp, user_source

#: Primitives through which no useful gradient flows (JAX's rule is zero or none).
NON_DIFFERENTIABLE = frozenset(
    {
        "stop_gradient",
        "argmax",
        "argmin",
        "round",
        "floor",
        "ceil",
        "sign",
        "is_finite",
        "pure_callback",
        "io_callback",
        "callback",
        "random_bits",
        "nextafter",
    }
)


def _tf_variable(value: Any) -> bool:
    import sys

    tf = sys.modules.get("tensorflow")
    return tf is not None and isinstance(value, tf.Variable)


def is_raw_variable(value: Any) -> bool:
    """A floating ``jax.Array`` (Keras trains only ``keras.Variable``) or a ``tf.Variable``."""
    if _tf_variable(value):
        return True
    return isinstance(value, jax.Array) and jnp.issubdtype(value.dtype, jnp.inexact)


def raw_kind(value: Any) -> str:
    return "tf.Variable" if _tf_variable(value) else "jax.Array"


def raw_trainable(value: Any) -> bool:
    return bool(getattr(value, "trainable", True))


def underlying(variable: Any) -> Any:
    """The ``keras.Variable`` itself (its value is a new array after each assign)."""
    return variable


def dtype_name(variable: Any) -> str:
    if isinstance(variable, keras.Variable):
        return str(variable.dtype)
    return str(np.dtype(variable.dtype).name) if not _tf_variable(variable) else variable.dtype.name


def to_numpy(variable: Any) -> np.ndarray:
    return np.asarray(variable)


def snapshot(variables: Iterable[Any]) -> list[tuple[Any, Any]]:
    """The value of every distinct ``keras.Variable`` (JAX arrays are immutable)."""
    saved: dict[int, tuple[Any, Any]] = {}
    for variable in variables:
        if isinstance(variable, keras.Variable) and id(variable) not in saved:
            saved[id(variable)] = (variable, variable.value)
    return list(saved.values())


def restore(saved: list[tuple[Any, Any]]) -> None:
    for variable, value in saved:
        if variable.value is not value:
            variable.assign(value)


def build(compute: Callable[[Any], Any], batch: Any, state: list[Any]) -> None:
    """Build an unbuilt model by running the loss once in a ``StatelessScope``: nothing is
    assigned (``state`` keeps its values), and the variables the pass creates get their
    initial values on leaving it."""
    with keras.StatelessScope():
        compute(batch)


@contextlib.contextmanager
def _swapped(raw: list[Any], values: list[Any]) -> Iterator[None]:
    """Hold ``values`` where the raw arrays are (attributes, lists, dicts), then put them back."""
    done = []
    try:
        for binding, value in zip(raw, values, strict=True):
            binding.put(value)
            done.append(binding)
        yield
    finally:
        for binding in reversed(done):
            binding.put(binding.variable)


def _loss_of(
    compute: Callable[[Any], Any], batch: Any, variables: list[Any], raw: list[Any]
) -> tuple[Callable[[list[Any], list[Any]], Any], list[Any], list[Any]]:
    """``f(values, raw_values) = loss``, and the values and raw arrays it is read at (the
    raw arrays that a binding can swap: not a ``tf.Variable``, not a tuple's item)."""
    raw = [
        b for b in raw if getattr(b, "holder", None) is not None and not _tf_variable(b.variable)
    ]

    def f(values: list[Any], raw_values: list[Any]) -> Any:
        with keras.StatelessScope(state_mapping=list(zip(variables, values, strict=True))):
            with _swapped(raw, raw_values):
                loss = compute(batch)
        return jnp.sum(jnp.asarray(loss, jnp.float32))

    return f, [v.value for v in variables], [b.variable for b in raw]


def gradient_kinds(
    compute: Callable[[Any], Any], batch: Any, variables: list[Any], raw: list[Any]
) -> tuple[Any, dict[int, str]]:
    """The loss and each variable's gradient: ``"zero"`` or ``"nonzero"`` (JAX gives zeros
    for an input the loss does not read: the doctor reads "no gradient" from :func:`trace`).

    ``raw`` holds bindings of raw arrays (with ``put``); their kinds are keyed by the id of
    the array."""
    f, values, raw_values = _loss_of(compute, batch, variables, raw)
    loss, (grads, raw_grads) = jax.value_and_grad(f, argnums=(0, 1))(values, raw_values)
    kinds: dict[int, str] = {}
    for item, grad in zip([*variables, *raw_values], [*grads, *raw_grads], strict=True):
        kinds[id(item)] = "nonzero" if bool(jnp.any(grad != 0)) else "zero"
    return loss, kinds


def _subjaxprs(eqn: Any) -> list[Any]:
    found = []
    for value in eqn.params.values():
        for item in value if isinstance(value, (tuple, list)) else (value,):
            inner = getattr(item, "jaxpr", item)
            if hasattr(inner, "eqns") and hasattr(inner, "invars"):
                found.append(inner)
    return found


def _carries(var: Any) -> bool:
    dtype = getattr(getattr(var, "aval", None), "dtype", None)
    return dtype is not None and bool(jnp.issubdtype(dtype, jnp.inexact))


def _frames(eqn: Any) -> list[tuple[str, int]]:
    traceback = getattr(getattr(eqn, "source_info", None), "traceback", None)
    frames = getattr(traceback, "frames", None) or ()
    return [(f.file_name, f.line_num) for f in frames]


class _Flattener:
    """Flattens a jaxpr and the jaxprs inside ``jit``/``custom_jvp_call`` into :class:`TracedOp`."""

    INLINE = frozenset({"pjit", "jit", "closed_call", "core_call", "remat", "checkpoint"})
    CUSTOM = frozenset({"custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr"})

    def __init__(self) -> None:
        self.ops: list[TracedOp] = []
        self.centred: set[int] = set()
        self._next = 0
        self._count = 0

    def fresh(self) -> int:
        self._next += 1
        return self._next

    def run(self, jaxpr: Any, inputs: list[int], outer: str | None = None) -> list[int]:
        """Flatten ``jaxpr`` read with value ids ``inputs``; return its outputs' ids. An
        inlined jaxpr's equations take the source line of the call (``outer``): JAX caches
        a jitted function's jaxpr with the frames of its first call."""
        env: dict[int, int] = {id(v): i for v, i in zip(jaxpr.invars, inputs, strict=True)}

        def read(var: Any) -> int | None:
            return None if hasattr(var, "val") else env.get(id(var))

        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            ins = [read(v) for v in eqn.invars]
            if name == "jit" or name == "pjit":
                if eqn.params.get("name") == "_var" and ins and ins[0] is not None:
                    self.centred.add(ins[0])  # jnp.var inside keras.ops.moments
            inner = _subjaxprs(eqn)
            source = outer or user_source(_frames(eqn))
            # a custom rule (the user's or JAX's) decides the gradient: passed through too
            if (name in self.INLINE and len(inner) == 1) or (name in self.CUSTOM and inner):
                outs = self.run(inner[0], [self.fresh() if i is None else i for i in ins], source)
                for var, value in zip(eqn.outvars, outs, strict=True):
                    env[id(var)] = value
                continue
            made: list[tuple[int, bool]] = []
            for var in eqn.outvars:
                env[id(var)] = self.fresh()
                made.append((env[id(var)], _carries(var)))
            self._count += 1
            self.ops.append(
                TracedOp(
                    name,
                    f"eqn {self._count}",
                    source,
                    tuple(i for i in ins if i is not None),
                    tuple(made),
                    stops=name in NON_DIFFERENTIABLE,
                )
            )
        return [
            self.fresh() if hasattr(v, "val") else env.get(id(v), self.fresh())
            for v in jaxpr.outvars
        ]


def trace(compute: Callable[[Any], Any], batch: Any, variables: list[Any], raw: list[Any]) -> Trace:
    """The jaxpr of ``f(values) = loss``, flattened into a :class:`Trace`."""
    f, values, raw_values = _loss_of(compute, batch, variables, raw)
    closed = jax.make_jaxpr(f)(values, raw_values)
    flat = _Flattener()
    inputs = [flat.fresh() for _ in closed.jaxpr.invars]
    (loss,) = flat.run(closed.jaxpr, inputs)
    sources = {id(item): i for item, i in zip([*variables, *raw_values], inputs, strict=True)}
    return Trace(flat.ops, sources, loss, flat.centred)


def numpy_batch(batch: Any) -> Any:
    """TensorFlow tensors (a ``tf.data`` batch) as NumPy arrays, as Keras's trainer reads them."""
    import sys

    tf = sys.modules.get("tensorflow")
    if tf is None:
        return batch
    return keras.tree.map_structure(
        lambda v: v.numpy() if isinstance(v, (tf.Tensor, tf.Variable)) else v, batch
    )


def first_step(model: Any, args: tuple[Any, ...]) -> tuple[Any, Callable[[], tuple[Any, ...]]]:
    """The batch of ``model.train_function(state, iterator)``'s first call (Keras's JAX
    trainer), and the call's arguments once the doctor is done.

    Keras's JAX ``fit`` takes the variables' values out of them into ``state`` (trainable,
    non-trainable, optimizer, metrics) for the epoch; they are put back into the variables
    here (what ``model.jax_state_sync()`` does at the epoch's end), for the doctor to read.
    Once it is done, ``state`` is read again from the variables (what the doctor left there
    trains) and the variables purged again, as Keras's JAX ``fit`` keeps them during an
    epoch: the step donates ``state``'s buffers, which a variable must not keep (a later
    read or assign would pass a donated buffer)."""
    state, iterator, *rest = args
    for variables, values in zip(state_owners(model), state, strict=False):
        for variable, value in zip(variables, values or (), strict=False):
            variable.assign(value)
    batch, iterator = peek(iterator)

    def resume() -> tuple[Any, ...]:
        fresh: list[Any] = []
        for variables, values in zip(state_owners(model), state, strict=False):
            if values is None:
                fresh.append(values)
                continue
            fresh.append([v.value for v in variables][: len(values)])
            for variable in variables:
                variable._value = None  # Keras's own purge (JAXTrainer._purge_model_variables)
        return (type(state)(fresh), iterator, *rest)

    return batch, resume
