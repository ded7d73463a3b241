"""hs.parse: the grammar, the vocabulary, errors with a caret, fuzzing, and parse(repr(s))."""

from __future__ import annotations

import ast
import copy
import math
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hyperstep as hs
from hyperstep.errors import ScheduleSyntaxError
from hyperstep.schedules import base, expressions, keras_formulas
from hyperstep.schedules.language import MAX_DEPTH, MAX_LENGTH, parse, vocabulary

# the vocabulary and, from their module, the expression-tree node classes
S = types.SimpleNamespace(
    **{n: getattr(hs.schedules, n) for n in hs.schedules.__all__},
    **{
        n: getattr(expressions, n)
        for n in ("BinaryOp", "Constant", "Epoch", "Function", "Negate", "Step")
    },
)
GRID = np.array([0, 1, 2, 5, 9, 10, 11, 99, 100, 101, 250, 499, 500, 501, 999, 1000, 1001, 3000])
STEPS = GRID.astype(np.float32)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def values(schedule: base.Schedule) -> np.ndarray:
    return np.asarray(schedule(GRID))


def assert_same(a: base.Schedule, b: base.Schedule) -> None:
    np.testing.assert_array_equal(values(a), values(b))


# ---- formulas ----------------------------------------------------------------------------
def test_formula_of_step_matches_closed_form() -> None:
    expected = STEPS / np.float32(1000) + np.float32(0.01)
    np.testing.assert_allclose(values(parse("step / 1000 + 0.01")), expected, rtol=1e-6)


def test_formula_of_epoch_uses_steps_per_epoch() -> None:
    schedule = parse("0.1 * 0.9 ** floor(epoch / 5)", steps_per_epoch=10)
    epochs = np.floor(np.floor(STEPS / np.float32(10)) / np.float32(5))
    expected = np.float32(0.1) * np.float32(0.9) ** epochs
    np.testing.assert_allclose(values(schedule), expected, rtol=1e-5)  # pow of float32


def test_unbound_epoch_is_bound_later() -> None:
    schedule = parse("0.5 ** epoch")
    assert expressions.uses_epoch(schedule)
    with pytest.raises(ValueError, match="steps_per_epoch"):
        schedule(0)
    np.testing.assert_allclose(
        values(S.bind_epochs(schedule, 100)), 0.5 ** np.floor(GRID / 100), rtol=1e-6
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("-2 ** 2", -(2**2)),
        ("2 ** 3 ** 2", 2 ** (3**2)),
        ("2 ** -1", 2**-1),
        ("(-2) ** 2", (-2) ** 2),
        ("10 - 4 - 3", 10 - 4 - 3),
        ("8 / 4 / 2", 8 / 4 / 2),
        ("2 + 3 * 4", 2 + 3 * 4),
        ("(2 + 3) * 4", (2 + 3) * 4),
        ("-(1 - 3)", -(1 - 3)),
        ("+5 - -5", +5 - -5),
        ("1 < 2", 1.0),
        ("3 <= 2", 0.0),
        ("2 == 2.0", 1.0),
        ("2 != 2", 0.0),
        ("1 < 3 > 2", 1.0),
        ("1 < 3 < 2", 0.0),
        ("3 > 2 > 1 >= 1", 1.0),
    ],
)
def test_operators_follow_python_precedence(text: str, expected: float) -> None:
    np.testing.assert_allclose(values(parse(text)), np.full(GRID.shape, expected), rtol=1e-6)


@pytest.mark.parametrize(
    ("text", "reference"),
    [
        ("min(step, 100)", lambda x: np.minimum(x, 100)),
        ("max(step, 100)", lambda x: np.maximum(x, 100)),
        ("floor(step / 7)", lambda x: np.floor(x / np.float32(7))),
        ("ceil(step / 7)", lambda x: np.ceil(x / np.float32(7))),
        ("exp(-step / 1000)", lambda x: np.exp(-x / np.float32(1000))),
        ("log(step + 1)", lambda x: np.log(x + 1)),
        ("sqrt(step)", np.sqrt),
        ("cos(step / 100)", lambda x: np.cos(x / np.float32(100))),
        ("sin(step / 100)", lambda x: np.sin(x / np.float32(100))),
        ("abs(500 - step)", lambda x: np.abs(500 - x)),
        ("where(step < 100, step / 100, 1)", lambda x: np.where(x < 100, x / np.float32(100), 1)),
        ("clip(step, 10, 500)", lambda x: np.clip(x, 10, 500)),
        ("(step > 10) * (step <= 500)", lambda x: ((x > 10) & (x <= 500)).astype(np.float32)),
        ("10 < step <= 500", lambda x: ((x > 10) & (x <= 500)).astype(np.float32)),
    ],
)
def test_functions_match_numpy(text: str, reference) -> None:
    np.testing.assert_allclose(values(parse(text)), reference(STEPS), rtol=1e-6, atol=1e-7)


