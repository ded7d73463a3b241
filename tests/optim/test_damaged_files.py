"""A ``.keras`` file whose hyperstep config holds a damaged number (out of range, NaN, a huge
integer, the wrong type) is refused by ``keras.models.load_model`` in one line that names the
file and the field, whatever Keras wraps the error of a nested object in (before: Keras's
TypeError of up to 13 lines, or a silent load, and never the file)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest

import hyperstep as hs

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")


_SAVED: dict[str, bytes] = {}  # kind -> the file's bytes: one trained model per kind


def _saved(path: Path, kind: str) -> dict[str, Any]:
    """Write to ``path`` a trained model compiled with a hyperstep optimizer (an SWA
    attached; trained and saved once per kind); return the file's config."""
    if kind not in _SAVED:
        _SAVED[kind] = _trained(path.with_name(f"{kind}.keras"), kind)
    path.write_bytes(_SAVED[kind])
    with zipfile.ZipFile(path) as z:
        return json.loads(z.read("config.json"))


def _trained(path: Path, kind: str) -> bytes:
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    schedule = hs.schedules.cosine(0.1, steps=100)
    if kind == "scheduled":
        opt = hs.scheduled(keras.optimizers.AdamW(), learning_rate=schedule, beta_1=0.9)
    else:
        opt = hs.StepOptimizer("adam", learning_rate=schedule, beta_1=0.9)
    hs.SWA(opt, start=5)
    model.compile(opt, "mse")
    model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)
    model.save(path)
    return path.read_bytes()


def _damage(path: Path, config: dict[str, Any], field: tuple[str, ...], value: Any) -> None:
    """Rewrite ``path`` with ``value`` at ``field`` of the optimizer's config."""
    config = json.loads(json.dumps(config))
    node = config["compile_config"]["optimizer"]["config"]
    for key in field[:-1]:
        node = node[key]
    node[field[-1]] = value
    with zipfile.ZipFile(path) as z:
        files = {name: z.read(name) for name in z.namelist()}
    files["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)


STEPS = ("hyperparameters", "learning_rate", "config", "steps")
CLOCK = ("clock", "config", "steps_per_epoch")
NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize("kind", ["scheduled", "step_optimizer"])
@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        (STEPS, INF, "`cosine(steps=...)` must be a positive number of steps. Received: steps=inf"),
        (STEPS, "x", "`cosine(steps=...)` must be a positive number of steps. Received: steps='x'"),
        (STEPS, -3, "Received: steps=-3"),
        (("hyperparameters", "beta_1"), NAN, "(beta_1=...)` must be a finite number"),
        (("hyperparameters", "beta_1"), 1e39, "(beta_1=...)` is beyond float32's range"),
        (CLOCK, 10**30, "`Clock(steps_per_epoch=...)` must be a positive integer below 2**63"),
        (CLOCK, NAN, "Received: steps_per_epoch=nan"),
        (CLOCK, "x", "Received: steps_per_epoch='x'"),
        (("average", "start"), 10**30, "`SWA(start=...)` must be an integer >= 0 and below"),
        (("average", "start"), -3, "Received: start=-3"),
        (("average", "every"), 2.5, "`SWA(every=...)` must be an integer >= 1"),
    ],
)
def test_a_damaged_number_is_one_line_naming_the_file_and_the_field(
    tmp_path: Path, kind: str, field: tuple[str, ...], value: Any, named: str
) -> None:
    path = tmp_path / "model.keras"
    _damage(path, _saved(path, kind), field, value)
    with pytest.raises(hs.errors.InvalidArgumentError) as raised:
        keras.models.load_model(path)
    (line,) = str(raised.value).splitlines()
    assert line.startswith(f"{path} is damaged: ") and named in line


def test_an_intact_file_loads_and_a_damaged_config_alone_names_no_file(tmp_path: Path) -> None:
    path = tmp_path / "model.keras"
    config = _saved(path, "scheduled")
    loaded = keras.models.load_model(path)
    assert int(loaded.optimizer.clock.step) == 1
    optimizer = config["compile_config"]["optimizer"]
    optimizer["config"]["clock"]["config"]["steps_per_epoch"] = -3
    with pytest.raises(TypeError, match="steps_per_epoch=-3") as raised:  # Keras's own wrap
        keras.optimizers.deserialize(optimizer)
    assert str(path) not in str(raised.value)
