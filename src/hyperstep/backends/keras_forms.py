"""The one decision of what Keras's optimizer code gets for an ``hs.scheduled`` value.

Every update builds ``values = {key: keras_number(Request(...))}`` once, the step read once
(:func:`hyperstep.optim.core.keras_value`); Keras's own casts then round each value to
the variable's dtype as they round its Python float. One function per backend
(:data:`FORMS`: :func:`tensorflow_number`, :func:`jax_number`, :func:`torch_number`), each
over one :class:`Request`, and one :class:`Row` per Keras optimizer class (:data:`ROWS`; a
class takes the row of its nearest ``keras.optimizers`` base, :func:`keras_base_name`, else
none; :func:`optimizer_class` is the class Keras instantiates for one on this backend).
Adding a Keras optimizer is one row; adding a backend, one function. (``hs.StepOptimizer``
hands its rule tensors on every backend: a rule is hyperstep's code, not Keras's.)

What else an update needs from the backend: ``after(scalars, tensors)`` orders a TensorFlow
graph's updates after their values; :func:`fused_updates`, :func:`adam_pass` and
:func:`multi_tensor_adam` name the backend's fused kernels, ``None`` where there are none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from hyperstep.backends.scopes import current_backend

__all__ = [
    "FORMS",
    "ROWS",
    "Request",
    "Row",
    "adam_pass",
    "after",
    "fused_updates",
    "in_dtype",
    "jax_number",
    "keras_base_name",
    "keras_number",
    "multi_tensor_adam",
    "optimizer_class",
    "optimizer_mixins",
    "row",
    "scalar_tensor",
    "tensorflow_number",
    "torch_number",
    "trains_statelessly",
    "with_tensor",
]


class Row(NamedTuple):
    """What one Keras optimizer class's code does with its hyperparameters, by name."""

    #: used as Python numbers by Keras's torch code (``1 - self.beta_2``, ``alpha=``): so
    #: ``1 - beta_2`` must be the Python float's ``1 - 0.999``, not ``1 - float32(0.999)``
    torch_numbers: frozenset[str] = frozenset()
    #: handed to a JAX function that takes arrays only (no ``__jax_array__`` conversion)
    jax_arrays: frozenset[str] = frozenset()


#: Keras optimizer class name -> its :class:`Row`. Read off Keras 3.15's optimizers
#: (``keras/src/optimizers/`` and the torch ones in ``keras/src/backend/torch/optimizers/``);
#: tests/backends/test_keras_forms.py runs each row bitwise against Keras on every backend
#: and checks that every Keras optimizer class has one.
ROWS: dict[str, Row] = {
    "Adadelta": Row(torch_numbers=frozenset({"rho"})),
    "Adafactor": Row(),
    "Adagrad": Row(),
    "Adam": Row(torch_numbers=frozenset({"beta_1", "beta_2"})),
    "AdamW": Row(torch_numbers=frozenset({"beta_1", "beta_2"})),
    "Adamax": Row(torch_numbers=frozenset({"beta_1"})),
    "Ftrl": Row(  # ops.clip(linear, -l1, l1)
        torch_numbers=frozenset({"l2_shrinkage_regularization_strength"}),
        jax_arrays=frozenset({"l1_regularization_strength"}),
    ),
    "Lamb": Row(torch_numbers=frozenset({"beta_1", "beta_2"})),
    "Lion": Row(torch_numbers=frozenset({"beta_1", "beta_2"})),
    "Muon": Row(torch_numbers=frozenset({"adam_beta_1", "adam_beta_2", "momentum"})),
    "Nadam": Row(torch_numbers=frozenset({"beta_1", "beta_2"})),
    "RMSprop": Row(torch_numbers=frozenset({"rho"})),
    "SGD": Row(torch_numbers=frozenset({"momentum"})),
    "ScheduleFreeAdamW": Row(),
}


def keras_base_name(cls: type) -> str | None:
    """The name of ``cls``'s nearest base class that is ``keras.optimizers.<name>`` (the key
    of :data:`ROWS`), ``None`` if it has none."""
    import keras

    for klass in cls.__mro__:
        if getattr(keras.optimizers, klass.__name__, None) is klass:
            return klass.__name__
    return None


def optimizer_class(cls: type) -> type:
    """The class Keras instantiates for optimizer class ``cls`` on this backend.

    On torch, ``keras.optimizers.Adam()`` is an instance of Keras's torch class
    (``TorchOptimizer.__new__`` maps the nine classes of its ``OPTIMIZERS`` table: Adadelta,
    Adagrad, Adam, Adamax, AdamW, Lion, Nadam, RMSprop, SGD, to their ``torch_*`` classes,
    which add ``_parallel_update_step``); elsewhere, and for every other class, ``cls``.
    Asked of Keras itself (``cls.__new__(cls)``, no ``__init__``), not a copy of its table.

    Example:
        >>> import keras
        >>> optimizer_class(keras.optimizers.Adam) is type(keras.optimizers.Adam())
        True
    """
    if current_backend() != "torch":
        return cls
    return type(cls.__new__(cls))  # type: ignore[call-overload]


