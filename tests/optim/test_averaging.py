"""SWA, EMA and BatchNorm refresh against torch.optim.swa_utils."""

import keras
import numpy as np
import pytest

import hyperstep as hs

torch = pytest.importorskip("torch")
swa_utils = pytest.importorskip("torch.optim.swa_utils")

RNG = np.random.default_rng(1)
W0 = RNG.normal(size=(4, 3)).astype("float32")
B0 = RNG.normal(size=(3,)).astype("float32")
X = RNG.normal(size=(40, 8, 4)).astype("float32")
Y = RNG.normal(size=(40, 8, 3)).astype("float32")


def gradients(i, w, b):
    """d/dw, d/db of mean((x w + b - y)**2) on batch i (float32)."""
    residual = 2 * (X[i] @ w + b - Y[i]) / Y[i].size
    return (X[i].T @ residual).astype("float32"), residual.sum(0).astype("float32")


def torch_run(steps, start, every, lr_start, swa_lr, anneal_steps):
    module = torch.nn.Linear(4, 3)
    with torch.no_grad():
        module.weight.copy_(torch.tensor(W0.T))
        module.bias.copy_(torch.tensor(B0))
    opt = torch.optim.SGD(module.parameters(), lr=0.1)
    averaged = swa_utils.AveragedModel(module)
    swalr = swa_utils.SWALR(opt, swa_lr=swa_lr, anneal_epochs=anneal_steps)
    rates = []
    for k in range(steps):
        rates.append(opt.param_groups[0]["lr"])
        w, b = module.weight.detach().numpy().T, module.bias.detach().numpy()
        gw, gb = gradients(k, w, b)
        module.weight.grad, module.bias.grad = torch.tensor(gw.T), torch.tensor(gb)
        opt.step()
        if k + 1 >= start and (k + 1 - start) % every == 0:
            averaged.update_parameters(module)
        if k >= lr_start:
            swalr.step()
    weights = [averaged.module.weight.detach().numpy().T, averaged.module.bias.detach().numpy()]
    return weights, rates, int(averaged.n_averaged)


@pytest.mark.parametrize("kind", ["StepOptimizer", "scheduled"])
def test_swa_weights_and_learning_rates_equal_torch_swa_utils(kind):
    steps, start, every, lr_start = 40, 10, 3, 15
    learning_rate = hs.swa_learning_rate(0.1, swa_lr=0.02, start=lr_start, anneal_steps=5)
    if kind == "scheduled":
        opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=learning_rate)
    else:
        opt = hs.StepOptimizer("sgd", learning_rate=learning_rate)
    variables = [keras.Variable(W0), keras.Variable(B0)]
    swa = hs.SWA(opt, start=start, every=every)
    rates = []
    for k in range(steps):
        rates.append(float(opt.learning_rate))
        grads = gradients(k, *(v.numpy() for v in variables))
        opt.apply([keras.ops.convert_to_tensor(g) for g in grads], variables)
        swa.update()
    expected, torch_rates, n = torch_run(steps, start, every, lr_start, 0.02, 5)
    np.testing.assert_allclose(rates, torch_rates, rtol=1e-6)
    assert int(swa.n_averaged) == n == 11
    trained = [v.numpy() for v in variables]
    with hs.averaged_weights(opt):
        for v, e in zip(variables, expected, strict=True):
            np.testing.assert_allclose(v.numpy(), e, rtol=1e-5, atol=1e-6)
    for v, t in zip(variables, trained, strict=True):  # back exactly
        np.testing.assert_array_equal(v.numpy(), t)


def test_ema_with_a_decay_schedule_equals_averaged_model_with_that_decay():
    decay = hs.parse("min(0.9, (1 + step) / (10 + step))")
    opt = hs.StepOptimizer("sgd", learning_rate=0.1)
    variables = [keras.Variable(W0), keras.Variable(B0)]
    ema = hs.EMA(opt, decay=decay, start=2)
    module = torch.nn.Linear(4, 3)
    with torch.no_grad():
        module.weight.copy_(torch.tensor(W0.T))
        module.bias.copy_(torch.tensor(B0))

    def avg_fn(averaged, current, n):  # torch calls it with the step in a closure below
        return averaged + (current - averaged) * (1 - step_decay[0])

    step_decay = [0.0]
    averaged = swa_utils.AveragedModel(module, avg_fn=avg_fn)
    torch_opt = torch.optim.SGD(module.parameters(), lr=0.1)
    for k in range(20):
        grads = gradients(k, *(v.numpy() for v in variables))
        opt.apply([keras.ops.convert_to_tensor(g) for g in grads], variables)
        ema.update()
        module.weight.grad, module.bias.grad = torch.tensor(grads[0].T), torch.tensor(grads[1])
        torch_opt.step()
        if k + 1 >= 2:
            step_decay[0] = min(0.9, (1 + (k + 1)) / (10 + (k + 1)))
            averaged.update_parameters(module)
    expected = [averaged.module.weight.detach().numpy().T, averaged.module.bias.detach().numpy()]
    with hs.averaged_weights(ema):
        for v, e in zip(variables, expected, strict=True):
            np.testing.assert_allclose(v.numpy(), e, rtol=1e-5, atol=1e-6)


def test_refresh_batch_norm_equals_update_bn():
    """Keras's moving variance is the biased batch variance (as in Keras's own training),
    torch's the unbiased one: with batches of n rows they differ by n / (n - 1) exactly."""
    model = keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3), keras.layers.BatchNormalization()]
    )
    model.layers[0].set_weights([W0, B0])
    batches = [X[i] for i in range(10)]
    hs.refresh_batch_norm(model, batches)
    module = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    with torch.no_grad():
        module[0].weight.copy_(torch.tensor(W0.T))
        module[0].bias.copy_(torch.tensor(B0))
    swa_utils.update_bn([torch.tensor(b) for b in batches], module)
    bn = model.layers[1]
    np.testing.assert_allclose(
        bn.moving_mean.numpy(), module[1].running_mean.numpy(), rtol=1e-6, atol=1e-7
    )
    n = batches[0].shape[0]
    np.testing.assert_allclose(
        bn.moving_variance.numpy() * n / (n - 1), module[1].running_var.numpy(), rtol=1e-5
    )
    assert bn.momentum == 0.99  # restored
    np.testing.assert_array_equal(model.layers[0].get_weights()[0], W0)


def test_averaged_weights_refuses_an_optimizer_without_averages():
    opt = hs.StepOptimizer("adam")
    with pytest.raises(ValueError, match="schedule-free rule"):
        with hs.averaged_weights(opt):
            pass


def test_swa_checks_its_arguments():
    with pytest.raises(ValueError, match=r"every=\.\.\..*Received: every=0"):
        hs.SWA(hs.StepOptimizer("sgd"), every=0)
    with pytest.raises(TypeError, match="hyperstep optimizer"):
        hs.SWA(keras.optimizers.SGD())
