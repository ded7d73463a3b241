"""hyperstep: the training step, first-class in Keras 3 / TensorFlow.

Schedule any hyperparameter, change it at run time without retracing, let metric-driven
controllers compose with schedules, resume exactly.

Importing ``hyperstep`` is cheap: each public name is imported (and Keras with it) the first
time it is used.
"""

from __future__ import annotations

import ast
import importlib
import pathlib
from typing import Any

from hyperstep import _registration

__version__ = "0.1.0"


def _surface() -> dict[str, tuple[str, str | None]]:
    """Public name -> (module, attribute; ``None`` for a module), read from ``__init__.pyi``.

    The stub is the one list of the surface: type checkers read it, and so does this.
    """
    stub = pathlib.Path(__file__).with_name("__init__.pyi")
    table: dict[str, tuple[str, str | None]] = {}
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                module = f"{node.module}.{alias.name}"
                is_module = node.module == "hyperstep"
                table[alias.asname or alias.name] = (
                    (module, None) if is_module else (node.module, alias.name)
                )
    return table


_LAZY = _surface()

__all__ = sorted([*_LAZY, "__version__"])

# Cheap (no Keras): what hyperstep saved loads after `import hyperstep` alone, whether Keras
# is imported before or after (hyperstep._registration)
_registration.install()


def __getattr__(name: str) -> Any:
    """Import a public name on first use (PEP 562), checking Keras's backend first."""
    if name not in _LAZY:
        raise AttributeError(f"module 'hyperstep' has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    if name != "errors":
        from hyperstep.backends import check_backend

        check_backend()
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
