"""``hyperstep plot`` without ``--steps`` plots a schedule over its natural length."""

import re

import pytest

from hyperstep.cli.main import main


def test_steps_default_to_the_natural_length(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plot", "wsd(1e-3, 10, 70, 20, decay_type='1-sqrt')", "--text"]) == 0
    assert re.search(r"\s99 step\n", capsys.readouterr().out)  # the x axis ends at step 99
    assert main(["plot", "warmup(cosine(1e-3, steps=900), steps=100)", "--text"]) == 0
    assert re.search(r"\s999 step\n", capsys.readouterr().out)


def test_a_schedule_without_a_natural_length_still_needs_steps(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plot", "inverse_sqrt(1e-3, 100)", "--text"]) == 2
    assert "pass --steps N" in capsys.readouterr().err
