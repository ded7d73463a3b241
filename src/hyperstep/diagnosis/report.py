"""What the doctor found: :class:`Finding`, :class:`Diagnosis`, and the codes they use.

A finding is one fact about one variable (or one optimizer), worded for a person:
``what`` happened, ``why`` it matters, and the ``fix`` to type instead. A diagnosis is
the list of findings plus a summary; ``str()`` prints it as a table and ``to_dict()``
returns plain JSON-able data.

This module has no TensorFlow dependency, so findings can be built, printed and
compared under any backend.
"""

from __future__ import annotations

import dataclasses
import math
import textwrap
from collections.abc import Iterable
from typing import Any

from hyperstep.errors import HyperstepError, InvalidArgumentError, received

#: The codes of the batch the doctor was given, reported before any other: ``empty-batch``
#: (a leading dimension of 0) and ``nan-loss`` (the loss on the batch is NaN or infinite).
#: Either makes every gradient meaningless, so no gradient-based finding comes with them.
BATCH_CODES: tuple[str, ...] = ("empty-batch", "nan-loss")

#: Every code the doctor reports about a variable or an optimizer, in the order findings are
#: sorted (root causes first), after :data:`BATCH_CODES`.
CODES: tuple[str, ...] = (
    "untracked",
    "stale-in-optimizer",
    "non-float-dtype",
    "not-trainable",
    "not-in-optimizer",
    "unused",
    "blocked",
    "zero-gradient",
    "zero-learning-rate",
)


@dataclasses.dataclass(frozen=True)
class Finding:
    """One reason a variable does not train, with the code to type instead.

    Attributes:
        path: The variable's path (``variable.path`` for Keras variables; the owning
            layer's path plus the attribute for raw variable attributes; the
            optimizer's ``learning_rate`` path for ``zero-learning-rate``; ``data`` for
            ``empty-batch`` and ``loss`` for ``nan-loss``).
        code: One of :data:`BATCH_CODES` or :data:`CODES` (stable, kebab-case).
        what: What the doctor observed.
        why: Why that stops the variable from training, and the evidence.
        fix: What to type instead.

    Example:
        >>> f = Finding("model/scale", "untracked", "raw tf.Variable", "Keras 3 ...", "...")
        >>> f.code, f.path
        ('untracked', 'model/scale')
    """

    path: str
    code: str
    what: str
    why: str
    fix: str

    def __post_init__(self) -> None:
        if self.code not in BATCH_CODES + CODES:
            raise InvalidArgumentError(
                f"`Finding(code=...)` must be one of {', '.join(BATCH_CODES + CODES)}. "
                + received("code", self.code)
            )

    def to_dict(self) -> dict[str, str]:
        """Return the finding as a dict of its five fields."""
        return dataclasses.asdict(self)


class Diagnosis:
    """The doctor's report: a list of findings, empty when every variable trains.

    Args:
        findings: The findings, in any order; they are sorted by code, then path.
        variables: How many variables were examined.
        loss: The loss on the given batch, or ``None`` when it was not computed.

    Example:
        >>> d = Diagnosis([], variables=2, loss=0.5)
        >>> d.ok, str(d)
        (True, 'hs.doctor: 2 variables examined, loss 0.5: no findings.')
    """

    def __init__(
        self, findings: Iterable[Finding], variables: int = 0, loss: float | None = None
    ) -> None:
        order = {code: i for i, code in enumerate(BATCH_CODES + CODES)}
        self.findings: list[Finding] = sorted(findings, key=lambda f: (order[f.code], f.path))
        self.variables = variables
        self.loss = loss

    @property
    def ok(self) -> bool:
        """``True`` when there are no findings."""
        return not self.findings

    def codes(self) -> list[str]:
        """Return the code of each finding, in order."""
        return [f.code for f in self.findings]

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"ok", "variables", "loss", "findings": [...]}``, ready for ``json.dumps``
        (a loss that is not finite is ``None``: JSON has no NaN; the finding says it)."""
        finite = self.loss is not None and math.isfinite(self.loss)
        return {
            "ok": self.ok,
            "variables": self.variables,
            "loss": self.loss if finite else None,
            "findings": [f.to_dict() for f in self.findings],
        }

    def __repr__(self) -> str:
        return f"Diagnosis(findings={self.findings!r}, variables={self.variables})"

    def __str__(self) -> str:
        loss = "" if self.loss is None else f", loss {self.loss:.6g}"
        head = f"hs.doctor: {self.variables} variables examined{loss}"
        if self.ok:
            return head + ": no findings."
        count = len(self.findings)
        lines = [f"{head}: {count} finding{'s' * (count != 1)}.", ""]
        width = max(len(f.path) for f in self.findings)
        code_width = max(len(f.code) for f in self.findings)
        lines.append(f"{'path'.ljust(width)}  {'code'.ljust(code_width)}  what")
        lines.append(f"{'-' * width}  {'-' * code_width}  ----")
        for f in self.findings:
            lines.append(f"{f.path.ljust(width)}  {f.code.ljust(code_width)}  {f.what}")
        for f in self.findings:
            lines.append("")
            lines.append(f"[{f.code}] {f.path}")
            lines.append(textwrap.indent(textwrap.fill(f"why: {f.why}", 96), "  "))
            lines.append(textwrap.indent(f"fix: {f.fix}", "  "))
        return "\n".join(lines)


class DoctorError(HyperstepError, RuntimeError):
    """Raised by ``Doctor(raise_on_findings=True)`` when the diagnosis has findings.

    Attributes:
        diagnosis: The :class:`Diagnosis` that was not ok.
    """

    def __init__(self, diagnosis: Diagnosis) -> None:
        self.diagnosis = diagnosis
        super().__init__(str(diagnosis))


class DoctorWarning(UserWarning):
    """Warning category of the findings that ``hs.callbacks.Doctor`` reports during ``fit()``."""
