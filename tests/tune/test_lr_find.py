"""``hs.find_lr``: the ramp, the state restored bitwise however the test ends, one trace,
groups at their ratio, the data ``fit`` accepts, the progress bar and the errors; and its
units: ``plan`` for each kind of data, ``setter`` writing a learning rate where the train
step reads it, and ``Snapshot`` putting back every variable."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterator
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs
from hyperstep.errors import InvalidArgumentError, InvalidTypeError
from hyperstep.tune.finding import ramp
from hyperstep.tune.lr_find import Snapshot, plan, setter

SAMPLES, BATCH = 100, 16  # 6 whole batches an epoch (the last 4 samples are cut)


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(SAMPLES, 6)).astype("float32")
    y = (x @ rng.normal(size=(6, 1)) > 0).astype("float32")
    return x, y


class Counting(keras.Sequential):
    """Counts how often the train step is traced (its Python runs once per trace)."""

    traces = 0

    def train_step(self, data: Any) -> Any:
        Counting.traces += 1
        return super().train_step(data)


def _model(optimizer: Any) -> keras.Model:
    model = Counting(
        [
            keras.Input((6,)),
            keras.layers.Dense(8, activation="relu", name="body"),
            keras.layers.BatchNormalization(name="norm"),
            keras.layers.Dropout(0.2, seed=1),
            keras.layers.Dense(1, name="head"),
        ]
    )
    model.compile(optimizer=optimizer, loss=keras.losses.BinaryCrossentropy(from_logits=True))
    return model


OPTIMIZERS: dict[str, Callable[[], Any]] = {
    "keras": lambda: keras.optimizers.Adam(learning_rate=1e-3),
    "scheduled": lambda: hs.scheduled(
        keras.optimizers.AdamW(),
        learning_rate="1e-3 * 0.5 ** (step / 10)",
        weight_decay=0.01,
        groups=[hs.Group("head", match="*/head/*", learning_rate=3e-3)],
    ),
    "step": lambda: hs.StepOptimizer(
        "adam",
        learning_rate=hs.schedules.cosine(2e-3, steps=50),
        groups=[hs.Group("head", match="*/head/*", learning_rate=4e-3)],
    ),
}


def _state(model: keras.Model) -> dict[str, np.ndarray]:
    """Every variable find_lr may touch, by an id-qualified path, as NumPy copies."""
    optimizer = model.optimizer
    variables = [*model.variables, *optimizer.variables, *model.metrics_variables]
    for hyperparameter in getattr(optimizer, "hyperparameters", {}).values():
        variables.extend(hyperparameter.variables)
    return {f"{v.path}#{id(v)}": np.array(v.numpy(), copy=True) for v in variables}


def _assert_bitwise(before: dict[str, np.ndarray], after: dict[str, np.ndarray]) -> None:
    assert before.keys() == after.keys()
    changed = [k for k in before if before[k].tobytes() != after[k].tobytes()]
    assert not changed, f"not restored: {changed}"


def _trained(kind: str) -> tuple[keras.Model, np.ndarray, np.ndarray]:
    """A model trained one epoch (slots, iterations, clock and statistics not at zero), with
    a scale and an override set on its hyperparameters."""
    x, y = _data()
    model = _model(OPTIMIZERS[kind]())
    model.fit(x[:96], y[:96], batch_size=BATCH, epochs=1, verbose=0, shuffle=False)
    found = getattr(model.optimizer, "hyperparameters", {})
    if found:
        found["head/learning_rate"].scale.assign(0.5)
        found["beta_2"].set(0.995)
    return model, x, y


class Interrupt(keras.callbacks.Callback):
    def __init__(self, at: int, error: BaseException) -> None:
        super().__init__()
        self.at, self.error = at, error

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if batch == self.at:
            raise self.error


ENDINGS = ["completed", "early-stopped", "exception", "ctrl-c"]
# every ending with every optimizer; the fast suite takes one optimizer per ending
CASES = [
    pytest.param(kind, ending, marks=() if (i - j) % len(OPTIMIZERS) == 0 else pytest.mark.slow)
    for i, ending in enumerate(ENDINGS)
    for j, kind in enumerate(OPTIMIZERS)
]


@pytest.mark.parametrize(("kind", "ending"), CASES)
def test_state_is_restored_bitwise_and_the_step_traced_once(kind: str, ending: str) -> None:
    model, x, y = _trained(kind)
    before, traces = _state(model), Counting.traces
    schedules = {
        k: hp.schedule for k, hp in getattr(model.optimizer, "hyperparameters", {}).items()
    }
    kwargs: dict[str, Any] = {"steps": 12, "min_lr": 1e-4, "max_lr": 1e-1, "verbose": 0}
    if ending == "early-stopped":
        kwargs.update(max_lr=1e4, steps=40)
    error: BaseException | None = {
        "exception": RuntimeError("boom"),
        "ctrl-c": KeyboardInterrupt(),
    }.get(ending)
    if error is None:
        finding = hs.find_lr(model, x, y, batch_size=BATCH, **kwargs)
        assert finding.stopped_early == (ending == "early-stopped")
        assert len(finding.learning_rates) < 40 if ending == "early-stopped" else 12
    else:
        with pytest.raises(type(error)):
            hs.find_lr(model, x, y, batch_size=BATCH, callbacks=[Interrupt(4, error)], **kwargs)
    _assert_bitwise(before, _state(model))
    assert Counting.traces == traces  # the compiled step was reused: no trace at all
    after = {k: hp.schedule for k, hp in getattr(model.optimizer, "hyperparameters", {}).items()}
    assert after == schedules and all(after[k] is schedules[k] for k in after)
    assert not model.stop_training


def test_a_fresh_model_is_traced_once_and_then_trains_as_if_never_tested() -> None:
    x, y = _data()
    keras.utils.set_random_seed(3)
    tested = _model(OPTIMIZERS["scheduled"]())
    keras.utils.set_random_seed(3)
    twin = _model(OPTIMIZERS["scheduled"]())
    start = Counting.traces
    finding = hs.find_lr(tested, x, y, batch_size=BATCH, steps=9, verbose=0)  # 2 epochs
    assert len(finding.learning_rates) == 9
    assert Counting.traces - start == 1  # across epochs and 9 learning rates
    tested.fit(x[:96], y[:96], batch_size=BATCH, epochs=2, verbose=0, shuffle=False)
    assert Counting.traces - start == 1  # and fit reuses the traced step
    twin.fit(x[:96], y[:96], batch_size=BATCH, epochs=2, verbose=0, shuffle=False)
    for a, b in zip(tested.variables, twin.variables, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    assert int(tested.optimizer.clock.step.numpy()) == 12 == int(twin.optimizer.clock.step.numpy())


class Seen(keras.callbacks.Callback):
    """Reads, before each step (after find_lr's callback set them), the values trained with."""

    def __init__(self, read: Callable[[], dict[str, float]]) -> None:
        super().__init__()
        self.read, self.seen = read, []

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.seen.append(self.read())


def test_a_keras_optimizer_trains_step_k_at_the_kth_rate() -> None:
    model, x, y = _trained("keras")
    for mode in ("exponential", "linear"):
        seen = Seen(lambda: {"lr": float(model.optimizer.learning_rate.numpy())})
        finding = hs.find_lr(
            model, x, y, batch_size=BATCH, steps=15, mode=mode, callbacks=[seen], verbose=0
        )
        line = np.linspace(1e-8, 1.0, 15)
        expected = np.geomspace(1e-8, 1.0, 15) if mode == "exponential" else line
        np.testing.assert_array_equal(finding.learning_rates, ramp(1e-8, 1.0, 15, mode))
        np.testing.assert_allclose(finding.learning_rates, expected, rtol=1e-13)
        np.testing.assert_array_equal([s["lr"] for s in seen.seen], expected.astype("float32"))


@pytest.mark.parametrize("kind", ["scheduled", "step"])
def test_each_group_keeps_its_ratio_to_the_main_learning_rate(kind: str) -> None:
    model, x, y = _trained(kind)
    found = model.optimizer.hyperparameters
    main, head = found["learning_rate"], found["head/learning_rate"]
    ratio = float(head.value.numpy()) / float(main.value.numpy())
    seen = Seen(lambda: {"main": float(main.value.numpy()), "head": float(head.value.numpy())})
    finding = hs.find_lr(model, x, y, batch_size=BATCH, steps=10, callbacks=[seen], verbose=0)
    main_seen = np.array([s["main"] for s in seen.seen])
    head_seen = np.array([s["head"] for s in seen.seen])
    np.testing.assert_array_equal(main_seen, finding.learning_rates.astype("float32"))
    np.testing.assert_array_equal(head_seen, (finding.learning_rates * ratio).astype("float32"))
    assert not bool(main.is_set) and bool(found["beta_2"].is_set)  # overrides as before


def test_a_free_hyperparameter_can_be_ramped() -> None:
    x, y = _data()
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.01)
    model = _model(optimizer)
    momentum = optimizer.hyperparameters["momentum"]
    seen = Seen(lambda: {"momentum": float(momentum.value.numpy())})
    hs.find_lr(
        model, x, y, min_lr=0.5, max_lr=0.9, steps=5, mode="linear",
        hyperparameter="momentum", callbacks=[seen], verbose=0,
    )  # fmt: skip
    np.testing.assert_allclose([s["momentum"] for s in seen.seen], [0.5, 0.6, 0.7, 0.8, 0.9], 1e-7)
    assert float(momentum.value.numpy()) == 0.0


