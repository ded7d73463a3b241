"""Parity with torch's LR schedulers, driven on a dummy optimizer: the rate read with
``get_last_lr()`` after ``k`` calls of ``scheduler.step()`` is the rate of update ``k``,
which hyperstep gives at step ``k``."""

import importlib.util
import pathlib

import numpy as np
import pytest

import hyperstep.schedules as hs

torch = pytest.importorskip("torch")
S = torch.optim.lr_scheduler

_spec = importlib.util.spec_from_file_location(
    "schedule_reference", pathlib.Path(__file__).with_name("reference.py")
)
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)


def drive(make_scheduler, steps: int, lr: float = 0.1) -> np.ndarray:
    """Rates of updates 0..steps, from a real scheduler on SGD with momentum."""
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=lr, momentum=0.9)
    scheduler = make_scheduler(optimizer)
    rates = [scheduler.get_last_lr()[0]]
    for _ in range(steps):
        optimizer.step()
        scheduler.step()
        rates.append(scheduler.get_last_lr()[0])
    return np.array(rates, dtype=np.float64)


def _case(make, ours, end, *boundaries, steps=None):
    n = 3 * end if steps is None else steps
    return pytest.param(make, ours, n, list(boundaries), id=repr(ours)[:70])


CASES = [
    _case(
        lambda o: S.StepLR(o, step_size=10, gamma=0.5),
        hs.exponential(0.1, 0.5, every=10, staircase=True),
        30,
        10,
        20,
        30,
    ),
    _case(
        lambda o: S.MultiStepLR(o, milestones=[10, 25], gamma=0.1),
        hs.piecewise([10, 25], [0.1, 0.01, 0.001]),
        25,
        10,
        25,
    ),
    _case(lambda o: S.ExponentialLR(o, gamma=0.9), hs.exponential(0.1, 0.9, every=1), 20, 1),
    _case(
        lambda o: S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=20),
        hs.linear(0.025, 0.1, steps=20),
        20,
        20,
    ),
    _case(
        lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.0, total_iters=10),
        hs.linear(0.1, 0.0, steps=10),
        10,
        10,
    ),
    _case(
        lambda o: S.PolynomialLR(o, total_iters=20, power=2.0),
        hs.polynomial(0.1, 0.0, steps=20, power=2.0),
        20,
        20,
    ),
    _case(
        lambda o: S.CosineAnnealingLR(o, T_max=20, eta_min=0.01),
        hs.cosine(0.1, steps=20, end=0.01, past_end="periodic"),
        20,
        20,
        40,
    ),
    _case(
        lambda o: S.CosineAnnealingLR(o, T_max=10),
        hs.cosine(0.1, steps=10, past_end="periodic"),
        10,
        10,
        20,
    ),
    _case(
        lambda o: S.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.01),
        hs.cosine_restarts(0.1, steps=5, t_mul=2.0, end=0.01),
        35,
        5,
        15,
        35,
    ),
    _case(
        lambda o: S.CosineAnnealingWarmRestarts(o, T_0=7, T_mult=1),
        hs.cosine_restarts(0.1, steps=7, t_mul=1.0),
        21,
        7,
        14,
    ),
    _case(
        lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=3),
        hs.cosine_restarts(0.1, steps=3, t_mul=3.0),
        39,
        3,
        12,
        39,
    ),
    _case(
        lambda o: S.CyclicLR(o, base_lr=0.1, max_lr=1.0, step_size_up=10),
        hs.cyclic(0.1, 1.0, steps_up=10),
        20,
        10,
        20,
    ),
    _case(
        lambda o: S.CyclicLR(o, 0.1, 1.0, step_size_up=10, step_size_down=5, mode="triangular2"),
        hs.cyclic(0.1, 1.0, steps_up=10, steps_down=5, mode="triangular2"),
        30,
        10,
        15,
        30,
    ),
    _case(
        lambda o: S.CyclicLR(o, 0.1, 1.0, step_size_up=4, mode="exp_range", gamma=0.99),
        hs.cyclic(0.1, 1.0, steps_up=4, mode="exp_range", gamma=0.99),
        16,
        4,
        8,
    ),
    # OneCycleLR refuses steps past total_steps: compare over the whole run
    _case(
        lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=100),
        hs.one_cycle(1.0, steps=100),
        100,
        29,
        99,
        steps=99,
    ),
    _case(
        lambda o: S.OneCycleLR(o, max_lr=0.5, total_steps=50, pct_start=0.25, div_factor=10.0),
        hs.one_cycle(0.5, steps=50, pct_start=0.25, div_factor=10.0),
        50,
        steps=49,
    ),
    _case(
        lambda o: S.OneCycleLR(
            o, max_lr=1.0, total_steps=60, anneal_strategy="linear", three_phase=True
        ),
        hs.one_cycle(1.0, steps=60, anneal="linear", three_phase=True),
        60,
        17,
        34,
        59,
        steps=59,
    ),
    _case(
        lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=40, three_phase=True),
        hs.one_cycle(1.0, steps=40, three_phase=True),
        40,
        11,
        22,
        39,
        steps=39,
    ),
]


@pytest.mark.parametrize(("make", "ours", "steps", "boundaries"), CASES)
def test_matches_torch_scheduler_at_every_step(make, ours, steps, boundaries):
    expected = drive(make, steps)
    grid = np.arange(steps + 1)
    assert set(boundaries) <= set(grid.tolist())
    ref.assert_close(ours(grid), expected)


def test_one_cycle_holds_the_minimum_where_torch_extrapolates_at_total_steps():
    expected = drive(lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=100), 100)
    ours = hs.one_cycle(1.0, steps=100)
    assert expected[100] > 100 * expected[99]  # torch's cosine rises again at step 100
    ref.assert_close(ours([99, 100, 300]), [expected[99]] * 3)


def drive_momentum(steps: int, **one_cycle: object) -> np.ndarray:
    """Momentum of updates 0..steps from a real ``OneCycleLR(cycle_momentum=True)``."""
    parameter = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([parameter], lr=0.1, momentum=0.9)
    scheduler = S.OneCycleLR(optimizer, max_lr=1.0, total_steps=steps + 1, **one_cycle)
    momenta = [optimizer.param_groups[0]["momentum"]]
    for _ in range(steps):
        optimizer.step()
        scheduler.step()
        momenta.append(optimizer.param_groups[0]["momentum"])
    return np.array(momenta, dtype=np.float64)


@pytest.mark.parametrize(
    "one_cycle",
    [
        {},
        {"three_phase": True},
        {"pct_start": 0.25, "anneal_strategy": "linear"},
        {"three_phase": True, "anneal_strategy": "linear", "base_momentum": 0.8},
        {"max_momentum": 0.99, "base_momentum": 0.9, "pct_start": 0.4},
    ],
    ids=repr,
)
def test_one_cycle_with_start_and_end_is_torchs_cycled_momentum(one_cycle) -> None:
    expected = drive_momentum(99, **one_cycle)
    high = one_cycle.get("max_momentum", 0.95)
    ours = hs.one_cycle(
        one_cycle.get("base_momentum", 0.85),
        steps=100,
        pct_start=one_cycle.get("pct_start", 0.3),
        anneal=one_cycle.get("anneal_strategy", "cos"),
        three_phase=one_cycle.get("three_phase", False),
        start=high,
        end=high,
    )
    assert expected.min() < expected[0] == expected[-1] == high  # it does cycle down and up
    ref.assert_close(ours(np.arange(100)), expected)
