"""Parity with Hugging Face ``transformers``: ``wsd``, ``inverse_sqrt`` and ``from_hf`` equal
``peak * lr_lambda(step)`` of the real schedulers at every step (float32 rounding only).

The lambda is read from the ``LambdaLR`` that ``transformers.get_scheduler`` builds on a dummy
torch optimizer whose learning rate is ``peak``.
"""

import importlib.util
import pathlib
import random
import warnings

import numpy as np
import pytest

import hyperstep.schedules as hs
from hyperstep import parse
from hyperstep.schedules.hf import NAMES

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None, reason="transformers is not installed"
)  # imported where used: collecting the file costs a process no transformers import

_spec = importlib.util.spec_from_file_location(
    "schedule_reference", pathlib.Path(__file__).with_name("reference.py")
)
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)


def hf_values(name, peak, steps, **kwargs) -> np.ndarray:
    """``peak * lr_lambda(t)`` of ``transformers.get_scheduler(name, ...)`` for t in steps."""
    from transformers import optimization

    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=peak)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # HF warns when both stable and training steps are given
        scheduler = optimization.get_scheduler(name, optimizer, **kwargs)
    factor = scheduler.lr_lambdas[0]
    return np.array([peak * factor(int(t)) for t in steps], dtype=np.float64)


def ours(schedule, steps) -> np.ndarray:
    return np.asarray(schedule(steps), dtype=np.float64)


@pytest.mark.parametrize("warmup_type", ["linear", "cosine", "1-sqrt"])
@pytest.mark.parametrize("decay_type", ["linear", "cosine", "1-sqrt"])
@pytest.mark.parametrize("min_ratio", [0.0, 0.1])
def test_wsd_matches_hugging_face_get_wsd_schedule(warmup_type, decay_type, min_ratio) -> None:
    peak, w, s, d = 3e-4, 37, 100, 53
    steps = np.arange(w + s + d + 51)
    expected = hf_values(
        "warmup_stable_decay",
        peak,
        steps,
        num_warmup_steps=w,
        num_training_steps=w + s + d,
        scheduler_specific_kwargs={
            "num_decay_steps": d,
            "warmup_type": warmup_type,
            "decay_type": decay_type,
            "min_lr_ratio": min_ratio,
        },
    )
    schedule = hs.wsd(
        peak, w, s, d, warmup_type=warmup_type, decay_type=decay_type, min_ratio=min_ratio
    )
    ref.assert_close(ours(schedule, steps), expected, scale=peak)
    ref.assert_close(ours(parse(repr(schedule)), steps), expected, scale=peak)


def megatron_wsd_decay(style: str, p: float) -> float:
    """Megatron-LM's WSD annealing coefficient (optimizer_param_scheduler.py), in float64."""
    if style == "exponential":
        return 2.0 * 0.5**p - 1.0
    return 1.0 - p**0.5  # "minus_sqrt"


@pytest.mark.parametrize("decay_type", ["exponential", "minus_sqrt"])
def test_wsd_megatron_decays_match_their_closed_form(decay_type) -> None:
    peak, w, s, d, m = 2.0, 10, 20, 30, 0.1
    steps = np.arange(w + s + d + 20)
    expected = []
    for t in steps:
        if t < w:
            f = t / w
        elif t < w + s:
            f = 1.0
        elif t < w + s + d:
            f = megatron_wsd_decay(decay_type, (t - w - s) / d)
        else:
            f = 0.0
        expected.append(peak * (m + (1 - m) * f))
    schedule = hs.wsd(peak, w, s, d, decay_type=decay_type, min_ratio=m)
    ref.assert_close(ours(schedule, steps), expected, scale=peak)


@pytest.mark.parametrize(("warmup", "timescale"), [(50, None), (50, 20), (0, None), (0, 300)])
def test_inverse_sqrt_matches_hugging_face(warmup, timescale) -> None:
    peak = 1e-3
    steps = np.arange(warmup + 400)
    expected = hf_values(
        "inverse_sqrt",
        peak,
        steps,
        num_warmup_steps=warmup,
        scheduler_specific_kwargs={"timescale": timescale},
    )
    schedule = hs.inverse_sqrt(peak, warmup, timescale=timescale)
    ref.assert_close(ours(schedule, steps), expected, scale=peak)


def random_kwargs(name: str, rng: random.Random, peak: float) -> dict:
    """Scheduler-specific arguments drawn at random for ``name``."""
    if name in ("cosine", "cosine_with_min_lr", "cosine_warmup_with_min_lr"):
        kwargs = {"num_cycles": rng.choice([0.5, 0.5, 1.0, 1.5, 0.25])}
        if name != "cosine":
            if rng.random() < 0.5:
                kwargs["min_lr_rate"] = rng.choice([0.0, 0.05, 0.1])
            else:
                kwargs["min_lr"] = peak * rng.choice([0.01, 0.2])
        if name == "cosine_warmup_with_min_lr" and rng.random() < 0.5:
            kwargs["warmup_lr_rate"] = rng.choice([0.0, 0.1, 0.3])
        return kwargs
    if name == "cosine_with_restarts":
        return {"num_cycles": rng.choice([1, 2, 3, 4])}
    if name == "polynomial":
        return {"lr_end": peak * rng.choice([0.0, 0.01, 0.1]), "power": rng.choice([1.0, 2.0, 0.5])}
    if name == "inverse_sqrt":
        return {"timescale": rng.choice([None, 17, 100])}
    if name == "warmup_stable_decay":
        return {
            "num_decay_steps": rng.randint(1, 60),
            "warmup_type": rng.choice(["linear", "cosine", "1-sqrt"]),
            "decay_type": rng.choice(["linear", "cosine", "1-sqrt"]),
            "min_lr_ratio": rng.choice([0.0, 0.1]),
        }
    return {}


