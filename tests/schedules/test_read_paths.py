"""One value per step: every read path gives the float32 bits the compiled step trained with.

For each vocabulary word (``read_paths_worker.WORDS``) on a grid of steps with every boundary
and +-1: the value SGD's update used inside the compiled step (``tf.function``, ``jax.jit``,
``torch.compile``), ``float(opt.learning_rate)``, ``hp.value``, the schedule called on the
vector of steps, ``LogHyperparameters``' row and ``hyperstep plot``'s NumPy samples (a process
without Keras), compared bitwise. The words compute in float64 and round once to float32, so
the paths agree on any x86-64 CPU (float64 kernels that differ by an ulp of float64 round to
the same float32 but for values within 2**-29 of a float32 tie).

The exceptions are the words that repeat Keras's float32 operations (``from_keras``'s):
bitwise Keras on each path, they differ between paths as Keras's own schedules do.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from hyperstep import parse
from hyperstep.schedules.language import vocabulary

HERE = pathlib.Path(__file__).parent
_spec = importlib.util.spec_from_file_location("read_paths_worker", HERE / "read_paths_worker.py")
worker = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(worker)

#: the words that repeat Keras's float32 operations in Keras's order (from_keras's targets):
#: their eager, vectorized and compiled values are Keras's own on each path, not one value
KERAS_FORMULAS = {
    "inverse_time",
    "exponential_decay",
    "exponential_decay_smooth",
    "polynomial_decay",
    "cosine_decay",
    "cosine_decay_restarts",
}
PATHS = ("eager", "hp", "vector", "log", "cli")


def _record(tmp_path: pathlib.Path, backend: str, *args: str, x64: bool = False, stride: int = 9):
    out = tmp_path / f"{backend}{''.join(args)}.json"
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env["READ_PATHS_STRIDE"] = str(stride)
    env.pop("JAX_ENABLE_X64", None)
    if x64:
        env["JAX_ENABLE_X64"] = "1"
    done = subprocess.run(
        [sys.executable, str(HERE / "read_paths_worker.py"), str(out), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600")),
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(out.read_text())


def _mismatches(found: dict, cli: dict) -> dict[str, dict[str, int]]:
    """``{word: {path: steps whose bits differ from the in-step value}}``."""
    report = {}
    for word, paths in found.items():
        reference = np.array(paths["in_step"], np.uint32)
        paths = {**paths, "cli": cli[word]["cli"]}
        bad = {p: int(np.sum(np.array(paths[p], np.uint32) != reference)) for p in PATHS}
        report[word] = {p: n for p, n in bad.items() if n}
    return report


def _assert_one_value(found: dict, cli: dict) -> None:
    report = _mismatches(found, cli)
    for word in KERAS_FORMULAS:  # the two eager reads are one computation
        assert found[word]["eager"] == found[word]["hp"], word
    differing = {w: bad for w, bad in report.items() if bad and w not in KERAS_FORMULAS}
    assert not differing, f"read paths differ from the in-step value (steps): {differing}"


def test_the_examples_cover_every_vocabulary_word() -> None:
    assert {type(parse(text)).keyword for text in worker.WORDS.values()} == set(vocabulary())


def test_every_read_path_gives_the_in_step_value_on_tensorflow(tmp_path) -> None:
    # the TensorFlow pass's own process records the Keras paths (a subprocess would only add
    # a TensorFlow import); the CLI's samples still come from a process without Keras
    import keras

    assert keras.backend.backend() == "tensorflow"
    # every boundary and +-1, and every 25th step between (torch's grid): at least one step
    # inside each stretch between two boundaries
    steps = worker.steps_of(25)
    found = worker.backend_values(steps)
    cli = _record(tmp_path, "tensorflow", "numpy", stride=25)
    assert len(found["cosine"]["in_step"]) == len(steps) == 69
    _assert_one_value(found, cli)
    # it can fail: the in-step value is the schedule the update used, not a re-read
    assert found["linear"]["in_step"] != found["cosine"]["in_step"]


@pytest.mark.slow
def test_every_read_path_gives_the_in_step_value_under_torch_compile(tmp_path) -> None:
    found = _record(tmp_path, "torch", stride=25)
    cli = _record(tmp_path, "torch", "numpy", stride=25)
    _assert_one_value(found, cli)


@pytest.mark.slow
@pytest.mark.parametrize("x64", [True, False])
def test_every_read_path_gives_the_in_step_value_on_jax(tmp_path, x64) -> None:
    # the words compute in float64 without x64 too (within jax.enable_x64), their sine the
    # polynomial (Keras's ops.sin of a float64 is float32 on JAX)
    found = _record(tmp_path, "jax", x64=x64, stride=50)
    cli = _record(tmp_path, "jax", "numpy", stride=50)
    _assert_one_value(found, cli)