def test_tf_data_repeats_and_a_generator_ends_the_test() -> None:
    x, y = _data()
    model = _model("sgd")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(BATCH, drop_remainder=True)
    assert len(hs.find_lr(model, dataset, steps=15, verbose=0).learning_rates) == 15

    def batches() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for i in range(4):
            yield x[i * BATCH : (i + 1) * BATCH], y[i * BATCH : (i + 1) * BATCH]

    finding = hs.find_lr(model, batches(), steps=15, verbose=0)
    assert len(finding.learning_rates) == 4 and not finding.stopped_early
    np.testing.assert_array_equal(finding.learning_rates, ramp(1e-8, 1.0, 15)[:4])


def test_raw_losses_are_each_batch_loss_and_losses_their_corrected_average() -> None:
    x, y = _data()
    model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss=keras.losses.BinaryCrossentropy(from_logits=True))
    # one batch at learning rates ~1e-8: each step's loss is the loss evaluate gives
    finding = hs.find_lr(
        model, x[:BATCH], y[:BATCH], steps=6, min_lr=1e-9, max_lr=1e-8, smoothing=0.9,
        verbose=0,
    )  # fmt: skip
    expected_raw = [model.evaluate(x[:BATCH], y[:BATCH], verbose=0)] * 6
    np.testing.assert_allclose(finding.raw_losses, expected_raw, rtol=1e-5)
    average, expected = 0.0, []
    for k, loss in enumerate(finding.raw_losses):
        average = 0.9 * average + 0.1 * loss
        expected.append(average / (1 - 0.9 ** (k + 1)))
    np.testing.assert_allclose(finding.losses, expected, rtol=1e-15)


