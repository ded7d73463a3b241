"""A catalogue of bad constructor inputs: each raises at construction, with a message that
names the argument and the value received."""

import re

import keras
import numpy as np
import pytest

import hyperstep.schedules as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError

nan, inf = float("nan"), float("inf")
V, T = InvalidArgumentError, InvalidTypeError


def _r(text: str) -> str:
    return re.escape(text)


# (description, build, error type, regex that must match the message)
CATALOGUE = [
    # steps: negative, zero, NaN, inf, wrong types
    ("negative steps", lambda: hs.linear(1, 0, -3), V, _r("linear(steps=...)") + ".*steps=-3"),
    ("zero steps", lambda: hs.cosine(1.0, 0), V, _r("cosine(steps=...)") + ".*Received: steps=0"),
    ("nan steps", lambda: hs.cosine(1.0, nan), V, "Received: steps=nan"),
    ("inf steps", lambda: hs.polynomial(1, 0, inf), V, "Received: steps=inf"),
    ("string steps", lambda: hs.cosine(1.0, "100"), T, "Received: steps='100'"),
    ("bool steps", lambda: hs.one_cycle(1.0, True), T, "Received: steps=True"),
    ("None steps", lambda: hs.linear(0, 1, None), T, "Received: steps=None"),
    ("list steps", lambda: hs.cosine_restarts(1.0, [10]), T, _r("Received: steps=[10]")),
    ("negative every", lambda: hs.exponential(1, 0.5, -1), V, "Received: every=-1"),
    ("zero every", lambda: hs.inverse_time(1, 0.5, 0), V, "Received: every=0"),
    ("negative begin", lambda: hs.linear(0, 1, 10, begin=-5), V, "Received: begin=-5"),
    ("nan begin", lambda: hs.exponential(1, 0.5, 10, begin=nan), V, "Received: begin=nan"),
    ("zero steps_up", lambda: hs.cyclic(0.1, 1, 0), V, "Received: steps_up=0"),
    ("negative steps_down", lambda: hs.cyclic(0.1, 1, 5, -5), V, "Received: steps_down=-5"),
    ("zero warmup steps", lambda: hs.warmup(1.0, 0), V, _r("warmup(steps=...)") + ".*steps=0"),
    ("np.nan warmup steps", lambda: hs.warmup(1.0, np.nan), V, "steps=nan"),
    # values: NaN, inf, strings, bools, None
    ("nan start", lambda: hs.linear(nan, 0, 10), V, _r("linear(start=...)") + ".*start=nan"),
    ("inf end", lambda: hs.linear(1, inf, 10), V, "finite.*Received: end=inf"),
    ("string start", lambda: hs.cosine("1e-3", 10), T, "Received: start='1e-3'"),
    ("bool start", lambda: hs.exponential(True, 0.5, 10), T, "Received: start=True"),
    ("None peak", lambda: hs.one_cycle(None, 100), T, "Received: peak=None"),
    ("string low", lambda: hs.cyclic("low", 1.0, 10), T, "Received: low='low'"),
    ("nan high", lambda: hs.cyclic(0.1, nan, 10), V, "Received: high=nan"),
    ("inf warmup start", lambda: hs.warmup(1.0, 10, start=-inf), V, "Received: start=-inf"),
    ("nan cosine end", lambda: hs.cosine(1.0, 10, end=nan), V, "Received: end=nan"),
    ("string exponential end", lambda: hs.exponential(1, 0.5, 1, end="0"), T, "end='0'"),
    # rates and shapes
    ("zero rate", lambda: hs.exponential(1, 0, 10), V, _r("exponential(rate=...)") + ".*rate=0"),
    ("negative rate", lambda: hs.exponential(1, -0.5, 10), V, "Received: rate=-0.5"),
    ("negative inverse rate", lambda: hs.inverse_time(1, -1, 10), V, "Received: rate=-1"),
    ("zero power", lambda: hs.polynomial(1, 0, 10, power=0), V, "Received: power=0"),
    ("nan exponent", lambda: hs.cosine(1, 10, exponent=nan), V, "Received: exponent=nan"),
    ("t_mul below 1", lambda: hs.cosine_restarts(1, 10, t_mul=0.5), V, "Received: t_mul=0.5"),
    ("negative m_mul", lambda: hs.cosine_restarts(1, 10, m_mul=-1), V, "Received: m_mul=-1"),
    ("zero gamma", lambda: hs.cyclic(0.1, 1, 10, gamma=0), V, "Received: gamma=0"),
    ("pct_start 0", lambda: hs.one_cycle(1, 100, pct_start=0), V, "Received: pct_start=0"),
    ("pct_start 1", lambda: hs.one_cycle(1, 100, pct_start=1.0), V, "Received: pct_start=1.0"),
    ("empty phase", lambda: hs.one_cycle(1, 3, pct_start=0.3), V, "empty phase.*steps=3"),
    ("div_factor 0", lambda: hs.one_cycle(1, 100, div_factor=0), V, "Received: div_factor=0"),
    (
        "final_div_factor nan",
        lambda: hs.one_cycle(1, 100, final_div_factor=nan),
        V,
        "Received: final_div_factor=nan",
    ),
    # unknown modes and flags
    ("unknown cyclic mode", lambda: hs.cyclic(0.1, 1, 10, mode="sine"), V, "mode='sine'"),
    ("unknown anneal", lambda: hs.one_cycle(1, 100, anneal="cosine"), V, "anneal='cosine'"),
    ("unknown compat", lambda: hs.one_cycle(1, 100, compat="keras"), V, "compat='keras'"),
    ("unknown past_end", lambda: hs.cosine(1, 10, past_end="zero"), V, "past_end='zero'"),
    ("string staircase", lambda: hs.exponential(1, 0.5, 1, staircase="yes"), T, "staircase='yes'"),
    ("int cycle flag", lambda: hs.polynomial(1, 0, 10, cycle=1), T, "Received: cycle=1"),
    ("None inclusive", lambda: hs.piecewise([1], [1, 2], inclusive=None), T, "inclusive=None"),
    ("string three_phase", lambda: hs.one_cycle(1, 100, three_phase="no"), T, "three_phase='no'"),
    # boundaries and lists
    (
        "unsorted boundaries",
        lambda: hs.piecewise([20, 10], [1, 2, 3]),
        V,
        "sorted and unique.*" + _r("boundaries=[20, 10]"),
    ),
    (
        "duplicate boundaries",
        lambda: hs.piecewise([10, 10], [1, 2, 3]),
        V,
        _r("boundaries=[10, 10]"),
    ),
    ("negative boundary", lambda: hs.piecewise([-1], [1, 2]), V, _r("boundaries=[-1]")),
    ("nan boundary", lambda: hs.piecewise([nan], [1, 2]), V, _r("boundaries=[nan]")),
    ("string boundary", lambda: hs.piecewise(["10"], [1, 2]), V, _r("boundaries=['10']")),
    ("boundaries not a list", lambda: hs.piecewise(10, [1, 2]), T, "Received: boundaries=10"),
    ("values a string", lambda: hs.piecewise([1], "12"), T, "Received: values='12'"),
    ("inf value", lambda: hs.piecewise([1], [1, inf]), V, _r("values=[1, inf]")),
    (
        "too few values",
        lambda: hs.piecewise([10, 20], [1, 2]),
        V,
        _r("2 boundaries=[10, 20] and 2 values=[1, 2]"),
    ),
    (
        "too many values",
        lambda: hs.piecewise([10], [1, 2, 3]),
        V,
        _r("1 boundaries=[10] and 3 values=[1, 2, 3]"),
    ),
    (
        "join boundaries too many",
        lambda: hs.join([1.0, 2.0], [10, 20]),
        V,
        _r("2 schedules and boundaries=[10, 20]") + ".*Drop the last boundary",
    ),
    (
        "join boundaries too few",
        lambda: hs.join([1.0, 2.0, 3.0], [10]),
        V,
        _r("3 schedules and boundaries=[10]") + ".*Add a boundary",
    ),
    ("join unsorted", lambda: hs.join([1.0, 2.0, 3.0], [20, 10]), V, _r("boundaries=[20, 10]")),
    ("join duplicate", lambda: hs.join([1.0, 2.0, 3.0], [5, 5]), V, _r("boundaries=[5, 5]")),
    ("join empty", lambda: hs.join([], []), V, _r("Received: 0 schedules and boundaries=[]")),
    ("join not a list", lambda: hs.join(None, []), T, "Received: schedules=None"),
    # children of the wrong kind
    ("warmup of a bool", lambda: hs.warmup(True, 10), T, "Received: schedule=True"),
    ("warmup of a dict", lambda: hs.warmup({"a": 1}, 10), T, _r("Received: schedule={'a': 1}")),
    ("join child None", lambda: hs.join([1.0, None], [5]), T, _r("schedules[1]=None")),
    ("from_keras of a float", lambda: hs.from_keras(0.5), T, "Received: schedule=0.5"),
    (
        "from_keras of an optimizer",
        lambda: hs.from_keras(keras.optimizers.SGD()),
        T,
        "Received: schedule=<keras",
    ),
]


def test_the_catalogue_holds_at_least_40_bad_inputs():
    assert len(CATALOGUE) >= 40
    assert len({name for name, *_ in CATALOGUE}) == len(CATALOGUE)


@pytest.mark.parametrize(
    ("build", "error", "pattern"),
    [c[1:] for c in CATALOGUE],
    ids=[c[0] for c in CATALOGUE],
)
def test_bad_input_raises_naming_argument_and_received_value(build, error, pattern):
    with pytest.raises(error, match=pattern) as info:
        build()
    assert "Received" in str(info.value)
    assert isinstance(info.value, (ValueError, TypeError))