def test_line_breaks_and_tabs_count_as_spaces() -> None:
    text = "warmup(\n\tcosine(1e-3, steps=1000),\r\n\tsteps=100,\n)"
    assert_same(parse(text), S.warmup(S.cosine(1e-3, steps=1000), steps=100))


def test_arithmetic_on_numbers_in_arguments_is_folded() -> None:
    assert_same(parse("linear(0, 1, 10 * 100)"), S.linear(0, 1, 1000))
    assert_same(parse("cosine(2e-3 / 2, steps=2 ** 10)"), S.cosine(1e-3, steps=1024))
    assert_same(parse("constant(-(1 + 2))"), S.constant(-3.0))


def test_inf_is_a_number_and_checked_by_the_schedule() -> None:
    with pytest.raises(ScheduleSyntaxError, match="finite") as info:
        parse("constant(inf)")
    assert info.value.column == len("constant(")


def test_the_expression_in_the_design_document_parses() -> None:
    s = parse("warmup(cosine(1e-3, steps=10000, end=1e-5), steps=500)")
    assert_same(s, S.warmup(S.cosine(1e-3, steps=10_000, end=1e-5), steps=500))
    half = parse("warmup(cosine(1e-3, steps=10000), steps=500) * 0.5")
    np.testing.assert_allclose(
        values(half), values(S.warmup(S.cosine(1e-3, steps=10000), steps=500)) * 0.5, rtol=1e-6
    )


# ---- the vocabulary ----------------------------------------------------------------------
EXAMPLES = {
    "constant": ("constant(0.5)", lambda: S.constant(0.5)),
    "linear": ("linear(1.0, 0.1, 1000)", lambda: S.linear(1.0, 0.1, 1000)),
    "exponential": (
        "exponential(0.1, 0.5, 100, staircase=True)",
        lambda: S.exponential(0.1, 0.5, 100, staircase=True),
    ),
    "inverse_time": ("inverse_time(0.1, 0.5, every=10)", lambda: S.inverse_time(0.1, 0.5, 10)),
    "polynomial": (
        "polynomial(0.1, 0.001, 500, power=2, cycle=True)",
        lambda: S.polynomial(0.1, 0.001, 500, power=2, cycle=True),
    ),
    "cosine": ("cosine(1e-3, 1000, end=1e-5)", lambda: S.cosine(1e-3, 1000, end=1e-5)),
    "cosine_restarts": (
        "cosine_restarts(0.1, steps=100, t_mul=2.0, m_mul=0.5)",
        lambda: S.cosine_restarts(0.1, 100, t_mul=2.0, m_mul=0.5),
    ),
    "piecewise": (
        "piecewise([100, 500], [1.0, 0.5, 0.1])",
        lambda: S.piecewise([100, 500], [1.0, 0.5, 0.1]),
    ),
    "cyclic": (
        "cyclic(0.1, 1.0, 100, mode='triangular2')",
        lambda: S.cyclic(0.1, 1.0, 100, mode="triangular2"),
    ),
    "one_cycle": ("one_cycle(0.1, 1000, pct_start=0.25)", lambda: S.one_cycle(0.1, 1000, 0.25)),
    "wsd": (
        "wsd(1e-3, 100, 800, 100, decay_type='1-sqrt', min_ratio=0.1)",
        lambda: S.wsd(1e-3, 100, 800, 100, decay_type="1-sqrt", min_ratio=0.1),
    ),
    "inverse_sqrt": (
        "inverse_sqrt(1e-3, 100, timescale=50)",
        lambda: S.inverse_sqrt(1e-3, 100, 50),
    ),
    "cooldown": (
        "cooldown(1e-3, 300, 700, shape='cosine', end=1e-5)",
        lambda: S.cooldown(1e-3, 300, 700, "cosine", 1e-5),
    ),
    "exponential_decay": (
        "exponential_decay(0.1, 100, 0.5, staircase=True)",
        lambda: keras_formulas.exponential_decay(0.1, 100, 0.5, staircase=True),
    ),
    "polynomial_decay": (
        "polynomial_decay(0.1, 500, 0.001, power=2.0, cycle=True)",
        lambda: keras_formulas.polynomial_decay(0.1, 500, 0.001, 2.0, True),
    ),
    "cosine_decay": (
        "cosine_decay(0.0, 900, alpha=0.1, warmup_target=1e-3, warmup_steps=100)",
        lambda: keras_formulas.cosine_decay(0.0, 900, 0.1, 1e-3, 100),
    ),
    "cosine_decay_restarts": (
        "cosine_decay_restarts(0.1, 100, t_mul=2.0, m_mul=0.5, alpha=0.1)",
        lambda: keras_formulas.cosine_decay_restarts(0.1, 100, 2.0, 0.5, 0.1),
    ),
    "warmup": (
        "warmup(cosine(1e-3, steps=900), steps=100, start=1e-5)",
        lambda: S.warmup(S.cosine(1e-3, steps=900), steps=100, start=1e-5),
    ),
    "join": (
        "join([linear(0, 1, 100), cosine(1.0, 400), 0.01], [100, 500])",
        lambda: S.join([S.linear(0, 1, 100), S.cosine(1.0, 400), 0.01], [100, 500]),
    ),
}


