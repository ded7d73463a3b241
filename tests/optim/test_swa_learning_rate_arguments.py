"""``hs.swa_learning_rate`` refuses what ``torch.optim.swa_utils.SWALR`` refuses, and with
``anneal_steps=0`` follows SWALR's ``anneal_epochs=0``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError

torch = pytest.importorskip("torch")
swa_utils = pytest.importorskip("torch.optim.swa_utils")


def _torch_raises(**kwargs: Any) -> bool:
    optimizer = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
    try:
        swa_utils.SWALR(optimizer, swa_lr=0.05, **kwargs)
    except ValueError:
        return True
    return False


def _ours_raises(**kwargs: Any) -> bool:
    try:
        hs.swa_learning_rate(0.1, swa_lr=0.05, start=10, **kwargs)
    except InvalidArgumentError:
        return True
    return False


@pytest.mark.parametrize("anneal", [-1, 0, 1, 10, 1.7, 2.0, "3", None, True, np.int64(3)])
def test_anneal_steps_is_refused_where_swalr_refuses_anneal_epochs(anneal: Any) -> None:
    assert _ours_raises(anneal_steps=anneal) == _torch_raises(anneal_epochs=anneal)


@pytest.mark.parametrize("strategy", ["cos", "linear", "exp", "COS", None])
def test_anneal_strategy_is_refused_where_swalr_refuses_it(strategy: Any) -> None:
    assert _ours_raises(anneal_strategy=strategy) == _torch_raises(anneal_strategy=strategy)


def test_the_message_names_the_argument_and_the_value() -> None:
    with pytest.raises(InvalidArgumentError, match="Received: anneal_steps=-1"):
        hs.swa_learning_rate(0.1, swa_lr=0.05, start=10, anneal_steps=-1)
    with pytest.raises(InvalidArgumentError, match="Received: start=-3"):
        hs.swa_learning_rate(0.1, swa_lr=0.05, start=-3)
    with pytest.raises(InvalidTypeError, match=r"Received: swa_lr='0\.05'"):
        hs.swa_learning_rate(0.1, swa_lr="0.05", start=10)


def test_zero_anneal_steps_is_swalr_with_zero_anneal_epochs() -> None:
    # SWALR constructed at `start` and stepped once per step after it
    optimizer = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
    scheduler = swa_utils.SWALR(optimizer, swa_lr=0.05, anneal_epochs=0)
    theirs = []
    for _ in range(4):
        theirs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    lr = hs.swa_learning_rate(0.1, swa_lr=0.05, start=10, anneal_steps=0)
    ours = [float(v) for v in lr(np.arange(10, 14))]
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    assert float(lr(9)) == pytest.approx(0.1)
