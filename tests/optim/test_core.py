"""The one optimizer core: hs.scheduled and hs.StepOptimizer share their signatures' keyword
arguments and their config format."""

import inspect
import json

import keras
import pytest

import hyperstep as hs
from hyperstep.optim.scheduled import ScheduledOptimizer


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
