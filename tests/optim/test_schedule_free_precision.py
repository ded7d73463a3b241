"""Schedule-free AdamW as accurate as the `schedulefree` reference in float32: the package's
own ``test_foreach`` and ``test_compile`` set-ups (lr 0.3, warmup 5, weight decay 0.5, ten
steps of uniform gradients) with ours in place of the second optimizer, at their own
tolerance (torch's default ``allclose``), and the bias correction against a float64 form."""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.optim.schedule_free import bias_correction

torch = pytest.importorskip("torch")
schedulefree = pytest.importorskip("schedulefree")


@pytest.mark.parametrize("foreach", [False, True], ids=["test_compile", "test_foreach"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_schedule_free_adamw_passes_the_packages_own_tolerance_at_every_step(foreach, seed):
    torch.manual_seed(seed)
    reference = torch.randn(3, 2).requires_grad_()
    theirs = schedulefree.AdamWScheduleFree(
        [reference], lr=0.3, warmup_steps=5, weight_decay=0.5, foreach=foreach
    )
    variable = keras.Variable(reference.detach().numpy().copy())
    ours = hs.StepOptimizer(
        hs.rules.ScheduleFreeAdamWRule(), learning_rate=0.3, warmup_steps=5, weight_decay=0.5
    )
    for _ in range(10):
        theirs.train()
        grad = torch.rand_like(reference)
        reference.grad = torch.clone(grad)
        theirs.step()
        ours.apply([keras.ops.convert_to_tensor(grad.numpy())], [variable])
        y = torch.tensor(np.asarray(keras.ops.convert_to_numpy(variable)))
        assert torch.allclose(y, reference.detach())
        theirs.eval()
        with hs.averaged_weights(ours):
            x = torch.tensor(np.asarray(keras.ops.convert_to_numpy(variable)))
        assert torch.allclose(x, reference.detach())


@pytest.mark.parametrize("beta", [0.999, 0.99552, 0.9, 0.5, 0.9999])
def test_bias_correction_is_accurate_to_float32_rounding(beta):
    b = float(np.float32(beta))  # the float32 beta the optimizer holds
    n = np.array([1, 2, 5, 10, 100, 1000, 10_000], np.float32)
    truth = np.array([-math.expm1(k * math.log1p(-(1.0 - b))) for k in n.tolist()])
    ours = np.asarray(keras.ops.convert_to_numpy(bias_correction(b, n)), np.float64)
    np.testing.assert_allclose(ours, truth, rtol=4e-7)
    naive = 1.0 - np.float32(b) ** n  # what it replaces: 1e-5 off for beta near 1
    assert beta < 0.99 or np.max(np.abs(naive / truth - 1.0)) > 1e-6
