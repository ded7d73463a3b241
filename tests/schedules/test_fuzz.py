"""Fuzzing the expression language: any text either parses or raises ScheduleSyntaxError,
and what parses costs work linear in its size.

The bound is on counted work, not on wall-clock time (which a loaded machine stretches): one
evaluation calls every node's ``value`` at most once, so it does at most as many node
evaluations as the tree has nodes, and the tree has no more nodes than the text has
characters. Nested warmups and long comparison chains, the two known blow-ups, are forced
into the generated expressions.
"""

from __future__ import annotations

import json
from typing import Any

import keras
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError, ScheduleSyntaxError
from hyperstep.schedules import Schedule
from hyperstep.schedules.language import MAX_DEPTH

SETTINGS = settings(
    max_examples=150,
    deadline=None,  # bounded by counting work below, not by a clock
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
STEPS = np.array([0, 1, 3, 7, 50, 1000], "float32")

numbers = st.sampled_from(["0", "1", "0.5", "2", "1e-3", "3", "100", "-1", "1e30", "inf"])
leaves = st.one_of(numbers, st.just("step"), st.just("epoch"))


def _extend(children: Any) -> Any:
    two = st.tuples(children, children)
    return st.one_of(
        st.builds(lambda p, op: f"({p[0]} {op} {p[1]})", two, st.sampled_from("+-*/")),
        st.builds(lambda p: f"({p[0]} ** {p[1]})", two),
        st.builds(lambda c: f"-{c}", children),
        st.builds(
            lambda c, n, op: f" {op} ".join([c] * n),
            children,
            st.integers(2, 6),
            st.sampled_from(["<", "<=", "==", "!="]),
        ),
        st.builds(lambda c, f: f"{f}({c})", children, st.sampled_from(["exp", "cos", "abs"])),
        st.builds(lambda p, f: f"{f}({p[0]}, {p[1]})", two, st.sampled_from(["min", "max"])),
        st.builds(lambda p, c: f"where({p[0]}, {p[1]}, {c})", two, children),
        st.builds(lambda c, n: "warmup(" * n + c + ", steps=2)" * n, children, st.integers(1, 8)),
        st.builds(lambda p: f"join([{p[0]}, {p[1]}], [5])", two),
    )


expressions = st.recursive(leaves, _extend, max_leaves=12)
#: valid expressions with random characters inserted or deleted
mangled = st.builds(
    lambda text, at, junk, cut: text[:at] + junk + text[at + cut :],
    expressions,
    st.integers(0, 200),
    st.text(alphabet="()[],=*+-<.'\"abcxyz019_ ", max_size=4),
    st.integers(0, 3),
)


def nodes(schedule: Schedule) -> list[Schedule]:
    found, stack = [], [schedule]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.children())
    return found


def count_calls(schedule: Schedule) -> dict[int, int]:
    """Wrap every node's ``value`` (on the instance) to count its calls, by node id."""
    calls: dict[int, int] = {}
    for node in nodes(schedule):
        calls[id(node)] = 0

        def counted(step: Any, node: Schedule = node, inner: Any = node.value) -> Any:
            calls[id(node)] += 1
            return inner(step)

        node.value = counted  # type: ignore[method-assign]
    return calls


def parse_or_refuse(text: str) -> Schedule | None:
    try:
        return hs.parse(text, steps_per_epoch=10)
    except ScheduleSyntaxError:
        return None


def check_linear(schedule: Schedule, text: str) -> None:
    tree = nodes(schedule)
    assert len(tree) <= len(text)  # the tree is no larger than the text
    calls = count_calls(schedule)
    values = keras.ops.convert_to_numpy(schedule(STEPS))
    assert values.shape == STEPS.shape and values.dtype == np.float32
    # every node evaluated at most once per call (a constant sub-expression folded in float64
    # is not evaluated at all): work linear in the size
    assert calls[id(schedule)] == 1 and max(calls.values()) <= 1, text


@SETTINGS
@given(expressions)
def test_generated_expressions_parse_evaluate_once_per_node_and_round_trip(text):
    schedule = parse_or_refuse(text)
    if schedule is None:
        return
    again = hs.parse(repr(schedule), steps_per_epoch=10)
    assert repr(again) == repr(schedule)
    config = json.loads(json.dumps(keras.saving.serialize_keras_object(schedule)))
    assert repr(keras.saving.deserialize_keras_object(config)) == repr(schedule)
    check_linear(schedule, text)


@SETTINGS
@given(st.one_of(mangled, st.text(max_size=60)))
def test_any_text_parses_or_raises_schedule_syntax_error(text):
    schedule = parse_or_refuse(text)  # anything else escapes and fails the test
    if schedule is not None:
        check_linear(schedule, text)


@pytest.mark.parametrize(
    "text",
    [
        "warmup(" * 16 + "0.1" + ", steps=2)" * 16,  # twice per level: 2**16 evaluations
        "warmup(" * 40 + "0.1" + ", steps=2)" * 40,
        "join([" * 30 + "step" + ", 1], [5])" * 30,
    ],
    ids=["warmup16", "warmup40", "join30"],
)
def test_nested_combinators_evaluate_each_child_once(text):
    check_linear(hs.parse(text), text)


@pytest.mark.parametrize("terms", [MAX_DEPTH + 1, 400, 1000])
def test_a_long_comparison_chain_is_refused_at_the_depth_limit(terms):
    text = " < ".join(["step"] * terms)
    with pytest.raises(ScheduleSyntaxError, match="nested too deeply") as info:
        hs.parse(text)
    # the caret points at the first comparison past the limit, inside the chain
    assert 0 < info.value.column < len(text)
    assert text[info.value.column :].startswith("step")


def test_a_chain_within_the_limit_parses_and_reprs():
    text = " < ".join(["step"] * (MAX_DEPTH - 2))
    schedule = hs.parse(text)
    assert repr(hs.parse(repr(schedule))) == repr(schedule)


def _warmup_config(depth: int) -> Any:
    config: Any = 0.1
    for _ in range(depth):
        config = keras.saving.serialize_keras_object(hs.schedules.warmup(0.1, steps=2))
        config = json.loads(json.dumps(config))
    nested: Any = 0.1
    for _ in range(depth):
        nested = {**config, "config": {**config["config"], "schedule": nested}}
    return nested


def test_a_config_nested_past_the_limit_is_refused():
    ok = keras.saving.deserialize_keras_object(_warmup_config(MAX_DEPTH))
    assert len(nodes(ok)) == MAX_DEPTH + 1
    for depth in (MAX_DEPTH + 1, 3000):  # 3000: past Python's recursion limit
        with pytest.raises(InvalidArgumentError, match=f"nests {depth} schedules deep"):
            keras.saving.deserialize_keras_object(_warmup_config(depth))
