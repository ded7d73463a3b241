"""``KERAS_BACKEND=jax python tests/schedules/keras_bitwise_worker.py``: ``from_keras`` of
Keras's six built-ins against Keras itself, bitwise, eagerly and traced (``jax.jit``; torch
runs Keras eagerly, as its ``fit`` does by default; with ``--torch-compile``, traced by
``torch.compile`` and also against Keras's eager values). Prints ``RESULT <json>``."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys

import keras

import hyperstep

_spec = importlib.util.spec_from_file_location(
    "keras_cases", pathlib.Path(__file__).with_name("keras_cases.py")
)
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)


def trace(fn):
    if keras.backend.backend() == "jax":
        import jax

        return jax.jit(fn)
    if "--torch-compile" in sys.argv:
        import torch

        return torch.compile(fn, dynamic=True)
    return None


if __name__ == "__main__":
    against_eager = "--torch-compile" in sys.argv
    result = cases.compare(keras, hyperstep, trace, repeats=1, against_eager=against_eager)
    result["backend"] = keras.backend.backend()
    print("RESULT " + json.dumps(result))
    sys.stdout.flush()