def test_progress_bar_as_fit_shows(capsys: pytest.CaptureFixture[str]) -> None:
    x, y = _data()
    hs.find_lr(_model("sgd"), x, y, steps=5, verbose=1)
    out = capsys.readouterr().out
    assert "5/5" in out and "learning_rate" in out and "loss" in out


def test_plot_marks_every_rule_and_the_warning_and_to_dict_is_json(tmp_path: Any) -> None:
    lrs = np.geomspace(1e-5, 1.0, 60)
    losses = 2 - np.tanh(np.log10(lrs) + 2.5)
    losses[-3:] = [5.0, np.inf, np.nan]
    finding = hs.LRFinding(lrs, losses, losses, steps=60, stopped_early=True)
    figure = finding.plot(str(tmp_path / "lr.png"))
    assert (tmp_path / "lr.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    labels = [t.get_text() for t in figure.axes[0].get_legend().get_texts()]
    assert f"suggestion: {finding.suggestion():.3g}" in labels
    assert f"steepest: {finding.steepest():.3g}" in labels
    assert f"valley: {finding.valley():.3g}" in labels
    assert finding.warning is None and len(figure.axes[0].texts) == 0
    data = json.loads(json.dumps(finding.to_dict(), allow_nan=False))
    assert data["losses"][-2:] == [None, None] and data["suggestion"] == finding.suggestion()
    flat = np.random.default_rng(0).normal(2.0, 0.1, 60)
    noisy = hs.LRFinding(lrs, flat, flat, steps=60)
    assert noisy.warning is not None
    shown = " ".join(noisy.plot().axes[0].texts[0].get_text().split())
    assert shown == noisy.warning


def test_errors_name_the_argument_and_the_value() -> None:
    x, y = _data()
    model = _model("sgd")
    cases: list[tuple[dict[str, Any], str]] = [
        ({"min_lr": 0.0}, r"min_lr=0\.0"),
        ({"max_lr": 1e-9}, r"larger than min_lr=1e-08\. Received: max_lr=1e-09"),
        ({"steps": 1}, r"Received: steps=1"),
        ({"steps": 2.5}, r"Received: steps=2\.5"),
        ({"mode": "log"}, r"Received: mode='log'"),
        ({"smoothing": 1.0}, r"Received: smoothing=1\.0"),
        ({"stop_factor": -1}, r"Received: stop_factor=-1"),
        ({"verbose": 3}, r"Received: verbose=3"),
        ({"hyperparameter": "beta_1"}, r"plain SGD.*Received: hyperparameter='beta_1'"),
    ]
    for kwargs, message in cases:
        with pytest.raises((ValueError, TypeError), match=message):
            hs.find_lr(model, x, y, **kwargs)
    with pytest.raises(ValueError, match="must be compiled"):
        hs.find_lr(keras.Sequential([keras.Input((6,)), keras.layers.Dense(1)]), x, y)
    decaying = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    with pytest.raises(ValueError, match="Received: learning_rate=ExponentialDecay"):
        hs.find_lr(_model(keras.optimizers.SGD(decaying)), x, y)
    scheduled = hs.scheduled(
        keras.optimizers.SGD(),
        learning_rate="0.1 * min(step / 10, 1)",  # 0 at step 0: no ratio to keep
        groups=[hs.Group("head", match="*/head/*", learning_rate=0.5)],
    )
    with pytest.raises(ValueError, match=r"Received: head/learning_rate=0\.5, learning_rate=0\.0"):
        hs.find_lr(_model(scheduled), x, y)
    with pytest.raises(ValueError, match=r"Valid: \[.*'momentum'.*Received: hyperparameter='lr'"):
        hs.find_lr(_model(hs.scheduled(keras.optimizers.SGD())), x, y, hyperparameter="lr")
    assert math.isfinite(hs.find_lr(model, x, y, steps=3, verbose=0).raw_losses[0])

    class NoLoss(keras.Sequential):
        def train_step(self, data: Any) -> Any:
            super().train_step(data)
            return {"other": 1.0}

    silent = NoLoss([keras.Input((6,)), keras.layers.Dense(1)])
    silent.compile(optimizer="sgd", loss="mse")
    before = [w.copy() for w in silent.get_weights()]
    with pytest.raises(ValueError, match=r"Received: logs with keys \['other'\]"):
        hs.find_lr(silent, x, y, steps=3, verbose=0)
    assert all(np.array_equal(a, b) for a, b in zip(before, silent.get_weights(), strict=True))


def test_the_range_test_keeps_the_run_s_length() -> None:
    x, y = _data()
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate="cosine(0.1, steps=total)")
    model = _model(optimizer)
    model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0)  # binds total: 2 x 7 batches
    finding = hs.find_lr(model, x, y, batch_size=BATCH, steps=20, verbose=0)  # a 4-epoch fit
    assert len(finding.learning_rates) == 20
    assert optimizer.clock.total == 14 and not optimizer.clock.total_given
    with pytest.raises(ValueError, match=r"runs a length of 21 steps.*total` is 14"):
        model.fit(x, y, batch_size=BATCH, epochs=3, verbose=0)  # still the run's, not the test's


