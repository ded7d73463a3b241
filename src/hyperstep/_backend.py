"""Checks that Keras has a usable backend before anything else imports it."""

from __future__ import annotations

import importlib.util
import os

_PACKAGES = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}
_EXTRAS = {
    "tensorflow": "pip install 'hyperstep[cpu]' (tensorflow-cpu) or 'hyperstep[tf]' (tensorflow)",
    "jax": "pip install 'hyperstep[jax]'",
    "torch": "pip install 'hyperstep[torch]'",
}


def backend_name() -> str:
    """Return the backend Keras will use: ``KERAS_BACKEND`` or the Keras config, else TF."""
    name = os.environ.get("KERAS_BACKEND")
    if name:
        return name
    try:
        import json

        path = os.path.join(
            os.environ.get("KERAS_HOME", os.path.join(os.path.expanduser("~"), ".keras")),
            "keras.json",
        )
        with open(path) as f:
            return str(json.load(f).get("backend", "tensorflow"))
    except (OSError, ValueError):
        return "tensorflow"


def check_backend() -> None:
    """Raise ImportError naming the extras to install when Keras's backend is missing."""
    name = backend_name()
    package = _PACKAGES.get(name)
    if package is None or importlib.util.find_spec(package) is not None:
        return
    raise ImportError(
        f"hyperstep needs a Keras backend, and the selected one ({name!r}) is not installed. "
        f"Install one with {_EXTRAS[name]}, or set KERAS_BACKEND to an installed backend "
        "(tensorflow, jax or torch)."
    )


def integer_dtype() -> str:
    """Return the dtype of integer state: ``"int64"``, or ``"int32"`` on JAX without x64.

    JAX stores 32-bit integers unless ``jax_enable_x64`` is on (``JAX_ENABLE_X64=1``); asking
    it for int64 warns and truncates. A clock in int32 counts up to 2**31 - 1 steps.
    """
    import keras

    if keras.backend.backend() != "jax":
        return "int64"
    import jax

    return "int64" if jax.config.read("jax_enable_x64") else "int32"


def require_tensorflow(feature: str) -> None:
    """Raise :class:`hyperstep.errors.BackendError` unless Keras runs on TensorFlow."""
    import keras

    from hyperstep.errors import BackendError

    if keras.backend.backend() != "tensorflow":
        raise BackendError(
            f"{feature} needs the TensorFlow backend; Keras is running on "
            f"{keras.backend.backend()!r}. Set KERAS_BACKEND=tensorflow before importing keras."
        )
