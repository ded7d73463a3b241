"""Units of hyperstep.control.relative: ``Ref`` nodes, ``relative`` and ``resolve``'s cycles."""

from __future__ import annotations

import numpy as np
import pytest

import hyperstep as hs
from hyperstep.control.relative import Ref, references, relative, resolve
from hyperstep.errors import InvalidArgumentError, ScheduleSyntaxError


def test_relative_follows_the_target_effective_value() -> None:
    lr = hs.Hyperparameter("0.1 * (1 - step / 100)", name="learning_rate")
    head = relative("10 * learning_rate", {"learning_rate": lr})
    assert repr(head) == "10.0 * learning_rate"
    steps = np.array([0.0, 50.0, 99.0], dtype="float32")
    expected = 10 * np.float32(0.1) * (1 - steps / 100)
    np.testing.assert_allclose(np.asarray(head(steps)), expected, rtol=1e-6)
    lr.override.assign(0.02)  # an override reaches the reference
    np.testing.assert_allclose(np.asarray(head(steps)), [0.2, 0.2, 0.2], rtol=1e-6)


def test_references_lists_the_ref_nodes_in_tree_order() -> None:
    schedule = relative("a * b + a", {"a": None, "b": None})
    found = references(schedule)
    assert [ref.name for ref in found] == ["a", "b", "a"]
    assert all(isinstance(ref, Ref) for ref in found)
    assert references(relative("0.5 * step", {"a": None})) == []


def test_an_unknown_name_is_a_syntax_error_listing_the_known() -> None:
    with pytest.raises(ScheduleSyntaxError, match="learning_rate"):
        relative("2 * weight_decay", {"learning_rate": None})


def test_an_unbound_ref_names_itself_when_read() -> None:
    with pytest.raises(InvalidArgumentError, match=r"not bound.*Received: name='lr'"):
        Ref("lr")(0.0)


def test_a_ref_is_saved_by_its_owner_not_alone() -> None:
    ref = Ref("lr")
    assert ref.arguments() == {"name": "lr"} and repr(ref) == "lr"
    with pytest.raises(InvalidArgumentError, match="expression"):
        ref.get_config()


def test_resolve_builds_each_and_binds_references() -> None:
    def make(name: str, value: object) -> hs.Hyperparameter:
        return hs.Hyperparameter(value, name=name)

    built = resolve({"learning_rate": 0.1, "weight_decay": "learning_rate / 10"}, make, "Opt")
    assert set(built) == {"learning_rate", "weight_decay"}
    assert references(built["weight_decay"]._raw_schedule)[0].target is built["learning_rate"]
    np.testing.assert_allclose(float(built["weight_decay"].value), 0.01, rtol=1e-6)
    built["learning_rate"].scale.assign(0.5)
    np.testing.assert_allclose(float(built["weight_decay"].value), 0.005, rtol=1e-6)


@pytest.mark.parametrize(
    ("values", "cycle"),
    [
        ({"lr": "lr * 2"}, "lr -> lr"),
        ({"lr": "wd", "wd": "lr"}, "lr -> wd -> lr"),
        ({"a": "b", "b": "c", "c": "a", "d": 0.1}, "a -> b -> c -> a"),
    ],
)
def test_resolve_refuses_a_cycle_naming_it(values: dict, cycle: str) -> None:
    made: list[str] = []
    with pytest.raises(InvalidArgumentError, match=r"`Opt`: .*cycle: " + cycle.replace(">", r"\>")):
        resolve(values, lambda name, value: made.append(name), "Opt")
    assert made == []  # nothing built


def test_resolve_a_chain_without_cycle_builds() -> None:
    built = resolve(
        {"a": 0.5, "b": "2 * a", "c": "b + a"},
        lambda name, value: hs.Hyperparameter(value, name=name),
        "Opt",
    )
    np.testing.assert_allclose(float(built["c"].value), 1.5, rtol=1e-6)