def test_a_schedule_reading_total_reads_the_run_s_length_during_the_range_test() -> None:
    x, y = _data()
    optimizer = hs.scheduled(
        keras.optimizers.SGD(), learning_rate=0.1, momentum="0.5 + 0.4 * progress"
    )
    model = _model(optimizer)
    model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0)  # binds total: 14
    momentum, clock = optimizer.hyperparameters["momentum"], optimizer.clock

    class Seen(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.found: list[tuple[int, np.float32]] = []

        def on_train_batch_begin(self, batch, logs=None) -> None:
            step = int(keras.ops.convert_to_numpy(clock.step))
            self.found.append((step, np.float32(keras.ops.convert_to_numpy(momentum.value))))

    seen = Seen()
    hs.find_lr(model, x, y, batch_size=BATCH, steps=20, verbose=0, callbacks=[seen])
    by_hand = hs.parse("0.5 + 0.4 * (step / 14)")  # the run's length, not the test's 28
    assert len(seen.found) == 20
    for step, value in seen.found:
        assert value.view(np.uint32) == np.float32(by_hand(step)).view(np.uint32), step


def test_arrays_are_drawn_as_whole_batch_permutations_from_numpys_generator() -> None:
    x = np.arange(10, dtype="float32")[:, None]
    y = np.arange(10, dtype="float32") * 2
    found = plan(x, y, batch_size=4, batches=5)  # 8 samples a pass, 20 needed: 3 passes
    assert found.fit == {"batch_size": 4, "epochs": 1, "shuffle": False}
    np.testing.assert_array_equal(found.first[0], x[:4])
    np.random.seed(3)
    xs, ys = found.data()
    np.random.seed(3)
    order = np.concatenate([np.random.permutation(10)[:8] for _ in range(3)])[:20]
    np.testing.assert_array_equal(xs[:, 0], order.astype("float32"))
    np.testing.assert_array_equal(ys, 2 * order.astype("float32"))
    for start in range(0, 16, 8):  # each pass holds distinct samples
        assert len(set(order[start : start + 8])) == 8


def test_fewer_samples_than_a_batch_give_one_batch_of_all() -> None:
    found = plan(np.ones((3, 2)), np.zeros(3), batch_size=32, batches=4)
    assert found.fit["batch_size"] == 3
    xs, _ = found.data()
    assert xs.shape == (12, 2)


def test_arrays_of_different_lengths_are_refused_with_their_sizes() -> None:
    with pytest.raises(InvalidArgumentError, match=r"Received: sizes \[5, 4\]"):
        plan(np.ones((5, 2)), np.ones(4), batch_size=2, batches=3)


def test_a_dataset_is_repeated_for_one_epoch_of_the_batches() -> None:
    import tensorflow as tf

    data = tf.data.Dataset.from_tensor_slices((np.arange(6.0), np.arange(6.0))).batch(4)
    found = plan(data, None, batch_size=4, batches=5)
    assert found.fit == {"steps_per_epoch": 5, "epochs": 1, "shuffle": False}
    assert np.asarray(found.first[0]).tolist() == [0.0, 1.0, 2.0, 3.0]
    x, y = found.data()
    assert y is None and len(list(x.take(5))) == 5  # repeated past its 2 batches


def test_a_generator_is_not_repeated_and_keeps_its_first_element() -> None:
    batches = ((np.full((2, 1), float(i)), np.zeros(2)) for i in range(3))
    found = plan(batches, None, batch_size=2, batches=10)
    assert found.one_pass and found.fit == {"epochs": 1, "shuffle": False}
    assert found.first[0][0, 0] == 0.0
    x, _ = found.data()
    assert [b[0][0, 0] for b in x] == [0.0, 1.0, 2.0]  # the first one too, once


def test_a_py_dataset_runs_one_fit_epoch_per_pass() -> None:
    class Three(keras.utils.PyDataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return np.full((2, 1), float(i)), np.zeros(2)

    data = Three()
    found = plan(data, None, batch_size=2, batches=7)
    assert found.fit == {"epochs": 7, "shuffle": False}
    assert found.first[0][0, 0] == 0.0 and found.data() == (data, None)


def test_tensors_are_cut_to_whole_batches_and_shuffled_by_fit() -> None:
    import tensorflow as tf

    x, y = tf.range(10.0)[:, None], tf.range(10.0)
    found = plan(x, y, batch_size=4, batches=6)
    assert found.fit == {"epochs": 6, "shuffle": True, "batch_size": 4}
    xs, ys = found.data()
    assert xs.shape[0] == 8 and np.asarray(ys).tolist() == list(range(8))
    assert np.asarray(found.first[1]).tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.backend("torch")  # torch is there already (importing it in TensorFlow's: ~5 s)
def test_a_torch_data_loader_runs_one_fit_epoch_per_pass() -> None:
    import torch

    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.arange(6.0)[:, None], torch.zeros(6)), batch_size=4
    )
    found = plan(loader, None, batch_size=4, batches=3)
    assert found.fit == {"epochs": 3, "shuffle": False} and found.data() == (loader, None)
    assert found.first[0][:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]


