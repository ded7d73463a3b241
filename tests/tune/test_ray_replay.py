"""hs.tune.replay against Ray's own reader of PBT policy logs (no Ray processes)."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="the `tune` extra (Ray) is not installed"
)  # Ray's Tune imported where used: collecting the file costs a process no Tune import


def _write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _config(lr, wd=0.01):
    return {"learning_rate": lr, "weight_decay": wd, "optimizer": "adamw", "nested": {"a": 1}}


# member 2's log: an exploit of member 0 that a later exploit of member 1 overwrote (Ray's
# reader skips it: the chain breaks), then 2 <- 1 at 3, 1 <- 2 at 5 copied in, 2 <- 1 at 8
ROWS = [
    ["2", "0", 2, 2, _config(0.5), _config(0.6)],
    ["2", "1", 3, 3, _config(0.1), _config(0.12, 0.02)],
    ["1", "2", 5, 5, _config(0.12, 0.02), _config(0.096, 0.02)],
    ["2", "1", 7, 8, _config(0.096, 0.02), _config(0.0768, 0.016)],
]


def _ray_replay(path):
    """Ray's reader, then the report after which Ray's replay scheduler switches each
    config (its on_trial_result: the first report >= the change's iteration, one per report)."""
    from ray.tune.schedulers.pbt import PopulationBasedTrainingReplay

    replay = object.__new__(PopulationBasedTrainingReplay)
    initial, policy = replay._load_policy(str(path))
    switches, report = [], 0
    for change_at, config in policy:
        report = max(report + 1, change_at)
        switches.append((report, config))
    return initial, switches


def test_schedules_switch_where_rays_replay_switches(tmp_path) -> None:
    path = _write(tmp_path / "pbt_policy_2.txt", ROWS)
    initial, switches = _ray_replay(path)
    assert len(switches) == 3  # the first row was overwritten
    schedules = hs.tune.replay(path, steps_per_report=10)
    assert sorted(schedules) == ["learning_rate", "nested/a", "weight_decay"]  # numbers only
    previous = initial
    for report, config in switches:
        step = report * 10
        for key in ("learning_rate", "weight_decay"):
            assert float(schedules[key](step - 1)) == np.float32(previous[key])
            assert float(schedules[key](step)) == np.float32(config[key])
        previous = config
    assert float(schedules["learning_rate"](0)) == np.float32(initial["learning_rate"])
    assert float(schedules["learning_rate"](10**6)) == np.float32(0.0768)


def test_synchronous_logs_switch_at_the_later_of_the_two_iterations(tmp_path) -> None:
    # synch=True: Ray logs the member that completed the round one round late
    rows = [
        ["0", "1", 2, 0, _config(0.1), _config(0.08)],
        ["1", "0", 2, 4, _config(0.08), _config(0.064)],
    ]
    schedules = hs.tune.replay(_write(tmp_path / "p.txt", rows), steps_per_report=4, synch=True)
    lr = schedules["learning_rate"]
    assert [float(lr(s)) for s in (7, 8, 15, 16)] == [
        float(np.float32(v)) for v in (0.1, 0.08, 0.08, 0.064)
    ]
    assert lr.boundaries == [8, 16]


def test_nested_config_keys_get_outer_inner_names(tmp_path) -> None:
    rows = [["0", "1", 2, 2, {"head": {"learning_rate": 0.1}}, {"head": {"learning_rate": 0.2}}]]
    schedules = hs.tune.replay(_write(tmp_path / "p.txt", rows))
    assert [float(schedules["head/learning_rate"](s)) for s in (1, 2)] == [
        float(np.float32(0.1)),
        float(np.float32(0.2)),
    ]


def test_bad_policy_files_are_named(tmp_path) -> None:
    with pytest.raises(InvalidArgumentError, match="No such file"):
        hs.tune.replay(tmp_path / "missing.txt")
    with pytest.raises(InvalidArgumentError, match="line 1 is not a PBT policy row"):
        hs.tune.replay(_write(tmp_path / "bad.txt", [{"a": 1}]))
    with pytest.raises(InvalidArgumentError, match="never exploited"):
        hs.tune.replay(_write(tmp_path / "empty.txt", []))
    with pytest.raises(InvalidArgumentError, match="steps_per_report=0"):
        hs.tune.replay(_write(tmp_path / "ok.txt", ROWS), steps_per_report=0)


GOOD = '["1", "0", 2, 2, {"learning_rate": 0.1}, {"learning_rate": 0.12}]'


@pytest.mark.parametrize(
    ("second", "why"),
    [
        ('["0", "1", 4, 4, [0.1], {"learning_rate": 0.04}]', "the old config must be a dict"),
        ('["0", "1", "four", 4, {}, {"learning_rate": 0.04}]', "target iteration must be"),
        ('["0", "1", 4, null, {}, {"learning_rate": 0.04}]', "clone iteration must be a whole"),
        ('["0", "1", NaN, 4, {}, {"learning_rate": 0.04}]', "not nan"),
        ('["0", "1", 4, 1e400, {}, {"learning_rate": 0.04}]', "not inf"),
        ('["0", "1", [4], 4, {}, {"learning_rate": 0.04}]', "not [4]"),
        ('["0", "1", 4, 4, {}, {"learning_rate": 1e400}]', "'learning_rate' is inf, not a"),
        ('["0", "1", 4, 4, {}, {"learning_rate": -1e308}]', "is -1e+308, beyond float32's"),
        ('["0", "1", 4, 4, {}, {"momentum": 1e39}]', "'momentum' is 1e+39, beyond float32's"),
        ('["0", "1", 4, 1' + "0" * 31 + ', {}, {"lr": 0.1}]', "clone iteration is a 32-digit"),
        ('["0", "1", 1e300, 4, {}, {"lr": 0.1}]', "target iteration is 1e+300, above 2**63"),
        (
            '["0", "1", 4, 4, {}, {"head": {"learning_rate": 1' + "0" * 400 + "}}]",
            "the new config's 'head/learning_rate' is a 401-digit number, beyond float32's",
        ),
    ],
)
def test_a_malformed_row_is_named_by_its_line(tmp_path, second: str, why: str) -> None:
    path = tmp_path / "pbt_policy_1.txt"
    path.write_text(f"{GOOD}\n\n{second}\n")
    with pytest.raises(InvalidArgumentError, match="line 3 is not a PBT policy row") as raised:
        hs.tune.replay(path)
    assert why in str(raised.value) and "Received: policy_file=" in str(raised.value)


def test_a_file_that_is_not_utf8_is_named_by_its_line(tmp_path) -> None:
    path = tmp_path / "pbt_policy_1.txt"
    path.write_bytes(GOOD.encode() + b'\n["0", "1", 4, 4, {}, {"lr\xff": 0.04}]\n')
    with pytest.raises(InvalidArgumentError, match="line 2 is not UTF-8 text"):
        hs.tune.replay(path)


def test_whole_float_iterations_are_read_as_iterations(tmp_path) -> None:
    path = tmp_path / "pbt_policy_1.txt"
    path.write_text(GOOD.replace("2, 2", "2.0, 2") + "\n")
    lr = hs.tune.replay(path, steps_per_report=10)["learning_rate"]
    assert [round(float(v), 4) for v in lr([0, 19, 20])] == [0.1, 0.1, 0.12]
