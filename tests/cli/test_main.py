"""hyperstep.cli.main: the argument parser and exit statuses."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

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
    assert "choose a command: plot, doctor, lr-find, demo" in err
    assert "Traceback" not in err


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plto"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'plto'" in err
    assert "Traceback" not in err


def test_a_command_s_error_is_one_line_naming_the_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing"
    assert main(["set", str(missing), "learning_rate=1e-4"]) == 2
    assert main(["show", str(missing)]) == 2
    set_error, show_error = capsys.readouterr().err.splitlines()
    assert set_error.startswith(f"hyperstep set: error: control directory '{missing}' does not")
    assert show_error.startswith(f"hyperstep show: error: control directory '{missing}' does not")


def test_every_command_module_registers_a_subcommand_with_a_function() -> None:
    for module in main_module.COMMANDS:
        parser = argparse.ArgumentParser()
        module.register(parser.add_subparsers())
        for name in main_module.command_names(module):  # lr_find: lr-find; steer: set, ...
            sub = parser._subparsers._group_actions[0].choices[name]  # type: ignore[union-attr]
            assert callable(sub.get_default("func"))


def test_parser_is_built_fresh_each_time() -> None:
    assert build_parser() is not build_parser()


#: run the command line in a fresh process; print the heavy modules it imported
PROBE = """
import sys
from hyperstep.cli.main import main
code = main(sys.argv[1:])
heavy = sorted({m.split(".")[0] for m in sys.modules} & {"keras", "tensorflow", "jax", "torch"})
print("HEAVY", heavy, code)
"""


def run_fresh(*argv: str) -> subprocess.CompletedProcess[str]:
    source = str(Path(hyperstep.__file__).parents[1])  # this checkout, from any directory
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = os.pathsep.join([source, env.get("PYTHONPATH", "")])
    return subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, env=env, check=False
    )


#: every ``--help`` in turn in one fresh process, the heavy modules after each (what one
#: imported stays imported: the first to import a backend is the one named)
PROBE_EACH = """
import json, sys
from hyperstep.cli.main import main
for argv in json.loads(sys.argv[1]):
    code = main(argv)
    heavy = sorted({m.split(".")[0] for m in sys.modules} & {"keras", "tensorflow", "jax", "torch"})
    print("HEAVY", heavy, code)
"""


def test_help_of_every_command_imports_no_backend() -> None:
    names = [name for m in main_module.COMMANDS for name in main_module.command_names(m)]
    argvs = [["--help"], *([name, "--help"] for name in names)]
    source = str(Path(hyperstep.__file__).parents[1])  # this checkout, from any directory
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = os.pathsep.join([source, env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", PROBE_EACH, json.dumps(argvs)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    found = [line for line in done.stdout.splitlines() if line.startswith("HEAVY ")]
    assert len(found) == len(argvs), done.stderr[-2000:]
    for argv, line in zip(argvs, found, strict=True):
        assert line == "HEAVY [] 0", argv
    assert done.stderr == ""


def test_plot_text_and_png_import_no_backend(tmp_path: Path) -> None:
    expression = "warmup(cosine(1e-3, steps=1000), steps=100)"
    done = run_fresh("plot", expression, "--steps", "1200", "--text")
    assert done.stdout.splitlines()[-1] == "HEAVY [] 0" and done.stderr == ""
    assert f"* {expression}" in done.stdout
    done = run_fresh("plot", expression, "--steps", "1200", "--out", str(tmp_path / "s.png"))
    assert done.stdout.splitlines()[-1] == "HEAVY [] 0" and done.stderr == ""
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_of_overflowing_values_draws_gaps_without_warnings() -> None:
    done = run_fresh("plot", "exp(100 * step)", "sqrt(0 - step)", "--steps", "9", "--text")
    assert done.stdout.splitlines()[-1] == "HEAVY [] 0" and done.stderr == ""
    assert "* exp(100 * step)" in done.stdout