def value(x) -> float:
    return float(keras.ops.convert_to_numpy(x))


class Multi(keras.optimizers.Optimizer):
    """A MultiOptimizer's shape: sub-optimizers in ``optimizers``."""

    def __init__(self, optimizers):
        super().__init__(learning_rate=1.0)
        self.optimizers = optimizers


def test_a_plain_optimizer_gets_its_learning_rate_variable_set() -> None:
    sgd = keras.optimizers.SGD(0.05)
    found = setter(sgd, "learning_rate")
    found(0.3)
    assert value(sgd.learning_rate) == pytest.approx(0.3)


def test_through_a_loss_scale_wrapper_the_inner_optimizer_is_set() -> None:
    inner = keras.optimizers.Adam(1e-3)
    found = setter(keras.optimizers.LossScaleOptimizer(inner), "learning_rate")
    found(0.25)
    assert value(inner.learning_rate) == pytest.approx(0.25)


def test_sub_optimizers_keep_their_ratio_to_the_first() -> None:
    first, second = keras.optimizers.SGD(0.1), keras.optimizers.SGD(0.4)
    found = setter(Multi([first, second]), "learning_rate")
    found(0.5)
    assert value(first.learning_rate) == pytest.approx(0.5)
    assert value(second.learning_rate) == pytest.approx(0.5 * 0.4 / 0.1)
    with pytest.raises(InvalidArgumentError, match=r"which is 0\.0\. Set a nonzero"):
        setter(Multi([keras.optimizers.SGD(0.0), keras.optimizers.SGD(0.4)]), "learning_rate")


