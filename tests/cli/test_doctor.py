"""Units of hyperstep.cli.doctor: ``arguments`` turns what FUNCTION returned into the keyword
arguments of ``hs.doctor`` (the subcommand end to end: tests/cli/test_doctor_cli.py)."""

from __future__ import annotations

import argparse

import keras
import pytest

from hyperstep.cli.arguments import UsageError
from hyperstep.cli.doctor import arguments, register

MODEL, DATA = object(), object()


def test_a_pair_and_a_dict() -> None:
    assert arguments((MODEL, DATA)) == {"model": MODEL, "data": DATA}
    assert arguments([MODEL, DATA]) == {"model": MODEL, "data": DATA}
    given = {"model": MODEL, "data": DATA, "var_list": []}
    assert arguments(given) == given and arguments(given) is not given


def test_a_third_item_is_an_optimizer_or_a_loss_fn() -> None:
    sgd = keras.optimizers.SGD()
    assert arguments((MODEL, DATA, sgd)) == {"model": MODEL, "data": DATA, "optimizer": sgd}

    def loss_fn(model, batch):
        return 0.0

    assert arguments((MODEL, DATA, loss_fn))["loss_fn"] is loss_fn
    with pytest.raises(UsageError, match=r"make returned a third item of type int"):
        arguments((MODEL, DATA, 3), "make")


@pytest.mark.parametrize(
    ("returned", "match"),
    [
        ({"model": MODEL}, r"missing keys \['data'\]"),
        ({"model": MODEL, "data": DATA, "epochs": 2}, r"unknown keys \['epochs'\]"),
        ((MODEL,), "a tuple of length 1"),
        ([1, 2, 3, 4], "a list of length 4"),
        (None, "NoneType None; it must return"),
    ],
)
def test_other_shapes_are_usage_errors_naming_the_target(returned, match: str) -> None:
    with pytest.raises(UsageError, match=rf"^mod:make returned (.*){match}"):
        arguments(returned, "mod:make")


def test_register_adds_the_doctor_subcommand_and_its_arguments() -> None:
    top = argparse.ArgumentParser()
    register(top.add_subparsers())
    args = top.parse_args(["doctor", "m:f", "--loss", "mse", "--json"])
    assert (args.target, args.loss, args.json) == ("m:f", "mse", True)
