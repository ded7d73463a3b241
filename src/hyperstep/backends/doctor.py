"""The doctor's per-backend evidence: one module per Keras backend, chosen once.

:func:`tracer` returns the module for the running backend (:mod:`.doctor_tf`,
:mod:`.doctor_jax` or :mod:`.doctor_torch`). Each answers the same questions about
variables, so :mod:`hyperstep.diagnosis` never asks which backend it runs on:

* ``is_raw_variable(value)``, ``raw_kind(value)``, ``raw_trainable(value)``: a variable
  held on a layer outside Keras's tracking (TF: a ``tf.Variable``; torch: a
  ``torch.nn.Parameter`` or a tensor with ``requires_grad``; JAX: a floating ``jax.Array``
  or a ``tf.Variable``);
* ``underlying(variable)``: the object whose identity names a variable across reads;
* ``dtype_name(variable)``, ``to_numpy(variable)``;
* ``snapshot(variables)`` / ``restore(saved)``; ``build(compute, batch, state)``;
* ``gradient_kinds(compute, batch, variables, raw)``: the loss and, per variable,
  ``"none"``, ``"zero"`` or ``"nonzero"`` from the backend's own gradients;
* ``trace(compute, batch, variables, raw)``: the loss's computation as a
  :class:`~hyperstep.backends.traces.Trace` (TensorFlow: the traced ``tf.Graph``; JAX: the
  jaxpr; torch: the dispatched torch functions);
* ``numpy_batch(batch)``; ``first_step(model, args)``: the batch of ``fit``'s first step
  (:func:`hyperstep.backends.fit.peek`), and a function giving its arguments once the
  doctor is done.
"""

from __future__ import annotations

from types import ModuleType

__all__ = ["tracer"]


def tracer() -> ModuleType:
    """The doctor's module for the running Keras backend."""
    import keras

    name = keras.backend.backend()
    if name == "jax":
        from hyperstep.backends import doctor_jax

        return doctor_jax
    if name == "torch":
        from hyperstep.backends import doctor_torch

        return doctor_torch
    if name != "tensorflow":
        from hyperstep.errors import BackendError

        raise BackendError(
            "hs.doctor runs on Keras's TensorFlow, JAX and torch backends; Keras is running "
            f"on {name!r}. Set KERAS_BACKEND=tensorflow, jax or torch before importing keras."
        )
    from hyperstep.backends import doctor_tf

    return doctor_tf
