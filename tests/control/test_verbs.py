"""Units of hyperstep.control.verbs: one row per verb, the command checks, pure folds, the value
as a schedule."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from hyperstep.control.verbs import (
    FLOAT32_MAX,
    VERBS,
    Track,
    check_command,
    expression,
    parse_number,
    parse_schedule,
    pieces_of,
    schedule_value,
)
from hyperstep.errors import InvalidArgumentError
from hyperstep.schedules.language import parse


def start() -> Track:
    return Track(parse("0.1 * (1 - step / 100)"), 1.0, None, None, False)


def test_the_table_has_one_row_per_verb_and_each_row_s_operands_are_what_its_check_takes() -> None:
    assert tuple(VERBS) == ("set", "scale", "clear", "schedule", "cooldown", "stop")
    assert {row.takes for row in VERBS.values()} == {"numbers", "schedules", "names", None}
    operands = {"numbers": {"values": {"x": 2}}, "schedules": {"values": {"x": "2"}}}
    operands |= {"names": {"names": ["x"]}, None: {}}
    for verb, row in VERBS.items():
        checked = check_command({"verb": verb, **operands[row.takes]})
        assert set(checked) - {"verb"} == set(operands[row.takes]), verb


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


def test_float32_max_is_the_largest_float_that_stays_finite_in_float32() -> None:
    above = np.nextafter(FLOAT32_MAX, np.inf)
    with np.errstate(over="ignore"):
        assert np.isfinite(np.float32(FLOAT32_MAX)) and np.isinf(np.float32(above))
    assert np.float32(FLOAT32_MAX) == np.finfo(np.float32).max
    assert parse_number("x", FLOAT32_MAX) == FLOAT32_MAX
    with pytest.raises(InvalidArgumentError):
        parse_number("x", float(above))


@pytest.mark.parametrize(
    ("value", "expected"), [(1, 1.0), (-2.5, -2.5), (" 1e-4 ", 1e-4), ("3.4e38", 3.4e38)]
)
def test_parse_number(value, expected) -> None:
    assert parse_number("lr", value) == expected


@pytest.mark.parametrize("value", [True, None, "abc", float("inf"), "nan", 1e39, [1]])
def test_parse_number_refuses_naming_the_argument(value) -> None:
    with pytest.raises(InvalidArgumentError, match=r"lr needs a finite number.*Received: lr="):
        parse_number("lr", value)


def test_parse_schedule_returns_the_repr_or_names_the_problem() -> None:
    from hyperstep.schedules.language import parse

    assert repr(parse_schedule("lr", "0.1 * 0.5")) == repr(parse("0.1 * 0.5"))
    for bad in ("", "  ", 3, "cosine(", "__import__('os')"):
        with pytest.raises(InvalidArgumentError, match=r"lr.*Received: lr="):
            parse_schedule("lr", bad)


def test_check_command_normalizes_each_verb() -> None:
    assert check_command({"verb": "set", "values": {"lr": "0.5"}, "at": 3}) == {
        "verb": "set",
        "at": 3,
        "values": {"lr": 0.5},
    }
    assert check_command({"verb": "cooldown"}) == {"verb": "cooldown", "names": ["learning_rate"]}
    assert check_command({"verb": "cooldown", "names": ["wd"], "steps": 5, "shape": "linear"}) == {
        "verb": "cooldown",
        "names": ["wd"],
        "steps": 5,
        "shape": "linear",
    }
    assert check_command({"verb": "stop", "ignored": 1}) == {"verb": "stop"}


@pytest.mark.parametrize(
    ("command", "match"),
    [
        ([], "must be an object"),
        ({"verb": "go"}, "unknown verb.*verb='go'"),
        ({"verb": "stop", "at": -1}, "at=-1"),
        ({"verb": "stop", "at": True}, "at=True"),
        ({"verb": "set", "values": {}}, "at least one NAME=VALUE"),
        ({"verb": "clear"}, "at least one NAME. Received: names=None"),
        ({"verb": "cooldown", "steps": 0}, "steps=0"),
        ({"verb": "cooldown", "shape": "step"}, "shape='step'"),
        ({"verb": "set", "values": {"": 1}}, "name must be a string"),
    ],
)
def test_check_command_refuses_naming_what(command, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        check_command(command)


def test_check_command_suggests_a_close_name() -> None:
    with pytest.raises(InvalidArgumentError, match=r"'lerning_rate'.*did you mean 'learning_rate'"):
        check_command({"verb": "clear", "names": ["lerning_rate"]}, names=["learning_rate", "wd"])


def test_check_command_checks_a_learning_rate_schedule_where_it_takes_effect() -> None:
    def schedule(name: str, text: str, **given: object) -> dict:
        return {"verb": "schedule", "values": {name: text}, **given}

    with pytest.raises(InvalidArgumentError, match=r"negative at step 200.*'0.1 \* \(1 - s"):
        check_command(schedule("learning_rate", "0.1 * (1 - step / 100)"), step=200)
    with pytest.raises(InvalidArgumentError, match=r"head/learning_rate zero at step 9"):
        check_command(schedule("head/learning_rate", "step - 9", at=9), step=0)
    check_command(schedule("learning_rate", "0.1 * (1 - step / 100)"))  # step unknown
    check_command(schedule("learning_rate", "step - 1", from_now=True, force=True), step=0)
    check_command(schedule("beta", "step - 1"), step=0)  # not a learning rate
    # it reads `epoch` (only the run knows its length): the run checks it
    assert schedule_value(parse("0.1 * (1 - epoch)"), 5) is None
    assert schedule_value(parse("0.5 - step"), 2) == -1.5