def test_a_hyperstep_optimizer_overrides_the_main_value_and_scales_each_group() -> None:
    optimizer = hs.scheduled(
        keras.optimizers.SGD(),
        learning_rate=0.2,
        groups=[hs.Group("head", match="*head*", learning_rate=0.05)],
    )
    found = setter(optimizer, "learning_rate")
    found(0.8)
    hyperparameters = optimizer.hyperparameters
    assert value(hyperparameters["learning_rate"].value) == pytest.approx(0.8)
    assert value(hyperparameters["head/learning_rate"].value) == pytest.approx(0.8 * 0.05 / 0.2)


def test_a_hyperparameter_object_is_set_directly() -> None:
    optimizer = hs.scheduled(keras.optimizers.SGD(), momentum=0.9)
    momentum = optimizer.hyperparameters["momentum"]
    found = setter(optimizer, momentum)
    found(0.5)
    assert value(momentum.value) == pytest.approx(0.5)


def test_bad_hyperparameters_are_refused_naming_them() -> None:
    with pytest.raises(InvalidTypeError, match=r"Received: hyperparameter=3"):
        setter(keras.optimizers.SGD(), 3)
    with pytest.raises(InvalidArgumentError, match=r"plain Adam.*hyperparameter='beta_1'"):
        setter(keras.optimizers.Adam(), "beta_1")
    with pytest.raises(InvalidArgumentError, match=r"Valid: \[.*'learning_rate'.*='lr'"):
        setter(hs.scheduled(keras.optimizers.SGD()), "lr")
    decaying = keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5)
    with pytest.raises(InvalidArgumentError, match=r"Received: learning_rate=ExponentialDecay"):
        setter(keras.optimizers.SGD(decaying), "learning_rate")


