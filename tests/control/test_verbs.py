"""Units of hyperstep.control.verbs: one row per verb, pure folds, the value as a schedule."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from hyperstep.control import directory
from hyperstep.control.verbs import VERBS, Track, expression, pieces_of
from hyperstep.schedules.language import parse


def start() -> Track:
    return Track(parse("0.1 * (1 - step / 100)"), 1.0, None, None, False)


def test_the_table_has_one_row_per_verb_of_the_protocol() -> None:
    assert tuple(VERBS) == directory.VERBS
    assert {row.takes for row in VERBS.values()} == {"numbers", "schedules", "names", None}


def test_each_fold_is_pure_and_changes_only_its_part() -> None:
    state = start()
    base = state.base
    entry = {"schedules": {"lr": "0.5"}, "driven": ["lr"], "cooldown": {"lr": {"start": 3}}}
    folded = {
        "set": VERBS["set"].fold(state, {"values": {"lr": 0.3}}, "lr", {}),
        "scale": VERBS["scale"].fold(state, {"values": {"lr": 0.3}}, "lr", {}),
        "clear": VERBS["clear"].fold(state._replace(override=1.0), {}, "lr", {}),
        "schedule": VERBS["schedule"].fold(state, {}, "lr", entry),
        "cooldown": VERBS["cooldown"].fold(state._replace(override=2.0), {}, "lr", entry),
        "stop": VERBS["stop"].fold(state, {}, "lr", {}),
    }
    assert state == Track(base, 1.0, None, None, False)  # untouched
    assert folded["set"] == state._replace(override=float(np.float32(0.3)))
    assert folded["scale"] == state._replace(scale=float(np.float32(0.3)))
    assert folded["clear"] == state
    assert repr(folded["schedule"].base) == "constant(0.5)" and folded["schedule"].driven
    cooled = folded["cooldown"]
    assert cooled.override is None and cooled.cooldown == {"start": 3} and cooled.driven
    assert folded["stop"] == state


def test_expression_is_override_else_base_times_scale_and_pieces_switch_at_steps() -> None:
    state = start()._replace(scale=0.5)
    halved = expression(state, exact=False)
    assert float(keras.ops.convert_to_numpy(halved(10))) == pytest.approx(0.045, rel=1e-6)
    assert repr(expression(state._replace(override=0.25), exact=False)) == "constant(0.25)"
    whole = pieces_of([(0, parse("1.0")), (5, parse("2.0"))])
    values = [float(keras.ops.convert_to_numpy(whole(step))) for step in (0, 4, 5, 9)]
    assert values == [1.0, 1.0, 2.0, 2.0]


def test_a_schedule_command_refuses_a_length_its_word_refuses_at_the_live_run_s_total() -> None:
    # `total - 200` at a live length of 100 is -100 steps: refused before the run applies it
    import hyperstep as hs
    from hyperstep.control.verbs import meaning

    hp = hs.Hyperparameter(0.9, clock=hs.Clock(total=100), name="momentum")
    text = "cosine(0.9, steps=total - 200)"
    command = {"verb": "schedule", "values": {"momentum": text}}
    with pytest.raises(
        ValueError,
        match=r"cosine\(0.9, steps=total - 200.0\)` with the run's length `total` = 100: "
        r"`cosine\(steps=...\)` must be a positive number of steps. Received: steps=-100.0. "
        r"Bind a longer run \(`clock.total = n`.*max\(total - 200, 1\).*Received: total=100",
    ):
        meaning(command, {"momentum": hp}, None, 3, False)
    hp.clock.total = 1000  # a length that leaves 800 steps: the schedule written with 800
    found = meaning(command, {"momentum": hp}, None, 3, False)
    assert found["schedules"] == {"momentum": text.replace("200", "200.0")}