def test_vocabulary_is_the_agreed_one() -> None:
    assert set(vocabulary()) == set(EXAMPLES)


@pytest.mark.parametrize("keyword", sorted(EXAMPLES))
def test_every_vocabulary_entry_parses_to_the_python_schedule(keyword: str) -> None:
    text, build = EXAMPLES[keyword]
    expected = build()
    parsed = parse(text)
    assert type(parsed) is type(expected)
    assert type(parsed).keyword == keyword
    assert_same(parsed, expected)


@pytest.mark.parametrize("keyword", sorted(EXAMPLES))
def test_every_vocabulary_entry_accepts_its_arguments_by_keyword(keyword: str) -> None:
    expected = EXAMPLES[keyword][1]()
    arguments = ", ".join(f"{k}={base.format_value(v)}" for k, v in expected.arguments().items())
    assert_same(parse(f"{keyword}({arguments})"), expected)


# ---- round trip --------------------------------------------------------------------------
def _lt(a: base.ScheduleLike, b: base.ScheduleLike) -> base.Schedule:
    return expressions.BinaryOp("<", a, b)


ROUND_TRIP = [
    lambda: S.warmup(S.cosine(1e-3, steps=10_000, end=1e-5), steps=500) * 0.5,
    lambda: S.one_cycle(0.1, steps=1000),
    lambda: S.one_cycle(0.85, steps=1000, start=0.95, end=0.95, three_phase=True),
    lambda: -(S.linear(1.0, 0.0, 100) ** 2),
    lambda: (-2.0) ** (S.Step() / 1000),
    lambda: 2.0 - (S.Step() - 3.0),
    lambda: S.Step() - -2.0,
    lambda: 1.0 / (S.Step() + 1.0) / 2.0,
    lambda: S.minimum(S.Step() / 100, 1.0) * S.cosine(1.0, 1000),
    lambda: S.clip(S.Step() / 300, 0.1, 0.9),
    lambda: S.clip(S.Step(), high=5.0),
    lambda: _lt(_lt(S.Step(), 10.0), 0.5),
    lambda: _lt(1.0, _lt(S.Step(), 10.0)),
    lambda: S.Function("where", [_lt(100, S.Step()), S.linear(0, 1, 500), 0.25]),
    lambda: S.bind_epochs(0.1 * 0.5 ** S.Epoch(), 100),
    lambda: S.Epoch() * 2,
    lambda: S.Negate(S.Constant(-3.0)),
    lambda: S.Negate(S.Negate(S.Step())),
    lambda: S.Constant(-2.0) ** 2 - S.Constant(-0.0),
    lambda: S.join([S.warmup(S.constant(0.1), 10), S.exponential(0.1, 0.9, 10)], [50]) * 2,
    *(build for _, build in EXAMPLES.values()),
]


