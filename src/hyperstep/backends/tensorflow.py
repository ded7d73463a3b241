"""TensorFlow: Python-float rounding in graphs (:class:`ExactScalar`) and fused updates.

Keras optimizers read hyperparameters as Python floats: ``1 - self.beta_1`` is computed in
float64 when the step is traced, and only the result is rounded to float32. A float32
tensor would round ``beta_1`` first and change the last bit of ``1 - beta_1``.
:class:`ExactScalar` keeps a float64 tensor that rounds as a Python float does, and answers
Keras's Python-level checks (``if self.momentum != 0``) with a static number, so constant
values give bit-identical updates.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

from hyperstep.backends.fast_paths import native_variable
from hyperstep.backends.scopes import require_tensorflow, under_xla

require_tensorflow("hyperstep.backends.tensorflow (Python-float rounding, fused kernels)")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import ops  # noqa: E402

from hyperstep.backends.static import Arithmetic, StaticNumber  # noqa: E402
from hyperstep.backends.versions import OPTIMIZER_SLOTS, missing  # noqa: E402

_OPS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[float, float], float]]] = {
    "add": (ops.add, operator.add),
    "sub": (ops.subtract, operator.sub),
    "mul": (ops.multiply, operator.mul),
    "truediv": (ops.divide, operator.truediv),
    "pow": (ops.power, operator.pow),
}


class ExactScalar(StaticNumber, float):  # type: ignore[misc]
    """A float64 scalar tensor with Python-float semantics (see the module docstring).

    It is a ``float`` to Keras's ops (``isinstance(x, float)``, its ``dtype`` is the type
    ``float``): they promote it as a weak Python float, to the other operand's dtype, and
    convert it there (``__tf_tensor__``) from its float64 tensor, rounded once, as they
    convert a Python float; a conversion without a dtype (``tf.cast``'s) gives float32
    first, as a Python float's does. Its own float value is the tensor's while eager (where
    TensorFlow converts floats by value) and NaN in a graph (never the value a graph uses).

    Args:
        tensor: A float64 scalar tensor.
        static: The value Python-level comparisons see (``None`` for "a positive number").
    """

    __slots__ = ("_memo", "static", "tensor")

    def __new__(cls, tensor: Any, static: float | None) -> ExactScalar:
        number = float(tensor) if isinstance(tensor, tf.__internal__.EagerTensor) else math.nan
        return float.__new__(cls, number)

    def __init__(self, tensor: Any, static: float | None) -> None:
        self.tensor = tensor
        self.static = static
        self._memo: dict[Any, tuple[Any, Any]] = {}

    @property
    def dtype(self) -> type:
        """``float``: Keras's dtype promotion reads it as a (weak) Python float."""
        return float

    def __tf_tensor__(self, dtype: Any = None, name: Any = None) -> Any:
        """Tensor conversion: to the requested dtype, else to float32 (as a Python float).

        ``tensor + x`` converts ``x`` with only a dtype *hint* (TensorFlow's
        ``_add_dispatch``, ``name="y"``), which this hook does not receive: a TypeError
        there makes TensorFlow call ``x.__radd__(tensor)``, which rounds to the tensor's
        dtype (a float32 conversion would fail eagerly against a float64 tensor)."""
        if dtype is None and name == "y":
            raise TypeError("ExactScalar: converted by its own __radd__")
        dtype = tf.as_dtype(dtype) if dtype is not None else tf.float32
        return self.memo(("convert", dtype), lambda: tf.cast(self.tensor, dtype))

    def memo(self, key: Any, make: Callable[[], Any]) -> Any:
        """Return ``make()``, built once per key and graph (Keras re-reads values per variable)."""
        graph = tf.compat.v1.get_default_graph()
        found = self._memo.get(key)
        if found is not None and found[0] is graph:
            return found[1]
        value = make()
        self._memo[key] = (graph, value)
        return value

    def _binary(self, other: Any, name: str, swap: bool) -> Any:
        if isinstance(other, ExactScalar):
            return self.memo((name, id(other), swap), lambda: self._compute(other, name, swap))
        if isinstance(other, (int, float)) and not isinstance(other, bool):
            return self.memo((name, float(other), swap), lambda: self._compute(other, name, swap))
        return self._compute(other, name, swap)

    def _compute(self, other: Any, name: str, swap: bool) -> Any:
        tensor_op, python_op = _OPS[name]
        if isinstance(other, ExactScalar):
            a, b = self.tensor, other.tensor
            static = (
                None if self.static is None or other.static is None else (self.static, other.static)
            )
        elif isinstance(other, (int, float)) and not isinstance(other, bool):
            a, b = self.tensor, tf.constant(float(other), tf.float64)
            static = None if self.static is None else (self.static, float(other))
        else:  # a tensor or a variable: round to its dtype, as a Python float would be
            other = ops.convert_to_tensor(other)
            a = tf.cast(self.tensor, other.dtype)
            return tensor_op(other, a) if swap else tensor_op(a, other)
        if swap:
            a, b = b, a
            static = static[::-1] if isinstance(static, tuple) else static
        value = None
        if isinstance(static, tuple):
            try:
                value = python_op(*static)
            except (ArithmeticError, ValueError):
                value = None
        return ExactScalar(tensor_op(a, b), value)

    def __neg__(self) -> ExactScalar:
        return ExactScalar(-self.tensor, None if self.static is None else -self.static)

    def __abs__(self) -> ExactScalar:
        return ExactScalar(tf.abs(self.tensor), None if self.static is None else abs(self.static))

    def _compare_traced(self, other: Any, op: Callable[[Any, Any], Any]) -> Any:
        return op(tf.cast(self.tensor, ops.convert_to_tensor(other).dtype), other)

    def __float__(self) -> float:
        return float(self.tensor)

    def __repr__(self) -> str:
        return f"ExactScalar({self.tensor!r}, static={self.static!r})"


class KerasRate(Arithmetic):
    """The learning rate as Keras's own float32 variable behaves in its update code: a
    float32 tensor whose operators are Keras's ops (``lr * update`` promotes a float16
    ``update`` to float32, as ``Variable.__mul__`` does, where a ``tf.Tensor``'s ``*``
    raises), converted (``__tf_tensor__``) as the variable's value.

    Args:
        tensor: The float32 scalar tensor.
    """

    __slots__ = ("tensor",)

    def __init__(self, tensor: Any) -> None:
        self.tensor = tensor

    @property
    def dtype(self) -> Any:
        return self.tensor.dtype

    @property
    def shape(self) -> Any:
        return self.tensor.shape

    def __tf_tensor__(self, dtype: Any = None, name: Any = None) -> Any:
        if dtype is None or tf.as_dtype(dtype) == self.tensor.dtype:
            return self.tensor
        return tf.cast(self.tensor, dtype)

    def _binary(self, other: Any, name: str, swap: bool) -> Any:
        operation = _OPS[name][0]
        return operation(other, self.tensor) if swap else operation(self.tensor, other)

    def __neg__(self) -> Any:
        return ops.negative(self.tensor)

    def __repr__(self) -> str:
        return f"KerasRate({self.tensor!r})"


# ---- fused updates (hs.scheduled(..., fused=True)) ------------------------------------------
# One-pass updates for ``hs.scheduled(..., fused=True)`` on TensorFlow (opt-in).
#
# TensorFlow-specific (``tf.raw_ops``). Keras writes each optimizer's update as separate
# elementwise TensorFlow ops, each a pass over the weights. When at least one hyperparameter
# of an ``hs.scheduled(..., fused=True)`` optimizer is read, two updates are done in fewer
# passes, with the same formulas (not bitwise Keras's: the default, ``fused=False``, is):
#
# * decoupled weight decay, ``w <- w * (1 - lr * wd)`` (torch's form: one multiply) instead of
#   Keras's ``w <- w - w * wd * lr`` (two multiplies and a subtraction), just before the
#   variable's own update;
# * SGD with momentum with ``ResourceApplyKerasMomentum`` (Keras's formula, see :func:`sgd`);
# * RMSprop with momentum with ``ResourceApply(Centered)RMSProp`` (see :func:`rmsprop`);
# * Adam and AdamW (without ``amsgrad``), with TensorFlow's fused kernel
#   ``ResourceApplyAdam``:
#
#   ``alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)``, ``t = iterations + 1``
#   ``m += (g - m) * (1 - beta_1)``;  ``v += (g^2 - v) * (1 - beta_2)``
#   ``w -= m * alpha / (sqrt(v) + epsilon)``
#
#   which is Keras's ``Adam.update_step`` term for term, computed in one pass instead of about
#   twelve. The scalars are rounded to the variable's dtype first (``1 - beta_1`` in float32;
#   Keras computes it from a Python float), so values agree to float32 rounding, not bitwise.
#
# Without ``fused=True``, ``hs.scheduled`` runs Keras's own code and is bitwise the plain
# optimizer with the same values set before each step.

_KERNEL_DTYPES = (tf.float32, tf.float64)


def _scalar(value: Any, dtype: Any) -> Any:
    """``value`` in ``dtype``: an :class:`ExactScalar` through its conversion (one cast per
    graph and dtype, shared by every variable's update), a tensor cast."""
    if isinstance(value, ExactScalar):
        return tf.convert_to_tensor(value, dtype)
    return tf.cast(value, dtype)


def _slot(optimizer: Any, variable: Any, slots: str) -> Any:
    """The handle of ``variable``'s slot in Keras's private slot list ``slots``."""
    try:
        return native_variable(
            getattr(optimizer, slots)[optimizer._get_variable_index(variable)]
        ).handle
    except AttributeError as error:
        raise missing(OPTIMIZER_SLOTS, error) from error


def decays_in_update(optimizer: Any) -> bool:
    """Whether :func:`decay` replaces ``optimizer``'s weight decay: Keras's standard one
    (Muon, which decays some variables with its own rate, keeps its own)."""
    base = keras.optimizers.Optimizer._apply_weight_decay
    return bool(optimizer._hs_base._apply_weight_decay is base)


def decay(optimizer: Any, variable: Any, learning_rate: Any) -> None:
    """``w <- w * (1 - lr * wd)`` if ``optimizer`` decays ``variable``; call it just before
    the variable's update, in place of Keras's ``_apply_weight_decay`` for all variables."""
    weight_decay = optimizer.weight_decay
    if weight_decay is None:
        return
    try:
        decays = optimizer._use_weight_decay(variable)
    except AttributeError as error:
        raise missing(OPTIMIZER_SLOTS, error) from error
    if not decays:
        return
    var = native_variable(variable)
    keep = 1 - _scalar(learning_rate, var.dtype) * _scalar(weight_decay, var.dtype)
    var.assign(var * keep)


def _runs(optimizer: Any, cls: Any, gradient: Any, variable: Any) -> bool:
    """Whether ``optimizer`` runs Keras's ``cls.update_step`` itself (not a subclass that
    overrides it) on a dense gradient and a float32 or float64 variable: what a kernel takes."""
    return (
        optimizer._hs_base.update_step is cls.update_step
        and isinstance(gradient, tf.Tensor)
        and native_variable(variable).dtype in _KERNEL_DTYPES
    )


def adam_applies(optimizer: Any, gradient: Any, variable: Any) -> bool:
    """Whether :func:`adam` computes ``optimizer``'s update of ``variable``: Keras's Adam
    (Adam, AdamW) without ``amsgrad`` (:func:`_runs`)."""
    return _runs(optimizer, keras.optimizers.Adam, gradient, variable) and not optimizer.amsgrad


def adam(optimizer: Any, gradient: Any, variable: Any, learning_rate: Any) -> Any:
    """Keras's Adam update of ``variable`` with ``ResourceApplyAdam`` (see the module)."""
    var = native_variable(variable)
    dtype = var.dtype
    t = tf.cast(optimizer.iterations + 1, dtype)
    beta_1 = _scalar(optimizer.beta_1, dtype)
    beta_2 = _scalar(optimizer.beta_2, dtype)
    return tf.raw_ops.ResourceApplyAdam(
        var=var.handle,
        m=_slot(optimizer, variable, "_momentums"),
        v=_slot(optimizer, variable, "_velocities"),
        beta1_power=tf.pow(beta_1, t),
        beta2_power=tf.pow(beta_2, t),
        lr=_scalar(learning_rate, dtype),
        beta1=beta_1,
        beta2=beta_2,
        epsilon=_scalar(optimizer.epsilon, dtype),
        grad=tf.cast(gradient, dtype),
    )


def sgd_applies(optimizer: Any, gradient: Any, variable: Any) -> bool:
    """Whether :func:`sgd` computes ``optimizer``'s update of ``variable``: Keras's SGD with
    momentum (:func:`_runs`)."""
    return _runs(optimizer, keras.optimizers.SGD, gradient, variable) and optimizer.momentum != 0


def sgd(optimizer: Any, gradient: Any, variable: Any, learning_rate: Any) -> Any:
    """Keras's SGD-with-momentum update of ``variable`` with ``ResourceApplyKerasMomentum``:
    ``m = m * momentum - g * lr``; ``w += m`` (Nesterov: ``w += m * momentum - g * lr``),
    Keras's ``SGD.update_step`` term for term in one pass instead of three to five."""
    var = native_variable(variable)
    dtype = var.dtype
    return tf.raw_ops.ResourceApplyKerasMomentum(
        var=var.handle,
        accum=_slot(optimizer, variable, "momentums"),
        lr=_scalar(learning_rate, dtype),
        grad=tf.cast(gradient, dtype),
        momentum=_scalar(optimizer.momentum, dtype),
        use_nesterov=bool(optimizer.nesterov),
    )


def rmsprop_applies(optimizer: Any, gradient: Any, variable: Any) -> bool:
    """Whether :func:`rmsprop` computes ``optimizer``'s update of ``variable``: Keras's
    RMSprop with momentum (the kernels need its slot; :func:`_runs`)."""
    return _runs(optimizer, keras.optimizers.RMSprop, gradient, variable) and optimizer.momentum > 0


def rmsprop(optimizer: Any, gradient: Any, variable: Any, learning_rate: Any) -> Any:
    """Keras's RMSprop-with-momentum update with ``ResourceApply(Centered)RMSProp``:
    ``v += (g^2 - v) * (1 - rho)``; centered: ``a += (g - a) * (1 - rho)``;
    ``mom = momentum * mom + lr * g / sqrt(v [- a^2] + epsilon)``; ``w -= mom`` (Keras's
    formula, ``epsilon`` inside the square root; ``v`` updated in TensorFlow's form, so equal
    to float32 rounding)."""
    var = native_variable(variable)
    dtype = var.dtype
    common = {
        "var": var.handle,
        "ms": _slot(optimizer, variable, "_velocities"),
        "mom": _slot(optimizer, variable, "_momentums"),
        "lr": _scalar(learning_rate, dtype),
        "rho": _scalar(optimizer.rho, dtype),
        "momentum": _scalar(optimizer.momentum, dtype),
        "epsilon": _scalar(optimizer.epsilon, dtype),
        "grad": tf.cast(gradient, dtype),
    }
    if optimizer.centered:
        mg = _slot(optimizer, variable, "_average_gradients")
        return tf.raw_ops.ResourceApplyCenteredRMSProp(mg=mg, **common)
    return tf.raw_ops.ResourceApplyRMSProp(**common)


def group_update(optimizer: Any, grads: Any, variables: Any, learning_rate: Any) -> bool:
    """Always ``False`` on TensorFlow: its fused kernels are per variable (:func:`adam`);
    the multi-tensor path is torch's (:mod:`hyperstep.backends.torch`)."""
    return False


# ---- the optimizer's reads ------------------------------------------------------------------
class SharedIterations:
    """Mixin for ``hs.scheduled``'s classes on TensorFlow: ``iterations``, one read per update.

    Keras's ``update_step`` reads ``self.iterations`` once per variable; returning the same
    tensor (read into the update's dict of values at its start, ``_hs_reads``)
    gives the same values and lets TensorFlow's graph optimizer share the per-variable
    scalar arithmetic derived from it (``beta_1 ** (t + 1)``, ...). (Not on torch:
    ``torch.compile`` cannot trace ``super()`` in a property.)
    """

    @property
    def iterations(self) -> Any:
        iterations = super().iterations  # type: ignore[misc]
        if not self._hs_updating():  # type: ignore[attr-defined]
            return iterations
        found = self._hs_state.update.values.get("@iterations")  # type: ignore[attr-defined]
        return iterations if found is None else found

    def _hs_reads(self) -> dict[str, Any]:
        # a read (keras.ops.convert_to_tensor would keep the variable); "@" is no name
        return {"@iterations": tf.convert_to_tensor(super().iterations)}  # type: ignore[misc]


def scratch_buffer(optimizer: Any, variable: Any, key: str) -> Any:
    """A zero buffer like ``variable`` for a one-pass kernel (:func:`adam_pass`'s
    ``scratch``; a rule's ``Rule.fused_slots``), not an optimizer variable: neither saved
    nor restored; ``None`` where Keras overwrites the variable with its gradient."""
    if optimizer._overwrite_variable_with_gradient(variable):
        return None
    name = f"{optimizer.name}_{variable.path.replace('/', '_')}_{key}"
    return keras.Variable(
        "zeros", shape=variable.shape, dtype=variable.dtype, trainable=False, name=name
    )


def adam_pass(variable: Any, scratch: Any, velocity: Any, gradient: Any, **scalars: Any) -> bool:
    """``v += (g^2 - v) * (1 - beta_2)``, then ``variable -= lr * g / (sqrt(v) + epsilon)``,
    in one ``ResourceApplyAdam`` pass with the first moment off (``beta1 = 0`` and both
    powers 0, so its ``alpha`` is ``lr``; ``scratch`` takes the kernel's ``m``, which it
    sets to ``g``). ``scalars``: ``learning_rate``, ``beta_2``, ``epsilon``. ``False``
    (nothing done) for a sparse gradient, a dtype the kernel lacks, or under XLA
    (:func:`under_xla`), which fuses the caller's own operations into fewer passes.
    """
    var = native_variable(variable)
    dtype = var.dtype
    if not isinstance(gradient, tf.Tensor) or dtype not in _KERNEL_DTYPES or under_xla():
        return False
    zero = tf.zeros((), dtype)
    tf.raw_ops.ResourceApplyAdam(
        var=var.handle,
        m=native_variable(scratch).handle,
        v=native_variable(velocity).handle,
        beta1_power=zero,
        beta2_power=zero,
        lr=_scalar(scalars["learning_rate"], dtype),
        beta1=zero,
        beta2=_scalar(scalars["beta_2"], dtype),
        epsilon=_scalar(scalars["epsilon"], dtype),
        grad=tf.cast(gradient, dtype),
    )
    return True
