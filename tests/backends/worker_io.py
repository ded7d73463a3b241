"""The worker scripts' last line: ``RESULT <json>``, read back by the test that started them.

``report(result, caught)`` adds the warnings raised from hyperstep or these tests (as
``"Category: message (file:line)"``) under ``"warnings"`` and prints the line.
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any


def report(result: dict[str, Any], caught: list[warnings.WarningMessage]) -> None:
    """Print ``RESULT`` and ``result`` as JSON, with the warnings hyperstep's code or these
    tests raised."""
    result["warnings"] = [
        f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
        for w in caught
        if "hyperstep" in w.filename or "tests/backends" in w.filename
    ]
    print("RESULT " + json.dumps(result))
    sys.stdout.flush()