def row(cls: type) -> Row:
    """The :data:`ROWS` entry of optimizer class ``cls``: its own, else its nearest Keras
    base class's (``keras.optimizers.<Name>``), else the empty row."""
    return ROWS.get(keras_base_name(cls) or "", _NO_ROW)


_NO_ROW = Row()


class Request(NamedTuple):
    """Hyperparameter ``name`` of optimizer class ``cls`` at one update's ``step``."""

    #: Keras's name of the value: ``"learning_rate"``, ``"beta_1"``, ...
    name: str
    #: the class whose code reads it (its :func:`row`)
    cls: type
    #: the :class:`hyperstep.Hyperparameter`: ``at``, ``exact_at``, ``host_float``
    hyperparameter: Any
    #: the update's step: a float32 tensor, or a Python int where ``host``
    step: Any
    #: whether ``step`` is the host's Python int (eager torch on the CPU)
    host: bool
    #: the constant the hyperparameter was built from, ``None`` for a schedule
    static: float | None
    #: the constants the value takes whole: ``static``'s, or a schedule's constant ``where``
    #: pieces (:func:`hyperstep.control.value_forms.constant_pieces`; ``()`` where ``host``)
    constants: tuple[float, ...]

    def value(self) -> Any:
        """The float32 value (``Hyperparameter.at``)."""
        return self.hyperparameter.at(self.step)

    def exact(self) -> Any:
        """The float64 value, constants exact (``Hyperparameter.exact_at``)."""
        return self.hyperparameter.exact_at(self.step)


def tensorflow_number(request: Request) -> Any:
    """TensorFlow (eager, graph, XLA, ``tf.distribute``): the learning rate a
    :class:`~hyperstep.backends.tensorflow.KerasRate` (float32, Keras's ops as operators, as
    Keras's own variable); else an :class:`~hyperstep.backends.tensorflow.ExactScalar`
    (float64, constants exact, rounded once to the dtype it meets, ``if``s see the constant)."""
    from hyperstep.backends.tensorflow import ExactScalar, KerasRate

    if request.name == "learning_rate":
        return KerasRate(request.value())
    return ExactScalar(request.exact(), request.static)


def jax_number(request: Request) -> Any:
    """JAX (eager, ``jit``, ``fit``): a float32 array for the learning rate and the row's
    ``jax_arrays`` (weakly typed: promoted as a Python float is), else a
    :class:`~hyperstep.backends.static.StaticScalar` (``if``s see the constant, a schedule
    +inf; a constant's arithmetic with numbers rounds like its Python float)."""
    from hyperstep.backends.static import StaticScalar, weak

    if request.name == "learning_rate":
        return request.value()
    if request.name in row(request.cls).jax_arrays:
        return weak(request.value())
    return StaticScalar(request.value(), request.static, exact=request.constants)


def torch_number(request: Request) -> Any:
    """torch: eagerly on the CPU the host table's Python float (the learning rate a float32
    tensor); under ``torch.compile``, in ``StatelessScope`` or with the clock on a GPU a
    float64 0-dim tensor, constants exact, for the row's ``torch_numbers`` (float32 where
    Keras's device has no float64: MPS), else float32."""
    if request.host:
        number = request.hyperparameter.host_float(request.step)
        if number is not None:
            if request.name != "learning_rate":
                return number
            # Keras's own learning rate is a float32 variable: a float32 tensor, so that its
            # torch weight decay `1 - weight_decay * lr` rounds as Keras's (a Python float
            # computes it in double) and its in-place multiply takes torch's tensor-scalar
            # path (a number's makes a copy); made by torch directly, beside the state
            import torch

            from hyperstep.backends.fast_paths import raw

            device = raw(request.hyperparameter.scale).device
            return torch.scalar_tensor(number, dtype=torch.float32, device=device)
    if request.name in row(request.cls).torch_numbers:
        from hyperstep.backends.torch import KERAS_FLOAT64

        if KERAS_FLOAT64:
            return request.exact()
    return request.value()


#: backend name -> the function that decides what Keras gets there
FORMS: dict[str, Callable[[Request], Any]] = {
    "tensorflow": tensorflow_number,
    "jax": jax_number,
    "torch": torch_number,
}


def keras_number(request: Request) -> Any:
    """The value of ``request`` in the form this backend hands Keras's optimizer code."""
    return FORMS[current_backend()](request)