def _scheduled_model() -> keras.Model:
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2), keras.layers.Dense(1)])
    optimizer = hs.scheduled(keras.optimizers.Adam(), learning_rate="1e-2 * (1 + step)")
    model.compile(optimizer=optimizer, loss="mse", metrics=["mae"], run_eagerly=True)
    return model


def _values(variables) -> list[np.ndarray]:
    return [np.array(keras.ops.convert_to_numpy(v), copy=True) for v in variables]


def test_restore_puts_back_what_training_changed_bit_for_bit() -> None:
    model = _scheduled_model()
    x, y = np.ones((4, 3), "float32"), np.zeros((4, 1), "float32")
    model.train_on_batch(x, y)  # builds the optimizer and the metrics
    found = setter(model.optimizer, "learning_rate")
    snapshot = Snapshot(model, "learning_rate")
    variables = snapshot.variables()
    clock = model.optimizer.clock
    assert any(v is clock.step for v in variables)
    assert len({id(v) for v in variables}) == len(variables)  # each once
    before = _values(variables)
    found(0.5)
    for _ in range(3):
        model.train_on_batch(x, y)
    assert not all(np.array_equal(a, b) for a, b in zip(before, _values(variables), strict=True))
    snapshot.restore()
    for a, b in zip(before, _values(variables), strict=True):
        np.testing.assert_array_equal(a, b)
    assert int(keras.ops.convert_to_numpy(clock.step)) == 1


def test_variables_made_after_the_snapshot_are_copied_when_asked() -> None:
    model = _scheduled_model()
    model.build((None, 3))
    snapshot = Snapshot(model, "learning_rate")
    copied = len(snapshot.saved)
    x, y = np.ones((4, 3), "float32"), np.zeros((4, 1), "float32")
    model.optimizer.build(model.trainable_variables)
    snapshot.copy_variables()
    assert len(snapshot.saved) > copied
    fresh = _values(model.optimizer.variables)
    model.train_on_batch(x, y)
    snapshot.restore()
    for a, b in zip(fresh, _values(model.optimizer.variables), strict=True):
        np.testing.assert_array_equal(a, b)


def test_restore_puts_back_the_random_state_and_the_clock_settings() -> None:
    model = _scheduled_model()
    model.build((None, 3))
    snapshot = Snapshot(model, "learning_rate")
    expected = (random.random(), np.random.rand(), keras.random.uniform(()).numpy())
    clock = model.optimizer.clock
    clock.steps_per_epoch, clock.follows_fit = 7, True
    snapshot.restore()
    assert clock.steps_per_epoch is None and clock.follows_fit is False
    assert (random.random(), np.random.rand(), keras.random.uniform(()).numpy()) == expected


def test_a_hyperparameter_of_no_optimizer_is_put_back_with_its_clock() -> None:
    model = _scheduled_model()
    model.build((None, 3))
    clock = hs.Clock()
    temperature = hs.Hyperparameter(0.5, clock=clock)
    snapshot = Snapshot(model, temperature)
    assert any(v is clock.step for v in snapshot.variables())
    temperature.set(2.0)
    _ = clock.step.assign(3)
    clock.steps_per_epoch = 9
    snapshot.restore()
    assert value(temperature.value) == 0.5 and value(clock.step) == 0
    assert clock.steps_per_epoch is None
