r"""The doctor's room: why each variable does or does not train, in ``fit()`` and in custom
loops.

``hs.doctor(model, data)`` (:func:`hyperstep.diagnosis.diagnose.doctor`) returns a
:class:`~hyperstep.diagnosis.report.Diagnosis` of
:class:`~hyperstep.diagnosis.report.Finding`\ s; ``hs.callbacks.Doctor`` runs it on the first
batch of ``fit()``. This package holds the stable finding codes and the doctor's warning and
error: :data:`CODES`, :data:`BATCH_CODES`, :class:`DoctorWarning`, :class:`DoctorError`.

It runs on Keras's TensorFlow, JAX and torch backends, each with its own evidence (the
traced ``tf.Graph``, the jaxpr, the torch functions the loss calls); importing this package
imports no backend.
"""

from hyperstep.diagnosis.report import BATCH_CODES, CODES, DoctorError, DoctorWarning

__all__ = ["BATCH_CODES", "CODES", "DoctorError", "DoctorWarning"]
