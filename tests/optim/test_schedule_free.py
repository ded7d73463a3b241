"""Schedule-free rules against Meta's reference implementations (the `schedulefree` package).

Both sides take the gradient of the same least-squares loss, in closed form (numpy), at
their own weights, for 200 fixed batches; y (train mode) and x (after the swap) must agree.
"""

import keras
import numpy as np
import pytest

import hyperstep as hs

torch = pytest.importorskip("torch")
schedulefree = pytest.importorskip("schedulefree")

# AlgoPerf v0.5 self-tuning submission settings
ALGOPERF = {"learning_rate": 0.0025, "beta_2": 0.99552, "weight_decay": 0.0812, "r": 0.75}
ALGOPERF["warmup_steps"] = 20
RNG = np.random.default_rng(0)
W0 = RNG.normal(size=(4, 3)).astype("float32")
B0 = RNG.normal(size=(3,)).astype("float32")
X = RNG.normal(size=(200, 8, 4)).astype("float32")
Y = RNG.normal(size=(200, 8, 3)).astype("float32")


def numpy(variable):
    return np.array(keras.ops.convert_to_numpy(variable))


def gradients(i, w, b):
    """d/dw, d/db of mean((x w + b - y)**2) on batch i (float32)."""
    residual = 2 * (X[i] @ w + b - Y[i]) / Y[i].size
    return (X[i].T @ residual).astype("float32"), residual.sum(0).astype("float32")


def run_reference(cls, settings, steps=200, lr_of_step=None, bias_lr=None):
    params = [torch.tensor(W0), torch.tensor(B0)]
    groups = [{"params": [params[0]]}, {"params": [params[1]]}]
    if bias_lr is not None:
        groups[1]["lr"] = bias_lr
    opt = cls(groups, **settings)
    opt.train()
    for i in range(steps):
        if lr_of_step is not None:
            for group in opt.param_groups:
                group["lr"] = lr_of_step(i)
        for p, g in zip(params, gradients(i, *(q.detach().numpy() for q in params)), strict=True):
            p.grad = torch.tensor(g)
        opt.step()
    y = [p.numpy().copy() for p in params]
    opt.eval()
    return y, [p.numpy().copy() for p in params]


def compiled_step(opt, variables):
    """One update on batch (x, y): the same closed-form gradient, in keras.ops."""

    def step(x, y):
        w, b = variables
        x, y = keras.ops.convert_to_tensor(x), keras.ops.convert_to_tensor(y)
        residual = 2 * (keras.ops.matmul(x, w) + b - y) / 24
        grads = [keras.ops.matmul(keras.ops.transpose(x), residual), keras.ops.sum(residual, 0)]
        opt.apply(grads, variables)

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        return tf.function(step)  # 200 eager updates take seconds
    return step


def run_ours(rule, settings, steps=200, groups=(), build=True):
    """``build``: build the optimizer before the step is traced, as ``fit`` does (a
    ``tf.function`` whose first trace creates variables traces twice); ``False`` builds it
    inside the first trace."""
    variables = [keras.Variable(W0, name="kernel"), keras.Variable(B0, name="bias")]
    opt = hs.StepOptimizer(rule, groups=groups, **settings)
    if build:
        opt.build(variables)
    step = compiled_step(opt, variables)
    for i in range(steps):
        step(X[i], Y[i])
    y = [numpy(v) for v in variables]
    with hs.averaged_weights(opt):
        x = [numpy(v) for v in variables]
    assert all(np.array_equal(a, numpy(v)) for a, v in zip(y, variables, strict=True))
    return y, x, opt


def torch_settings(settings):
    out = {"lr": settings["learning_rate"], "weight_decay": settings["weight_decay"]}
    out.update(r=settings["r"], warmup_steps=settings["warmup_steps"])
    if "beta_2" in settings:
        out["betas"] = (0.9, settings["beta_2"])
    if "momentum" in settings:
        out["momentum"] = settings["momentum"]
    return out


def assert_close(ours, theirs):
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


