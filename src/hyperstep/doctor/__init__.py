"""The doctor: why each variable does or does not train, in ``fit()`` and in custom loops.

``hs.doctor(model, data)`` calls :func:`doctor`: the package itself is callable, so
``import hyperstep.doctor as d`` gives the package (``d.CODES``, ``d.Finding``) and
``d(model, data)`` the diagnosis.

It runs on Keras's TensorFlow, JAX and torch backends, each with its own evidence (the
traced ``tf.Graph``, the jaxpr, the torch functions the loss calls); importing this package
imports no backend.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hyperstep.doctor.report import (
    BATCH_CODES,
    CODES,
    Diagnosis,
    DoctorError,
    DoctorWarning,
    Finding,
)

if TYPE_CHECKING:
    from hyperstep.doctor.callback import Doctor

__all__ = [
    "BATCH_CODES",
    "CODES",
    "Diagnosis",
    "Doctor",
    "DoctorError",
    "DoctorWarning",
    "Finding",
    "doctor",
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
    started (BatchNormalization statistics and seed generators are put back).

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
    are in :mod:`hyperstep.doctor.checks`. A model whose ``train_step`` is overridden is
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
    from hyperstep.backends.doctor import tracer

    tracer()  # refuses a backend the doctor does not run on (numpy, openvino)
    from hyperstep.doctor.diagnose import diagnose

    return diagnose(model, data, loss_fn=loss_fn, optimizer=optimizer, var_list=var_list)


def __getattr__(name: str) -> Any:
    # the Keras callback is imported on first use: importing this package needs no Keras
    if name == "Doctor":
        from hyperstep.doctor.callback import Doctor

        return Doctor
    raise AttributeError(f"module 'hyperstep.doctor' has no attribute {name!r}")


class _CallablePackage(types.ModuleType):
    """``hyperstep.doctor(...)`` is :func:`doctor` (one name for the package and the call)."""

    def __call__(
        self,
        model: Any,
        data: Any,
        *,
        loss_fn: Callable[[Any, Any], Any] | None = None,
        optimizer: Any = None,
        var_list: Sequence[Any] | None = None,
    ) -> Diagnosis:
        return doctor(model, data, loss_fn=loss_fn, optimizer=optimizer, var_list=var_list)


sys.modules[__name__].__class__ = _CallablePackage