def scalar_tensor(value: Any) -> Any:
    """The tensor behind a value from :func:`keras_number` (itself for a plain tensor)."""
    from hyperstep.backends.static import StaticScalar

    if isinstance(value, StaticScalar):
        return value.value
    if current_backend() == "tensorflow":
        from hyperstep.backends.tensorflow import ExactScalar, KerasRate

        if isinstance(value, (ExactScalar, KerasRate)):
            return value.tensor
    return value


def with_tensor(value: Any, tensor: Any) -> Any:
    """``value`` from :func:`keras_number` with :func:`scalar_tensor` ``tensor`` instead of its
    own (of the same dtype): the same form, its static numbers kept."""
    from hyperstep.backends.static import StaticScalar, weak

    if isinstance(value, StaticScalar):
        return StaticScalar(tensor, value.static, exact=value._exact)
    backend = current_backend()
    if backend == "tensorflow":
        from hyperstep.backends.tensorflow import ExactScalar, KerasRate

        if isinstance(value, ExactScalar):
            return ExactScalar(tensor, value.static)
        if isinstance(value, KerasRate):
            return KerasRate(tensor)
    if backend == "jax" and getattr(getattr(value, "aval", None), "weak_type", False):
        return weak(tensor)
    return tensor


def in_dtype(value: Any, dtype: Any) -> Any:
    """A value from :func:`keras_number` (or a Python number) as a scalar of ``dtype``,
    rounded once: a Python float or an ExactScalar's float64 directly, like Keras's floats."""
    from keras import ops

    from hyperstep.backends.static import StaticScalar

    if isinstance(value, (int, float)):  # TensorFlow's ExactScalar too: its conversion
        return ops.convert_to_tensor(value, dtype)
    if isinstance(value, StaticScalar):
        return ops.cast(value.value, dtype)
    return ops.cast(value, dtype)


# ---- what an update needs besides its values: gating, fused kernels ---------------------
def after(scalars: list[Any], tensors: list[Any]) -> list[Any]:
    """``tensors``, usable only once ``scalars`` are computed (in a TensorFlow graph).

    TensorFlow's executor runs whichever ops are ready, and full-size ops would wait,
    allocated, for the cheap reads behind the values; gated, each variable's update runs
    from its first op to its assign while its temporaries are hot. ``tf.identity`` forwards
    the buffer: nothing is copied. Eagerly and on other backends: ``tensors``.
    """
    if current_backend() != "tensorflow":
        return tensors
    import tensorflow as tf

    if tf.executing_eagerly():
        return tensors
    dense = [i for i, t in enumerate(tensors) if isinstance(t, tf.Tensor)]
    if not dense:
        return tensors
    with tf.control_dependencies([s for s in scalars if tf.is_tensor(s)]):
        gated = tf.identity_n([tensors[i] for i in dense])  # one op for all
    found = list(tensors)
    for i, tensor in zip(dense, gated, strict=True):
        found[i] = tensor
    return found


def trains_statelessly() -> bool:
    """Whether Keras trains statelessly (JAX): only ``optimizer.variables`` go into and out of
    a jitted step, so a clock's step and hyperparameter state read there must be among them."""
    return current_backend() == "jax"


def optimizer_mixins() -> tuple[type, ...]:
    """Backend mixins for ``hs.scheduled``'s classes (TensorFlow: one ``iterations`` read)."""
    if current_backend() != "tensorflow":
        return ()
    from hyperstep.backends.tensorflow import SharedIterations

    return (SharedIterations,)


def fused_updates() -> Any:
    """The module of fused updates for ``hs.scheduled(..., fused=True)``:
    :mod:`hyperstep.backends.tensorflow` (one-pass ``ResourceApply*`` kernels per variable),
    :mod:`hyperstep.backends.torch` (PyTorch's multi-tensor fused kernels per group), or
    ``None`` on JAX, where XLA already fuses Keras's update into one pass."""
    name = current_backend()
    if name == "tensorflow":
        from hyperstep.backends import tensorflow

        return tensorflow
    if name == "torch":
        from hyperstep.backends import torch

        return torch
    return None


def adam_pass() -> Any:
    """TensorFlow's one-pass Adam step without a first moment
    (:func:`hyperstep.backends.tensorflow.adam_pass`, ``ResourceApplyAdam``), else ``None``."""
    if current_backend() != "tensorflow":
        return None
    from hyperstep.backends import tensorflow

    return tensorflow.adam_pass


def multi_tensor_adam() -> Any:
    """The module with PyTorch's fused multi-tensor Adam (``applies``, ``adam``:
    :mod:`hyperstep.backends.torch`) on torch, else ``None``."""
    if current_backend() != "torch":
        return None
    from hyperstep.backends import torch

    return torch
