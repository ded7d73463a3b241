"""Units of hyperstep.cli.demo: its arguments and what it prints for each outcome of
``hyperstep.demo.train`` (stood in for here; the real training: tests/demo)."""

from __future__ import annotations

import argparse
import importlib.util

import pytest

import hyperstep.demo
from hyperstep.cli import demo
from hyperstep.cli.main import main
from hyperstep.errors import InvalidArgumentError


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="hyperstep")
    demo.register(parser.add_subparsers())
    return parser.parse_args(["demo", *argv])


def _summary(**changes) -> dict:
    summary = {
        "status": "complete",
        "epoch": 3,
        "step": 90,
        "val_accuracy": 0.95,
        "target_accuracy": 0.9,
        "epochs": 3,
        "steps": 90,
        "seconds": 4.2,
        "temperature": 1.25,
        "plateau_reductions": [
            {"epoch": 1, "step": 30, "scale_before": 1.0, "scale": 0.5, "held": None},
            {"epoch": 2, "step": 60, "scale_before": 0.5, "scale": 0.25, "held": 1e-4},
        ],
        "overrides": [{"name": "learning_rate", "value": 1e-4, "from_step": 45, "to_step": 89}],
        "commands": [
            {
                "step": 45,
                "verb": "set",
                "arguments": {"values": {"learning_rate": 1e-4}},
                "status": "applied",
            }
        ],
        "doctor": {"ok": True},
        "files": {"metrics": "out/metrics.csv", "tensorboard": "out/tb"},
    }
    return {**summary, **changes}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list:
    made: list = []
    result: dict = {"summary": _summary()}

    def train(out, epochs, seed, *, fresh, control):
        made.append((out, epochs, seed, fresh, control))
        if isinstance(result["summary"], BaseException):
            raise result["summary"]
        return result["summary"]

    monkeypatch.setattr(hyperstep.demo, "train", train)
    made.append(result)
    return made


def test_defaults() -> None:
    args = _parse()
    assert (args.out, args.epochs, args.seed, args.fresh, args.control) == (
        "runs/demo",
        demo.DEFAULT_EPOCHS,
        0,
        False,
        None,
    )


def test_a_finished_run_prints_its_summary(calls, capsys) -> None:
    assert demo.run(_parse("--out", "o", "--epochs", "3", "--seed", "2", "--fresh")) == 0
    assert calls[1:] == [("o", 3, 2, True, None)]
    out = capsys.readouterr().out.splitlines()
    assert out[:7] == [
        "validation accuracy 95.0% (target met: >= 90%) after 3 epochs (90 steps) in 4.2 s; "
        "temperature 1.250",
        "ReduceOnPlateau: 2 reductions (its own count):",
        "  after epoch 1 (from step 30): scale 1 -> 0.5",
        "  after epoch 2 (from step 60): scale 0.5 -> 0.25, while an override held "
        "learning_rate at 0.0001",
        "overrides: 1",
        "  learning_rate = 0.0001 from step 45 to 89",
        "commands (steering journal): 1",
    ]
    assert out[8:] == [
        "pre-flight doctor: no findings",
        "  metrics      out/metrics.csv",
        "  tensorboard  out/tb",
        "  view with: tensorboard --logdir out/tb",
    ]


def test_an_interrupted_run_names_the_command_that_resumes(calls, capsys) -> None:
    calls[0]["summary"] = _summary(status="interrupted", epoch=2, step=60)
    assert demo.run(_parse("--out", "o", "--seed", "1", "--control", "c")) == demo.INTERRUPTED
    out = capsys.readouterr().out
    assert "o holds the run after epoch 2 (step 60)" in out
    assert "`hyperstep demo --out o --seed 1 --control c`" in out
    calls[0]["summary"] = _summary(status="interrupted", epoch=0)
    assert demo.run(_parse("--out", "o")) == demo.INTERRUPTED
    assert "interrupted in the first epoch; `hyperstep demo --out o` starts over" in (
        capsys.readouterr().out
    )


def test_an_error_or_ctrl_c_before_training(calls, capsys) -> None:
    calls[0]["summary"] = InvalidArgumentError("bad out")
    assert main(["demo"]) == 2
    assert capsys.readouterr().err == "hyperstep demo: error: bad out\n"
    calls[0]["summary"] = KeyboardInterrupt()
    assert demo.run(_parse()) == demo.INTERRUPTED == 130


def test_missing_extras_name_the_packages(monkeypatch, capsys) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name in ("sklearn", "tensorboard") else real(name),
    )
    assert main(["demo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hyperstep demo: error: the demo needs scikit-learn, tensorboard, not")
    assert "hyperstep[demo]" in err
