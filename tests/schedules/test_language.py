"""The units of hyperstep.schedules.language: ``parse``'s own steps around the reader (the
text checks, the whole-expression range check, binding epochs, extra names); the grammar
itself is tested in tests/schedules/test_parse.py and test_expression_forms.py."""

import numpy as np
import pytest

import hyperstep.schedules as hs
from hyperstep import parse
from hyperstep.errors import ScheduleSyntaxError


def test_extra_names_stand_for_their_schedules() -> None:
    lr = hs.linear(1.0, 0.0, 10)
    built = parse("0.5 * lr + step / 100", names={"lr": lr})
    steps = np.arange(0, 15)
    expected = 0.5 * np.clip(1 - steps / 10, 0, None) + steps / 100
    np.testing.assert_allclose(np.asarray(built(steps), np.float64), expected, atol=1e-7)
    with pytest.raises(ScheduleSyntaxError, match="unknown name 'lr'"):
        parse("0.5 * lr")  # only while given


def test_steps_per_epoch_binds_epochs_inside_words_too() -> None:
    text = 'piecewise([2], [1.0, 0.1], unit="epoch")'
    bound = parse(text, steps_per_epoch=5)
    assert np.asarray(bound(np.array([0, 9, 10, 11]))).tolist() == pytest.approx(
        [1.0, 1.0, 0.1, 0.1]
    )
    unbound = parse(text)
    with pytest.raises(ValueError, match="steps_per_epoch"):
        unbound(0)


def test_a_constant_expression_beyond_float32_is_refused_at_column_0() -> None:
    with pytest.raises(ScheduleSyntaxError) as caught:
        parse("1e38 * 10")
    assert "beyond float32's range" in caught.value.reason and caught.value.column == 0
    assert float(parse("1e37 * 10")(0)) == pytest.approx(1e38, rel=1e-6)


def test_a_syntax_error_points_at_pythons_offset() -> None:
    with pytest.raises(ScheduleSyntaxError) as caught:
        parse("step +* 2")
    assert caught.value.reason.startswith("syntax error") and caught.value.column == 6
    with pytest.raises(ScheduleSyntaxError, match=r"must be a string.*of type bytes"):
        parse(b"step")  # type: ignore[arg-type]
