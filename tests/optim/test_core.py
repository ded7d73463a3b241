"""The one optimizer core: hs.scheduled and hs.StepOptimizer share their signatures' keyword
arguments, their config format, and load configs saved in the format before it."""

import importlib.util
import inspect
import json
import pathlib

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.optim.scheduled import ScheduledOptimizer

DATA = pathlib.Path(__file__).with_name("data")
SHARED = ("hyperparameters", "clock", "advance", "fused", "groups")


def _fixture_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("make_old_configs", DATA / "make_old_configs.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.parametrize(
    "function",
    [hs.scheduled, hs.StepOptimizer.__init__, ScheduledOptimizer.__init__],
    ids=["scheduled", "StepOptimizer", "ScheduledOptimizer"],
)
def test_clock_advance_and_groups_are_keyword_only(function) -> None:  # type: ignore[no-untyped-def]
    parameters = inspect.signature(function).parameters
    for name in ("clock", "advance", "groups"):
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, name


def test_both_optimizers_save_hyperparameters_in_one_format() -> None:
    def groups() -> list[hs.Group]:
        return [
            hs.Group("head", match="*bias", learning_rate="10 * learning_rate", beta_1=0.5),
            hs.Group("emb", match=["emb/*", "x"], beta_2="cosine(0.99, steps=10)"),
        ]

    values = {"learning_rate": "cosine(0.1, steps=100)", "beta_1": 0.8, "epsilon": 1e-6}
    # (`fused` given: its defaults differ, False for hs.scheduled, None for StepOptimizer)
    scheduled = hs.scheduled(
        keras.optimizers.Adam(), groups=groups(), advance=False, fused=True, **values
    )
    step = hs.StepOptimizer("adam", groups=groups(), advance=False, fused=True, **values)
    a = json.loads(json.dumps(scheduled.get_config()))
    b = json.loads(json.dumps(step.get_config()))
    for key in ("advance", "fused", "groups"):
        assert a[key] == b[key], key
    assert a["clock"]["class_name"] == b["clock"]["class_name"] == "Clock"
    assert b["hyperparameters"] == {key: a["hyperparameters"][key] for key in b["hyperparameters"]}
    assert set(b["hyperparameters"]) == {"learning_rate", "beta_1", "beta_2", "epsilon"}
    assert a["hyperparameters"]["beta_1"] == 0.8  # a constant is its number in both
    assert a["groups"][0]["hyperparameters"] == {
        "learning_rate": "10.0 * learning_rate",
        "beta_1": 0.5,
    }


def _described(opt: keras.optimizers.Optimizer) -> dict[str, object]:
    """What a config gives back: schedules (as text), values at a few steps, groups."""
    steps = np.array([0, 7, 50, 99], "float32")
    return {
        "schedules": {k: repr(hp._raw_schedule) for k, hp in opt.hyperparameters.items()},
        "values": {
            k: keras.ops.convert_to_numpy(hp.at(steps)).tolist()
            for k, hp in opt.hyperparameters.items()
        },
        "groups": {name: (g.match, sorted(g.hyperparameters)) for name, g in opt.groups.items()},
        "advance": opt.get_config()["advance"],
        "type": type(opt).__name__,
    }


@pytest.mark.parametrize("name", ["step_optimizer", "scheduled"])
def test_configs_saved_before_the_shared_format_still_load(name: str) -> None:
    # saved by the code of the commit named in the file (tests/optim/data/make_old_configs.py)
    old = json.loads((DATA / "old_configs.json").read_text())[name]
    assert set(SHARED) - set(old["config"]) == (
        {"hyperparameters"} if name == "step_optimizer" else set()
    )
    loaded = keras.optimizers.deserialize(old)
    expected = _fixture_module().optimizers()[name]  # the same arguments, built today
    assert _described(loaded) == _described(expected)
    again = keras.optimizers.deserialize(keras.optimizers.serialize(loaded))  # today's format
    assert _described(again) == _described(expected)
    assert set(SHARED) <= set(keras.optimizers.serialize(loaded)["config"])