@pytest.mark.parametrize("index", range(len(ROUND_TRIP)))
def test_repr_parses_back_to_an_equal_schedule(index: int) -> None:
    schedule = ROUND_TRIP[index]()
    text = repr(schedule)
    parsed = parse(text)
    assert repr(parse(repr(parsed))) == repr(parsed)  # a bound epoch is written as floor(...)
    if expressions.uses_epoch(schedule):
        schedule, parsed = S.bind_epochs(schedule, 7), S.bind_epochs(parsed, 7)
    assert_same(parsed, schedule)


LEAVES = [
    lambda: S.Step(),
    lambda: S.linear(0.5, 0.0, 300),
    lambda: S.cosine(1e-3, steps=700, end=1e-5),
    lambda: S.one_cycle(0.2, 900),
    lambda: S.piecewise([10, 100], [3.0, 2.0, 1.0]),
    lambda: S.exponential(1.0, 0.5, 200, staircase=True),
    lambda: S.cyclic(0.1, 1.0, 50, 150, mode="exp_range"),
    lambda: S.warmup(S.cosine_restarts(1.0, 100), steps=30),
]


def function(name: str, a: base.Schedule, b: base.Schedule) -> base.Schedule:
    return expressions.Function(name, [a, b] if name in ("min", "max") else [a])


def schedules() -> st.SearchStrategy[base.Schedule]:
    numbers = st.floats(-100, 100, allow_nan=False, width=32).map(float)
    leaf = st.one_of(st.sampled_from(LEAVES).map(lambda build: build()), numbers.map(S.constant))

    def grow(children: st.SearchStrategy[base.Schedule]) -> st.SearchStrategy[base.Schedule]:
        ops = st.sampled_from(["+", "-", "*", "/", "**", "<", ">=", "==", "!="])
        functions = st.sampled_from(["min", "max", "floor", "abs", "cos"])
        return st.one_of(
            st.builds(expressions.BinaryOp, ops, children, children),
            st.builds(expressions.Negate, children),
            st.builds(function, functions, children, children),
            st.builds(
                lambda *args: expressions.Function("where", list(args)),
                children,
                children,
                children,
            ),
        )

    return st.recursive(leaf, grow, max_leaves=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules())
def test_repr_round_trips_for_random_expression_trees(schedule: base.Schedule) -> None:
    parsed = parse(repr(schedule))
    assert repr(parse(repr(parsed))) == repr(parsed)  # -0.0 reads back as constant(-0.0)
    assert_same(parsed, schedule)