@pytest.mark.parametrize("name", sorted(NAMES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_from_hf_matches_get_scheduler_for_every_pure_name(name, seed) -> None:
    rng = random.Random(f"{name}-{seed}")
    peak = rng.choice([1e-3, 3e-4, 0.1, 2.0])
    low = 1 if name == "cosine_warmup_with_min_lr" else 0
    w = rng.choice([low, 1, rng.randint(2, 40)])
    n = w + rng.randint(61, 200)
    kwargs = random_kwargs(name, rng, peak)
    steps = np.arange(n + 51)
    hf_kwargs = {"num_warmup_steps": w, "num_training_steps": n}
    expected = hf_values(name, peak, steps, scheduler_specific_kwargs=kwargs, **hf_kwargs)
    schedule = hs.from_hf(name, peak, **hf_kwargs, **kwargs)
    # a cosine's float32 angle pi * 2 * num_cycles * (step - w) / (n - w) is rounded by up
    # to 2**-24 of itself: past one half-wave the absolute error grows with the angle
    angle = np.pi * 2 * kwargs.get("num_cycles", 0.5) * (n + 50 - w) / (n - w)
    scale = peak * max(1.0, 2 * angle / np.pi)
    ref.assert_close(ours(schedule, steps), expected, scale=scale)
    ref.assert_close(ours(parse(repr(schedule)), steps), expected, scale=scale)


def test_from_hf_names_are_hugging_faces_pure_scheduler_types() -> None:
    from transformers.trainer_utils import SchedulerType

    pure = {t.value for t in SchedulerType} - {"reduce_lr_on_plateau", "greedy"}
    assert set(NAMES) == pure


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"name": "cosine_typo"}, r"must be one of .*Received: name='cosine_typo'"),
        ({"name": "reduce_lr_on_plateau"}, r"hs.ReduceOnPlateau"),
        ({"name": "cosine", "num_training_steps": 10}, r"needs `num_warmup_steps=`"),
        (
            {"name": "cosine_with_restarts", "num_warmup_steps": 10},
            r"needs `num_training_steps=`.*Received: num_training_steps=None",
        ),
        ({"name": "cosine", "num_warmup_steps": 10, "num_training_steps": 10}, r"more than"),
        (
            {"name": "linear", "num_warmup_steps": 1, "num_training_steps": 9, "power": 2},
            r"unknown arguments \['power'\]",
        ),
        (
            {"name": "cosine_with_min_lr", "num_warmup_steps": 1, "num_training_steps": 9},
            r"exactly one of `min_lr=` and `min_lr_rate=`",
        ),
        (
            {"name": "linear", "num_warmup_steps": -1, "num_training_steps": 9},
            r"integer >= 0. Received: num_warmup_steps=-1",
        ),
        (
            {"name": "cosine", "num_warmup_steps": 1, "num_training_steps": 9, "num_cycles": 0},
            r"`from_hf\(num_cycles=...\)` must be a number > 0. Received: num_cycles=0",
        ),
    ],
)
def test_from_hf_rejects_bad_arguments_with_the_value(kwargs, match) -> None:
    kwargs = dict(kwargs)
    with pytest.raises(ValueError, match=match):
        hs.from_hf(kwargs.pop("name"), 1e-3, **kwargs)


@pytest.mark.parametrize(
    ("schedule", "natural"),
    [
        (hs.wsd(1.0, 10, 80, 10), 100),
        (hs.from_hf("linear", 1.0, num_warmup_steps=10, num_training_steps=110), 110),
        (hs.from_hf("cosine_with_restarts", 1.0, num_warmup_steps=5, num_training_steps=50), 50),
        (hs.warmup(hs.cosine(1.0, steps=9000), steps=1000), 10000),
        (hs.inverse_sqrt(1.0, 10), None),
        (parse("0.5 * cosine(1.0, steps=30)"), 30),
    ],
)
def test_natural_steps_is_the_end_of_the_last_phase(schedule, natural) -> None:
    assert schedule.natural_steps == natural


def test_wsd_is_vectorized_and_runs_on_a_million_steps() -> None:
    values = ours(hs.wsd(1.0, 1000, 500_000, 498_999, decay_type="1-sqrt"), np.arange(1_000_000))
    assert values.shape == (1_000_000,)
    assert values[0] == 0.0 and values[1000] == 1.0 and values[-1] == 0.0


def test_from_hf_accepts_numpy_integers() -> None:
    s = hs.from_hf("linear", 1.0, num_warmup_steps=np.int64(2), num_training_steps=np.int32(12))
    assert repr(s) == "warmup(linear(1.0, 0.0, steps=10), steps=2)"
