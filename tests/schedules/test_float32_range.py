"""Every schedule argument is checked against float32's range, at construction and when a
config is loaded: a number finite in float64 but not in float32 is refused with an error
naming it, never accepted to give inf or nan at every step."""

from __future__ import annotations

import copy
import json
from typing import Any

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.errors import HyperstepError, ScheduleSyntaxError
from hyperstep.schedules.language import vocabulary

EXAMPLES = [
    "constant(0.5)",
    "linear(1.0, 0.1, 1000, begin=10)",
    "exponential(0.1, 0.5, 100, staircase=True, end=0.01)",
    "inverse_time(0.1, 0.5, every=10)",
    "polynomial(0.1, 0.001, 500, power=2, cycle=True)",
    "cosine(1e-3, 1000, end=1e-5)",
    "cosine_restarts(0.1, steps=100, t_mul=2.0, m_mul=0.5)",
    "piecewise([100, 500], [1.0, 0.5, 0.1])",
    "cyclic(0.1, 1.0, 100, mode='triangular2')",
    "one_cycle(0.1, 1000, pct_start=0.25)",
    "wsd(1e-3, 100, 800, 100, decay_type='1-sqrt', min_ratio=0.1)",
    "inverse_sqrt(1e-3, 100, timescale=50)",
    "cooldown(0.9, 70, 630, shape='exponential', end=0.1)",
    "warmup(cosine(1e-3, steps=900), steps=100, start=1e-5)",
    "join([linear(0, 1, 100), cosine(1.0, 400), 0.01], [100, 500])",
    "exponential_decay(0.1, 100, 0.93)",
    "polynomial_decay(0.1, 500, 0.001, power=2.0, cycle=True)",
    "cosine_decay(0.0, 900, alpha=0.1, warmup_target=1e-3, warmup_steps=100)",
    "cosine_decay_restarts(0.1, 100, t_mul=2.0, m_mul=0.5, alpha=0.1)",
    "0.1 * 0.5 ** (step / 1000) + 1e-4",
]
STEPS = np.array([0, 1, 7, 100, 999, 1000, 10_000], np.float32)
BEYOND = [1e39, -1e39, 1e-320, 3.5e38, 10**400]  # 10**400: a JSON integer beyond any float


def _leaves(config: Any, path: tuple = ()) -> list[tuple]:
    """The paths of the number leaves of a serialized schedule."""
    found = []
    if isinstance(config, dict):
        for key, value in config.items():
            found += _leaves(value, (*path, key))
    elif isinstance(config, list):
        for index, value in enumerate(config):
            found += _leaves(value, (*path, index))
    elif isinstance(config, (int, float)) and not isinstance(config, bool):
        found.append(path)
    return found


def _replaced(config: Any, path: tuple, value: float) -> Any:
    config = copy.deepcopy(config)
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return config


def test_the_examples_cover_the_vocabulary():
    words = {type(hs.parse(text)).keyword for text in EXAMPLES}
    assert set(vocabulary()) <= words | {"binary"}


@pytest.mark.parametrize("text", EXAMPLES)
def test_a_config_leaf_beyond_float32_is_refused_or_harmless(text):
    config = json.loads(json.dumps(keras.saving.serialize_keras_object(hs.parse(text))))
    leaves = _leaves(config)
    assert leaves
    refused = 0
    for path in leaves:
        for value in BEYOND:
            try:
                schedule = keras.saving.deserialize_keras_object(_replaced(config, path, value))
            except HyperstepError as error:
                assert "Received" in str(error) or isinstance(error, ScheduleSyntaxError)
                refused += 1
                continue
            values = np.asarray(keras.ops.convert_to_numpy(schedule(STEPS)))
            # accepted: a harmless value (1e-320 rounds to 0 as a start, a boundary far away)
            assert np.isfinite(values).any(), (path, value, values)
    assert refused > 0


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: hs.schedules.cosine(0.1, steps=1e39), r"Received: steps=1e\+39"),
        (lambda: hs.schedules.cosine(0.1, steps=1e-320), r"Received: steps=1e-320"),
        (lambda: hs.schedules.linear(0.1, 0.0, steps=1e-320), r"Received: steps=1e-320"),
        (lambda: hs.Hyperparameter(1e39), r"float32.*Received: value=1e\+39"),
        (lambda: hs.parse("1/0"), r"no finite value"),
        (lambda: hs.parse("step * log(0)"), r"no finite value"),
        (lambda: hs.parse("1e30 * 1e30"), r"beyond float32"),
        (lambda: hs.schedules.constant(-1e39), r"Received: value=-1e\+39"),
    ],
)
def test_the_issue_cases_are_refused_naming_the_value(build, match):
    with pytest.raises(HyperstepError, match=match):
        build()


@pytest.mark.parametrize(("text", "at"), [("1/0", "1/0"), ("step + log(0)", "log(0)")])
def test_a_constant_with_no_finite_value_is_refused_at_its_column(text, at):
    with pytest.raises(ScheduleSyntaxError, match="no finite value") as info:
        hs.parse(text)
    assert text[info.value.column :].startswith(at)
    assert "^" in str(info.value)  # the parser's caret under the column


def test_the_parser_points_at_the_operation_with_no_finite_value():
    with pytest.raises(ScheduleSyntaxError) as info:
        hs.parse("0.1 + step * (2 / 0)")
    assert "0.1 + step * (2 / 0)"[info.value.column :].startswith("2 / 0")