# ---- errors ------------------------------------------------------------------------------
BAD = [
    (
        "stpe / 1000",
        r"unknown name 'stpe'; did you mean 'step'\? "
        r"\(names: step, epoch, total, progress, pi, e\)",
        0,
    ),
    ("0.1 * epohc", r"unknown name 'epohc'; did you mean 'epoch'\?", 6),
    ("x + 1", r"unknown name 'x' \(names: step, epoch, total, progress, pi, e\)", 0),
    (
        "cosine(1e-3, stpes=100)",
        r"cosine\(\) got an unexpected keyword 'stpes'; did you mean 'steps'\? "
        r"Its arguments are start, steps, end",
        13,
    ),
    ("constant(1, wibble=2)", r"unexpected keyword 'wibble'; its arguments are value\n", 12),
    ("cosine(1e-3)", r"cosine\(\) is missing the argument 'steps'; its arguments are start", 0),
    ("constant(1, 2)", r"constant\(\) takes at most 1 positional argument; got 2", 12),
    ("cosine(1e-3, 100, start=1)", r"cosine\(\) got argument 'start' twice", 18),
    ("cosine(1, steps=1, steps=2)", r"got argument 'steps' twice", 19),
    ("floor(step, 2)", r"`floor\(...\)` takes 1 argument. Received: args=\[step, constant", 0),
    ("1 + min(step)", r"`min\(...\)` takes 2 arguments. Received: args=\[step\]", 4),
    ("min(step, x=1)", r"min\(\) takes no keyword arguments", 10),
    ("foo(step)", r"unknown function 'foo'; did you mean 'floor'\?", 0),
    ("0.5 * cosine", r"'cosine' is a schedule; call it: cosine\(start, steps, end=0.0", 6),
    ("floor", r"'floor' is a function; call it", 0),
    ("step(3)", r"'step' is not a function", 0),
    ("", r"the expression is empty", 0),
    ("   ", r"the expression is empty", 0),
    ("cos(step", r"syntax error: '\(' was never closed", 3),
    ("(step))", r"syntax error: unmatched '\)'", 6),
    ("step +", r"syntax error: invalid syntax", 6),
    ("step step", r"syntax error", 5),
    ("cosine('big', 100)", r"start.*Received: start='big'", 7),
    ("linear(0, 1, steps=-5)", r"steps.*Received: steps=-5", 19),
    ("warmup(cosine(1.0, 10), steps=0)", r"steps.*Received: steps=0", 30),
    ("piecewise([100, 50], [1, 2, 3])", r"boundaries.*\[100, 50\]", 10),
    ("step * 'a'", r"a string \('a'\) can only be an argument of a schedule", 7),
    ("step + [1, 2]", r"a list can only be an argument of a schedule", 7),
    ("True + step", r"True can only be an argument of a schedule", 0),
    ("1j * step", r"complex literals are not allowed", 0),
    ("b'x'", r"bytes literals are not allowed", 0),
    ("step @ 2", r"only the operators \+ - \* / // % \*\* are allowed", 0),
    ("step << 2", r"only the operators", 0),
    ("~step", r"only the unary operators - and \+ are allowed", 0),
    ("not step", r"only the unary operators", 0),
    ("step is 2", r"only the comparisons", 0),
    ("step in [1]", r"only the comparisons", 0),
    ("step > 1 and step < 3", r"`and`/`or` are not allowed", 0),
    ("1 if step else 2", r"use where\(c, x, y\)", 0),
    ("1 + step.real", r"attribute access", 4),
    ("step[0]", r"subscripts", 0),
    ("(lambda: 1)()", r"only functions and schedules can be called, by name", 1),
    ("min(*[step, 1])", r"starred arguments", 4),
    ("cosine(**{})", r"`\*\*` arguments are not allowed", 7),
    ("(1, 2)", r"tuples are not allowed", 0),
    ("cyclic(0.1, 1.0, 10, mode='é', gamma=stpe)", r"unknown name 'stpe'", 37),
    ("'é' + 'é' + stpe", r"a string \('é'\) can only be an argument", 0),
    ("1" * (MAX_LENGTH + 1), rf"at most {MAX_LENGTH} are accepted", None),
    ("-" * 150 + "step", rf"nested too deeply \(at most {MAX_DEPTH} levels\)", MAX_DEPTH),
    ("(" * 250 + "1" + ")" * 250, r"syntax error: too many nested parentheses", 200),
    ("1" * 5000, r"syntax error: .*4300 digits", 5000),
    ("99999999999999999999999 * step", r"integer literal is too large \(23 digits\)", 0),
]


@pytest.mark.parametrize(("text", "message", "column"), BAD, ids=[b[0][:40] for b in BAD])
def test_bad_expressions_raise_with_a_caret(text: str, message: str, column: int | None) -> None:
    with pytest.raises(ScheduleSyntaxError, match=message) as info:
        parse(text)
    error = info.value
    assert isinstance(error, ValueError)
    assert error.column == column
    if column is not None and text.strip():
        *_, quoted, caret = str(error).splitlines()
        assert quoted == "  " + text
        assert caret == "  " + " " * column + "^"


def test_non_string_text_is_refused() -> None:
    with pytest.raises(ScheduleSyntaxError, match=r"must be a string. Received: text=3"):
        parse(3)  # type: ignore[arg-type]


def test_a_long_repr_reads_back_with_no_length_limit() -> None:
    from hyperstep.schedules import piecewise

    long = piecewise(list(range(1, 3000)), [1.0 + k for k in range(3000)])
    text = repr(long)
    with pytest.raises(ScheduleSyntaxError, match=rf"{len(text)} characters long; at most 10000"):
        parse(text)
    with pytest.raises(ScheduleSyntaxError, match=r"20 characters long; at most 10 are"):
        parse("step / 1000 + 0.0001", max_length=10)
    again = parse(text, max_length=None)
    steps = np.array([0.0, 1.0, 1500.0, 2999.0, 5000.0], "float32")
    np.testing.assert_array_equal(np.asarray(again(steps)), [1.0, 2.0, 1501.0, 3000.0, 3000.0])


