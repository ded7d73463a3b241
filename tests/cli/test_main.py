"""hyperstep.cli.main: the argument parser and exit statuses."""

from __future__ import annotations

import argparse

import pytest

import hyperstep
from hyperstep.cli import main as main_module
from hyperstep.cli.main import build_parser, main


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"hyperstep {hyperstep.__version__}"


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("plot", "doctor", "demo"):
        assert command in out


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert "choose a command: plot, doctor or demo" in err
    assert "Traceback" not in err


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plto"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'plto'" in err
    assert "Traceback" not in err


def test_every_command_module_registers_a_subcommand_with_a_function() -> None:
    for module in main_module.COMMANDS:
        parser = argparse.ArgumentParser()
        module.register(parser.add_subparsers())
        name = module.__name__.rsplit(".", 1)[-1].replace("_", "-")  # lr_find: lr-find
        sub = parser._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr]
        assert callable(sub.get_default("func"))


def test_parser_is_built_fresh_each_time() -> None:
    assert build_parser() is not build_parser()