# memory_efficient=True in `make test-slow` (the operations test below runs it with the
# settings on the default path)
@pytest.mark.parametrize("memory_efficient", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_schedule_free_adamw_matches_the_reference_with_algoperf_settings(memory_efficient):
    rule = hs.rules.ScheduleFreeAdamWRule(memory_efficient=memory_efficient)
    y, x, _ = run_ours(rule, ALGOPERF, build=False)  # built in the step (the others: before)
    ref_y, ref_x = run_reference(schedulefree.AdamWScheduleFreeReference, torch_settings(ALGOPERF))
    assert_close(y, ref_y)
    assert_close(x, ref_x)
    assert not np.allclose(x[0], y[0], rtol=1e-3)  # the swap moved something


@pytest.mark.parametrize(
    ("memory_efficient", "fused"),
    # the two mixed cells in `make test-slow`
    [(False, False), (True, True)]
    + [pytest.param(*cell, marks=pytest.mark.slow) for cell in [(False, True), (True, False)]],
)
def test_schedule_free_adamw_operations_and_kernel_match_the_reference(memory_efficient, fused):
    # TensorFlow: z and the second moment in one ResourceApplyAdam pass (the default there),
    # or the rule's own operations (fused=False, as on the other backends)
    rule = hs.rules.ScheduleFreeAdamWRule(memory_efficient=memory_efficient)
    y, x, opt = run_ours(rule, {**ALGOPERF, "fused": fused})
    kernel = fused and keras.backend.backend() == "tensorflow"
    assert ("adam_scratch" in opt._scratch) == kernel
    ref_y, ref_x = run_reference(schedulefree.AdamWScheduleFreeReference, torch_settings(ALGOPERF))
    assert_close(y, ref_y)
    assert_close(x, ref_x)


def kernel_calls(opt, variables, jit_compile):
    """ResourceApplyAdam ops in the traced update (TensorFlow)."""
    import tensorflow as tf

    grads = [keras.ops.ones_like(v) for v in variables]
    step = tf.function(lambda: opt.apply(grads, variables), jit_compile=jit_compile)
    graph = step.get_concrete_function().graph
    return sum(op.type == "ResourceApplyAdam" for op in graph.get_operations())


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow's kernel")
def test_schedule_free_adamw_takes_the_kernel_by_default_outside_xla_only():
    """fused=None (default) is fused=True for this rule; under XLA neither takes the kernel
    (XLA fuses the operations); the scratch buffers are not optimizer variables, so the
    checkpoint is the same whatever `fused` is."""
    counts, saved = {}, {}
    for fused in (None, True, False):
        variables = [keras.Variable(W0, name="kernel"), keras.Variable(B0, name="bias")]
        opt = hs.StepOptimizer(hs.rules.ScheduleFreeAdamWRule(), fused=fused, **ALGOPERF)
        opt.build(variables)
        counts[fused] = [kernel_calls(opt, variables, jit) for jit in (False, True)]
        scratch = opt._scratch.get("adam_scratch", [])
        assert not any(v is b for v in opt.variables for b in scratch)
        saved[fused] = [v.path.split("/", 1)[1] for v in opt.variables]
    assert counts == {None: [2, 0], True: [2, 0], False: [0, 0]}
    assert saved[None] == saved[True] == saved[False]
    assert hs.StepOptimizer(hs.rules.AdamRule())._fuses is False  # other rules: fused=False


def test_a_checkpoint_moves_between_fused_and_unfused_optimizers():
    def trained(fused, steps):
        variables = [keras.Variable(W0), keras.Variable(B0)]
        opt = hs.StepOptimizer(hs.rules.ScheduleFreeAdamWRule(), fused=fused, **ALGOPERF)
        opt.build(variables)  # before the step is traced: one trace
        step = compiled_step(opt, variables)
        for i in range(steps):
            step(X[i], Y[i])
        return opt, variables

    store, clock_store = {}, {}
    saved, _ = trained(False, 5)
    saved.save_own_variables(store)
    saved.clock.save_own_variables(clock_store)  # the clock is its own saved layer
    loaded, _ = trained(None, 0)
    loaded.load_own_variables(store)
    loaded.clock.load_own_variables(clock_store)
    for a, b in zip(saved.variables, loaded.variables, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.slow  # 200 eager steps: ~5 s
@pytest.mark.parametrize("memory_efficient", [False, True])
def test_schedule_free_sgd_matches_the_reference(memory_efficient):
    settings = {**ALGOPERF, "learning_rate": 0.05, "momentum": 0.9}
    del settings["beta_2"]
    y, x, _ = run_ours(hs.rules.ScheduleFreeSGDRule(memory_efficient=memory_efficient), settings)
    ref_y, ref_x = run_reference(schedulefree.SGDScheduleFreeReference, torch_settings(settings))
    assert_close(y, ref_y)
    assert_close(x, ref_x)


@pytest.mark.slow  # 200 eager steps: ~5 s
def test_groups_and_a_learning_rate_schedule_match_the_reference_per_group():
    schedule = hs.schedules.cosine(0.0025, steps=200, end=0.0005)
    settings = {**ALGOPERF, "learning_rate": schedule}
    group = hs.Group("bias", match="bias", learning_rate=0.01, beta_1=0.8)
    y, x, _ = run_ours(hs.rules.ScheduleFreeAdamWRule(), settings, groups=[group])
    params = [torch.tensor(W0), torch.tensor(B0)]
    ref = schedulefree.AdamWScheduleFreeReference(
        [{"params": [params[0]]}, {"params": [params[1]], "lr": 0.01, "betas": (0.8, 0.99552)}],
        **torch_settings(ALGOPERF),
    )
    ref.train()
    for i in range(200):
        ref.param_groups[0]["lr"] = float(schedule(i))
        for p, g in zip(params, gradients(i, *(q.detach().numpy() for q in params)), strict=True):
            p.grad = torch.tensor(g)
        ref.step()
    assert_close(y, [p.numpy() for p in params])
    ref.eval()
    assert_close(x, [p.numpy() for p in params])


def test_state_is_saved_and_resumed_exactly_even_inside_the_swap(tmp_path):
    def model_and_optimizer():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
        model.set_weights([W0, B0])
        opt = hs.StepOptimizer(hs.rules.ScheduleFreeAdamWRule(), **ALGOPERF)
        model.compile(optimizer=opt, loss="mse")
        return model, opt

    data = (X[:16].reshape(-1, 4), Y[:16].reshape(-1, 3))
    whole, opt = model_and_optimizer()
    whole.fit(*data, batch_size=8, epochs=2, shuffle=False, verbose=0)

    first, opt1 = model_and_optimizer()
    first.fit(*data, batch_size=8, epochs=1, shuffle=False, verbose=0)
    with hs.averaged_weights(opt1):  # saved with x in the variables, y in the slot
        first.save(tmp_path / "m.keras")
    resumed = keras.models.load_model(tmp_path / "m.keras")
    callback = hs.callbacks.AveragedWeights(resumed.optimizer, at_end="training")
    resumed.fit(*data, batch_size=8, epochs=1, shuffle=False, verbose=0, callbacks=[callback])
    for a, b in zip(whole.get_weights(), resumed.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(opt.variables, resumed.optimizer.variables, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert int(resumed.optimizer.clock.step) == 2 * 128 // 8  # two epochs of 16 batches


def test_averaged_weights_callback_evaluates_and_ends_at_x():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.set_weights([W0, B0])
    opt = hs.StepOptimizer(hs.rules.ScheduleFreeAdamWRule(), **ALGOPERF)
    model.compile(optimizer=opt, loss="mse")
    data = (X[:16].reshape(-1, 4), Y[:16].reshape(-1, 3))
    callback = hs.callbacks.AveragedWeights(opt)
    history = model.fit(
        *data,
        batch_size=8,
        epochs=2,
        shuffle=False,
        verbose=0,
        validation_data=data,
        callbacks=[callback],
    )
    # after fit the model holds x; its loss on the data is what fit's validation reported
    assert history.history["val_loss"][-1] == pytest.approx(model.evaluate(*data, verbose=0))
    with hs.averaged_weights(opt):  # already averaged: no second exchange
        held = [v.numpy() for v in model.trainable_variables]
    np.testing.assert_array_equal(held[0], model.trainable_variables[0].numpy())


def test_keras_schedule_free_adamw_departs_from_the_reference():
    """Where Keras 3.15's ScheduleFreeAdamW departs from the reference.

    1. Its average is uniform (weight 1/t): it can match the reference only with r = 0 and
       weight_lr_power = 0, and departs under the AlgoPerf settings (lr-weighted average,
       weight decay taken from z at y in the reference, from y itself in Keras).
    2. On TensorFlow it departs even then: `momentum_old = momentum.value` is the live
       variable there, read after the z update, so x_old is recovered from the new z.
       On JAX (immutable arrays) the uniform case matches.
    3. It has no train/eval swap: the variables always hold y.
    """

    def run_keras(**settings):
        variables = [keras.Variable(W0), keras.Variable(B0)]
        opt = keras.optimizers.ScheduleFreeAdamW(**settings)
        step = compiled_step(opt, variables)
        for i in range(200):
            step(X[i], Y[i])
        return [numpy(v) for v in variables]

    def departure(ours, theirs):
        return max(np.max(np.abs(a - b) / np.abs(b)) for a, b in zip(ours, theirs, strict=True))

    uniform = {"lr": 0.0025, "betas": (0.9, 0.99552), "warmup_steps": 20}
    ref_y, _ = run_reference(
        schedulefree.AdamWScheduleFreeReference, {**uniform, "weight_lr_power": 0.0}
    )
    keras_y = run_keras(learning_rate=0.0025, beta_2=0.99552, warmup_steps=20)
    if keras.backend.backend() == "tensorflow":
        assert departure(keras_y, ref_y) > 1e-3
    else:
        assert departure(keras_y, ref_y) < 1e-4  # x recovered by dividing by beta_1

    ref_y, _ = run_reference(schedulefree.AdamWScheduleFreeReference, torch_settings(ALGOPERF))
    keras_y = run_keras(learning_rate=0.0025, beta_2=0.99552, warmup_steps=20, weight_decay=0.0812)
    assert departure(keras_y, ref_y) > 1e-3


@pytest.mark.slow
def test_averaged_weights_callback_saves_and_predicts_with_x(tmp_path):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.set_weights([W0, B0])
    opt = hs.StepOptimizer(hs.rules.ScheduleFreeSGDRule(), learning_rate=0.1)
    model.compile(optimizer=opt, loss="mse")
    data = (X[:4].reshape(-1, 4), Y[:4].reshape(-1, 3))
    averaged = hs.callbacks.AveragedWeights(opt, at_end="training")
    path = str(tmp_path / "x.weights.h5")
    checkpoint = keras.callbacks.ModelCheckpoint(path, save_weights_only=True)
    model.fit(*data, batch_size=8, epochs=2, verbose=0, callbacks=[averaged, checkpoint])
    y = [v.numpy() for v in model.trainable_variables]
    with hs.averaged_weights(opt):
        x = [v.numpy() for v in model.trainable_variables]
        expected = model.predict(data[0], verbose=0)
    assert not np.allclose(x[0], y[0])
    np.testing.assert_array_equal(model.predict(data[0], verbose=0, callbacks=[averaged]), expected)
    for a, b in zip(y, model.trainable_variables, strict=True):
        np.testing.assert_array_equal(a, b.numpy())  # predict put y back
    saved = keras.models.clone_model(model)
    saved.load_weights(path)
    for a, b in zip(x, saved.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.slow  # 200 eager updates each, in the JAX and torch passes
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_schedule_free_adamw_matches_the_reference_on_other_backends(backend):
    for memory_efficient in (False, True):
        test_schedule_free_adamw_matches_the_reference_with_algoperf_settings(memory_efficient)