def test_bad_steps_per_epoch_names_the_argument() -> None:
    with pytest.raises(ValueError, match=r"steps_per_epoch.*Received: steps_per_epoch=0"):
        parse("epoch", steps_per_epoch=0)


# ---- nothing is executed -----------------------------------------------------------------
_WATCHED = ("exec", "import", "open", "os.", "subprocess.", "ctypes.", "socket.", "shutil.")
_events: list[str] = []
_watching = [False]


def _audit(
    event: str, args: object, watching: list[bool] = _watching, watched: tuple[str, ...] = _WATCHED
) -> None:
    # the lists bound as defaults: the hook outlives the module's globals at interpreter exit
    # (it cannot be removed), when it printed "Exception ignored in audit hook"
    if watching[0] and event.startswith(watched):
        _events.append(event)


sys.addaudithook(_audit)


def watched_parse(text: str) -> base.Schedule | None:
    """Parse ``text``; fail if anything but ScheduleSyntaxError escapes or code runs."""
    _events.clear()
    _watching[0] = True
    try:
        return parse(text)
    except ScheduleSyntaxError:
        return None
    finally:
        _watching[0] = False
        assert not _events, f"parsing {text!r} triggered {_events}"


HOSTILE = [
    "__import__('os').system('touch {marker}')",
    "__import__('os')",
    "().__class__.__bases__[0].__subclasses__()",
    "step.__class__.__init__.__globals__",
    "cosine.__init__",
    "open('{marker}', 'w')",
    'exec(\'open("{marker}", "w")\')',
    "eval('1')",
    "compile('1', 'x', 'eval')",
    "globals()",
    "(lambda: __import__('os'))()",
    "[x for x in [1]]",
    "{{x: 1 for x in [1]}}",
    "(x for x in [1])",
    "f'{{step}}'",
    "(x := 1)",
    "step[0]",
    "[1, 2][0]",
    "cosine(1, steps=[1][0])",
    "min(step, *[1])",
    "breakpoint()",
    "constant(__import__('os').getpid())",
    "warmup(lambda: 1, steps=10)",
    "join([step.__class__], [])",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_expressions_are_refused_without_running_anything(
    text: str, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    text = text.format(marker=marker)
    with pytest.raises(ScheduleSyntaxError):
        parse(text)
    assert watched_parse(text) is None
    assert not marker.exists()


def test_parser_source_never_calls_eval_exec_or_compile() -> None:
    path = sys.modules["hyperstep.schedules.language"].__file__ or ""
    tree = ast.parse(Path(path).read_text())
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not called & {"eval", "exec", "compile", "__import__", "getattr"}


@FUZZ
@given(st.text(max_size=300))
def test_fuzz_arbitrary_text_only_raises_syntax_errors(text: str) -> None:
    watched_parse(text)


EXPRESSION_CHARACTERS = "stepochinfminaxlorwhcsqbdgkuv_0123456789.e+-*/()[], =<>!'\"~@%&|^:"


@FUZZ
@given(st.text(alphabet=EXPRESSION_CHARACTERS, max_size=120))
def test_fuzz_expression_like_text_only_raises_syntax_errors(text: str) -> None:
    watched_parse(text)


SEEDS = [
    "warmup(cosine(1e-3, steps=10000, end=1e-5), steps=500) * 0.5",
    "0.1 * 0.9 ** floor(epoch / 5)",
    "where(step < 100, step / 100, 1) * cyclic(0.1, 1.0, 50, mode='exp_range', gamma=0.99)",
    "join([linear(0, 1, 100), piecewise([10, 20], [1, 0.5, 0.1])], [100]) - -step",
    "clip(min(step, 3), 0, 1) + one_cycle(0.1, 1000, pct_start=0.25) < 5 <= 7",
    "exponential(0.1, 0.5, 100, staircase=True) + polynomial(1, 0, 10, cycle=True)",
]
GRAFTS = [ast.parse(text.format(marker="m"), mode="eval").body for text in HOSTILE] + [
    ast.parse(text, mode="eval").body
    for text in [
        "None",
        "True",
        "...",
        "'s'",
        "b'b'",
        "1j",
        "-1",
        "0",
        "1e400",
        "[]",
        "[step, 1]",
        "10 ** 10 ** 10",
        "99999999999999999999",
        "step if 1 else 2",
        "not step",
        "step and 1",
        "{1: 2}",
        "{1}",
        "(1, 2)",
        "x",
        "inf",
        "epoch",
        "step",
        "cosine",
        "min(1, 2, 3)",
    ]
]
NAMES = ["step", "epoch", "inf", "x", "cosine", "min", "__import__", "open", "os", "True"]


class Graft(ast.NodeTransformer):
    """Replaces one node (by identity) with another."""

    def __init__(self, target: ast.AST, replacement: ast.AST) -> None:
        self.target, self.replacement = target, replacement

    def visit(self, node: ast.AST) -> ast.AST:
        if node is self.target:
            return self.replacement
        return self.generic_visit(node)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    tree = copy.deepcopy(ast.parse(draw(st.sampled_from(SEEDS)), mode="eval"))
    for _ in range(draw(st.integers(1, 3))):
        nodes = [n for n in ast.walk(tree.body) if isinstance(n, ast.expr)]
        target = draw(st.sampled_from(nodes))
        kind = draw(st.sampled_from(["graft", "name", "number", "operator", "swap"]))
        if kind == "graft":
            tree = Graft(target, copy.deepcopy(draw(st.sampled_from(GRAFTS)))).visit(tree)
        elif kind == "name" and isinstance(target, ast.Name):
            target.id = draw(st.sampled_from(NAMES))
        elif kind == "number" and isinstance(target, ast.Constant):
            target.value = draw(
                st.one_of(st.floats(), st.integers(-(10**30), 10**30), st.text(max_size=3))
            )
        elif kind == "operator" and isinstance(target, ast.BinOp):
            target.op = draw(st.sampled_from([ast.Add(), ast.Pow(), ast.Mod(), ast.BitOr()]))
        elif kind == "swap" and isinstance(target, ast.Call) and target.args:
            target.args = list(reversed(target.args))
    try:
        return ast.unparse(ast.fix_missing_locations(tree))
    except Exception:
        assume(False)
        raise


@FUZZ
@given(mutated())
def test_fuzz_mutated_syntax_trees_only_raise_syntax_errors(text: str) -> None:
    result = watched_parse(text)
    assert result is None or isinstance(result, base.Schedule)


def test_nesting_just_under_the_limit_parses() -> None:
    text = "-" * (MAX_DEPTH - 2) + "step"
    expected = -1.0 if (MAX_DEPTH - 2) % 2 else 1.0
    np.testing.assert_allclose(values(parse(text)), expected * STEPS)
    assert math.isclose(float(parse("1" + " + 1" * 90)(0)), 91.0)


class Ramp(base.Schedule):
    """A stand-in family with every kind of argument: ``value = slope * step + offset``."""

    keyword = "ramp"

    def __init__(
        self, slope: float, offset: float = 0.0, *, label: str = "", flag: bool = False
    ) -> None:
        self.slope = base.check_number("ramp", "slope", slope)
        self.offset, self.label, self.flag = offset, label, flag

    def value(self, step):  # type: ignore[no-untyped-def]
        return step * self.slope + self.offset

    def arguments(self) -> dict:
        return {"slope": self.slope, "offset": self.offset, "label": self.label, "flag": self.flag}


def test_arguments_are_matched_from_the_class_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        sys.modules["hyperstep.schedules.language"], "vocabulary", lambda: {"ramp": Ramp}
    )
    s = parse("ramp(2, 1, label='x', flag=True)")
    assert (s.slope, s.offset, s.label, s.flag) == (2.0, 1, "x", True)
    np.testing.assert_allclose(values(s), 2 * STEPS + 1)
    with pytest.raises(ScheduleSyntaxError, match=r"at most 2 positional arguments; got 3"):
        parse("ramp(1, 2, 'x')")  # label is keyword-only
    with pytest.raises(
        ScheduleSyntaxError,
        match=r"unexpected keyword 'lable'; did you mean 'label'\? Its "
        r"arguments are slope, offset, label, flag",
    ):
        parse("ramp(1, lable='x')")
    with pytest.raises(ScheduleSyntaxError, match=r"Received: slope='steep'") as info:
        parse("ramp(offset=1, slope='steep')")
    assert info.value.column == len("ramp(offset=1, slope=")
