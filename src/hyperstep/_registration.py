"""What hyperstep saves loads in a fresh process after ``import hyperstep`` alone.

Keras finds the class of a saved object by its registered name (``"hyperstep>Scheduled"``,
``"hyperstep>StepOptimizer"``). The classes themselves need Keras, which ``import
hyperstep`` must not import (the CLI's ``--help`` stays cheap), so ``import hyperstep``
registers one small stand-in per name instead: at once if Keras is already imported, else
right after Keras's own import finishes (a one-shot import hook on ``keras``). A stand-in's
``from_config`` imports the module that defines the real class (which replaces the
stand-in in Keras's registry) and hands the config over to it.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

#: registered name -> the module whose import registers the real class
TOP_LEVEL: dict[str, str] = {
    "hyperstep>Scheduled": "hyperstep.optim.scheduled",
    "hyperstep>StepOptimizer": "hyperstep.optim.optimizer",
    "hyperstep>SkipNonFinite": "hyperstep.optim.finite",
}


def _standin(registered_name: str, module: str) -> type:
    def from_config(cls: type, config: dict[str, Any], custom_objects: Any = None) -> Any:
        import keras

        from hyperstep.backends import check_backend

        check_backend()
        importlib.import_module(module)
        real = keras.saving.get_custom_objects().get(registered_name)
        if real is None or getattr(real, "_hs_standin", False):
            raise TypeError(  # as Keras's own "Could not locate class" error
                f"Could not locate class {registered_name!r}: importing {module} did not "
                "register it."
            )
        if custom_objects is None:
            return real.from_config(config)
        return real.from_config(config, custom_objects)

    return type(
        registered_name.split(">")[1],
        (),
        {
            "_hs_standin": True,
            "__module__": module,
            "__doc__": f"Stands for {registered_name} until {module} is imported.",
            "from_config": classmethod(from_config),
        },
    )


def register(keras: ModuleType) -> None:
    """Put a stand-in under every name hyperstep's saved files use, unless the real class
    is registered already."""
    registry = keras.saving.get_custom_objects()
    for registered_name, module in TOP_LEVEL.items():
        if registered_name not in registry:
            registry[registered_name] = _standin(registered_name, module)


class _AfterKeras(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when ``keras`` is first imported, runs :func:`register` right
    after Keras's own ``exec_module`` (once, then leaves ``sys.meta_path``)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "keras":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec("keras")
        loader = None if spec is None else spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        exec_module = loader.exec_module

        def exec_then_register(module: ModuleType) -> None:
            exec_module(module)
            register(module)

        loader.exec_module = exec_then_register  # type: ignore[method-assign]
        return spec


def install() -> None:
    """Register now if Keras is imported, else once it is."""
    keras = sys.modules.get("keras")
    if keras is not None:
        if hasattr(keras, "saving") and hasattr(keras, "optimizers"):
            register(keras)
        return  # (mid-import: the real classes register when hyperstep's modules load)
    if not any(isinstance(finder, _AfterKeras) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterKeras())
