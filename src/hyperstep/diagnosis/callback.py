"""``Doctor``: a Keras callback that runs the doctor once, on the first batch of ``fit()``."""

from __future__ import annotations

import warnings
from typing import Any

import keras

from hyperstep.backends.doctor import tracer
from hyperstep.diagnosis.report import Diagnosis, DoctorError, DoctorWarning
from hyperstep.errors import InvalidTypeError, received


class Doctor(keras.callbacks.Callback):
    """Diagnose the model on the first batch ``fit()`` trains on, and warn with the findings.

    The first call of ``model.train_function`` is intercepted (on every backend's trainer):
    its first batch is taken, :func:`hyperstep.doctor` runs on it with the
    compiled loss and ``model.optimizer``, and the same batch is then trained on as usual
    (the doctor changes no variable, so training is exactly what it would have been).
    Findings are
    reported with ``warnings.warn(..., DoctorWarning)``, or raised as :class:`DoctorError`.

    Args:
        raise_on_findings: Raise :class:`DoctorError` instead of warning.
        data: A batch to diagnose instead of the first batch of ``fit()``.

    Attributes:
        diagnosis: The :class:`Diagnosis`, once it has run (``None`` before).

    Example:
        >>> import keras, numpy as np
        >>> import hyperstep as hs
        >>> from hyperstep.callbacks import Doctor
        >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        >>> model.compile(optimizer="sgd", loss="mse")
        >>> check = Doctor()
        >>> _ = model.fit(np.ones((4, 3)), np.zeros((4, 1)), verbose=0, callbacks=[check])
        >>> check.diagnosis.ok
        True
    """

    def __init__(self, raise_on_findings: bool = False, data: Any = None) -> None:
        super().__init__()
        if not isinstance(raise_on_findings, bool):
            raise InvalidTypeError(
                "`Doctor(raise_on_findings=...)` must be True or False. "
                + received("raise_on_findings", raise_on_findings)
            )
        tracer()  # refuses a backend the doctor does not run on, here rather than in fit()
        self.raise_on_findings = raise_on_findings
        self.data = data
        self.diagnosis: Diagnosis | None = None

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        if self.diagnosis is not None:
            return
        model = self.model
        original = model.train_function  # fit() makes it before on_train_begin

        def first_step(*args: Any) -> Any:
            model.train_function = original
            batch, resume = tracer().first_step(model, args)
            self._diagnose(batch if self.data is None else self.data)
            return original(*resume())

        model.train_function = first_step

    def _diagnose(self, batch: Any) -> None:
        from hyperstep.diagnosis.diagnose import doctor

        self.diagnosis = doctor(self.model, batch)
        if self.diagnosis.ok:
            return
        if self.raise_on_findings:
            raise DoctorError(self.diagnosis)
        warnings.warn(str(self.diagnosis), DoctorWarning, stacklevel=2)
