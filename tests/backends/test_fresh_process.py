"""What ``hs.scheduled`` and ``hs.StepOptimizer`` save loads in a new process that only
imported hyperstep, whether Keras was imported before or after it, and trains on bitwise as
the uninterrupted run (``fresh_worker.py``: every Keras optimizer on TensorFlow; Adam, AdamW
and SGD on JAX and torch; a user's registered optimizer and one given in
``custom_objects``; StepOptimizer; ``.keras``, ``save_weights``, pickle and
``tf.train.Checkpoint``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import keras
import pytest

import hyperstep as hs

WORKER = Path(__file__).with_name("fresh_worker.py")
#: the load order each backend's fresh process takes (both orders on every backend would
#: double the run; the quick test below takes both on the current backend)
ORDERS = {"tensorflow": "hyperstep-first", "jax": "keras-first", "torch": "hyperstep-first"}


def _env(backend: str) -> dict[str, str]:
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("JAX_ENABLE_X64", None)
    return env


def _run_all(arguments: dict[str, list[str]]) -> dict[str, Any]:
    processes = {
        backend: subprocess.Popen(
            [sys.executable, str(WORKER), *args],
            env=_env(backend),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for backend, args in arguments.items()
    }
    found = {}
    for backend, process in processes.items():
        out, err = process.communicate(timeout=3600)  # a hang guard only
        lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
        assert process.returncode == 0 and lines, f"{backend} worker failed:\n{err[-4000:]}"
        found[backend] = json.loads(lines[-1].removeprefix("RESULT "))
    return found


@pytest.mark.slow
def test_saved_files_load_in_a_fresh_process_and_train_on_bitwise(tmp_path: Path) -> None:
    folders = {backend: tmp_path / backend for backend in ORDERS}
    for folder in folders.values():
        folder.mkdir()
    saved = _run_all({b: ["save", str(folders[b])] for b in ORDERS})
    loaded = _run_all({b: ["load", str(folders[b]), ORDERS[b]] for b in ORDERS})
    for backend in ORDERS:
        results = loaded[backend]["results"]
        formats = 4 if backend == "tensorflow" else 3
        assert len(results) == formats * len(saved[backend]["cases"])
        bad = {
            key: value
            for key, value in results.items()
            if not (value["equal"] and value["same_class"])
            or value["step"] != value["expected_step"]
        }
        assert not bad, (backend, bad)
        assert loaded[backend]["warnings"] == [] and saved[backend]["warnings"] == []
        if backend == "tensorflow":  # every Keras optimizer but the two wrappers
            names = {k.split("/")[0] for k in results}
            assert {"Adam", "Ftrl", "Lamb", "Muon", "Lion", "Adafactor"} <= names
        if backend == "torch":  # one class per torch class: `fused` survives the load
            assert all(results[f"AdamW_fused/{f}"]["fused"] for f in ("keras", "pickle"))


_ORDER_CHECK = """
import json, sys
if sys.argv[1] == "keras-first":
    import keras
    import hyperstep
else:
    import hyperstep
    assert "keras" not in sys.modules  # `import hyperstep` stays cheap
    import keras
configs = json.loads(sys.stdin.read())
loaded = [keras.optimizers.deserialize(c) for c in configs]
print("RESULT " + json.dumps([
    [type(o).__name__, type(o).__module__, o.get_config()] for o in loaded
]))
"""


@pytest.mark.parametrize(  # keras first in `make test-slow`
    "order", [pytest.param("keras-first", marks=pytest.mark.slow), "hyperstep-first"]
)
def test_configs_deserialize_in_a_fresh_process_in_either_import_order(order: str) -> None:
    optimizers = [
        hs.scheduled(keras.optimizers.AdamW(), learning_rate="cosine(0.1, steps=10)"),
        hs.scheduled(keras.optimizers.SGD(momentum=0.9), momentum=0.8),
        hs.StepOptimizer("adam", learning_rate=0.01),
    ]
    configs = [keras.optimizers.serialize(o) for o in optimizers]
    assert configs[0]["registered_name"] == configs[1]["registered_name"] == "hyperstep>Scheduled"
    assert configs[0]["config"]["optimizer"]["class_name"] == "AdamW"
    process = subprocess.run(
        [sys.executable, "-c", _ORDER_CHECK, order],
        input=json.dumps(configs),
        env=_env(keras.backend.backend()),
        capture_output=True,
        text=True,
        timeout=float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600")),
    )
    lines = [line for line in process.stdout.splitlines() if line.startswith("RESULT ")]
    assert process.returncode == 0 and lines, process.stderr[-4000:]
    found = json.loads(lines[-1].removeprefix("RESULT "))
    for (name, module, config), optimizer in zip(found, optimizers, strict=True):
        assert (name, module) == (type(optimizer).__name__, type(optimizer).__module__)
        assert config == json.loads(json.dumps(optimizer.get_config()))
