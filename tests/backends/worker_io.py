"""The worker scripts' last line: ``RESULT <json>``, read back by the test that started them.

``report(result, caught)`` adds the warnings raised from hyperstep or these tests (as
``"Category: message (file:line)"``) under ``"warnings"`` and prints the line.
``ours(warning)`` says whether a warning is one of those: its file lies inside the imported
``hyperstep`` package or beside this script, whatever the checkout's folder is called (a
clone named ``hyperstep`` holds Keras's own files in no such folder, but a substring test of
the path would count them).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def ours(warning: warnings.WarningMessage, *, tests: bool = True) -> bool:
    """Whether ``warning`` was raised from the ``hyperstep`` package (or, with ``tests``,
    from a script of tests/backends)."""
    import hyperstep  # after the worker chose its backend

    path = Path(str(warning.filename))
    if not path.is_absolute():  # "<string>", "<frozen ...>": no file of ours
        return False
    path = path.resolve()
    package = Path(hyperstep.__file__).resolve().parent
    return _inside(path, package) or (tests and _inside(path, HERE))


def report(result: dict[str, Any], caught: list[warnings.WarningMessage]) -> None:
    """Print ``RESULT`` and ``result`` as JSON, with the warnings hyperstep's code or these
    tests raised."""
    result["warnings"] = [
        f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught if ours(w)
    ]
    print("RESULT " + json.dumps(result))
    sys.stdout.flush()
