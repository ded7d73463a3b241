"""Units of hyperstep.demo.model: the demo's data split, epoch orders, batches, model,
schedules and its built optimizer (the whole demo run: tests/demo/test_train.py)."""

from __future__ import annotations

import math

import numpy as np

from hyperstep.demo.model import (
    BATCH_SIZE,
    FINAL_WEIGHT_DECAY,
    PEAK_LEARNING_RATE,
    TEMPERATURE_LEARNING_RATE,
    build_model,
    build_training,
    epoch_order,
    load_data,
    schedules,
    training_batches,
)


def test_load_data_splits_the_digits_80_20_by_seed() -> None:
    from sklearn.datasets import load_digits  # here: collecting the file imports no sklearn

    digits = load_digits()
    data = load_data(3)
    assert len(data.x_train) == int(0.8 * 1797) and len(data.x_val) == 1797 - int(0.8 * 1797)
    assert data.x_train.dtype == np.float32 and data.y_train.dtype == np.int64
    assert 0.0 <= data.x_train.min() and data.x_train.max() <= 1.0
    order = np.random.default_rng(3).permutation(1797)
    np.testing.assert_array_equal(data.x_val, (digits.data[order[1437:]] / 16).astype("float32"))
    np.testing.assert_array_equal(data.y_train, digits.target[order[:1437]])
    small = load_data(3, train_size=50)
    np.testing.assert_array_equal(small.x_train, data.x_train[:50])
    np.testing.assert_array_equal(small.x_val, data.x_val)
    assert not np.array_equal(load_data(4).y_val, data.y_val)


def test_epoch_order_depends_only_on_seed_and_epoch() -> None:
    first = epoch_order(0, 1, 100)
    assert sorted(first) == list(range(100))
    np.testing.assert_array_equal(first, epoch_order(0, 1, 100))
    np.testing.assert_array_equal(first, np.random.default_rng([0, 1]).permutation(100))
    assert not np.array_equal(first, epoch_order(0, 2, 100))


def test_training_batches_resume_with_the_same_batches() -> None:
    data = load_data(0, train_size=70)
    batches = list(training_batches(data, 0, 1, 3).as_numpy_iterator())
    per_epoch = math.ceil(70 / BATCH_SIZE)
    assert len(batches) == 2 * per_epoch
    assert [len(x) for x, _ in batches[:per_epoch]] == [32, 32, 6]
    order = epoch_order(0, 2, 70)  # epoch 2 as an uninterrupted run sees it
    np.testing.assert_array_equal(
        np.concatenate([x for x, _ in batches[per_epoch:]]), data.x_train[order]
    )
    later = list(training_batches(data, 0, 2, 3).as_numpy_iterator())
    for (x, y), (x2, y2) in zip(later, batches[per_epoch:], strict=True):
        np.testing.assert_array_equal(x, x2)
        np.testing.assert_array_equal(y, y2)


def test_build_model_divides_the_logits_by_the_temperature() -> None:
    model = build_model()
    assert [layer.name for layer in model.layers] == [
        "hidden_1",
        "hidden_2",
        "logits",
        "temperature",
    ]
    assert model.count_params() == 64 * 128 + 128 + 128 * 64 + 64 + 64 * 10 + 10 + 1
    x = np.random.default_rng(0).random((4, 64)).astype("float32")
    logits = model.layers[2](model.layers[1](model.layers[0](x)))
    model.layers[3].temperature.assign(2.0)
    np.testing.assert_allclose(np.asarray(model(x)), np.asarray(logits) / 2, rtol=1e-6)


def test_schedules_closed_forms() -> None:
    found = schedules(10, 4)  # 40 steps, 10 of warmup
    lr, wd, t = found["learning_rate"], found["weight_decay"], found["temperature/learning_rate"]
    peak = PEAK_LEARNING_RATE

    def at(schedule, step):
        return float(schedule(float(step)))

    np.testing.assert_allclose(at(lr, 0), peak / 100, rtol=1e-5)
    np.testing.assert_allclose(at(lr, 10), peak, rtol=1e-5)
    np.testing.assert_allclose(at(lr, 40), peak / 100, rtol=1e-5)
    np.testing.assert_allclose(at(lr, 25), peak / 100 + (peak - peak / 100) / 2, rtol=1e-5)
    np.testing.assert_allclose(
        [at(wd, 0), at(wd, 20), at(wd, 40)],
        [0, FINAL_WEIGHT_DECAY / 2, FINAL_WEIGHT_DECAY],
        atol=1e-8,
    )
    np.testing.assert_allclose(
        [at(t, 0), at(t, 20), at(t, 40)],
        [TEMPERATURE_LEARNING_RATE, TEMPERATURE_LEARNING_RATE / 2, 0],
        atol=1e-8,
    )
    short = schedules(10, 1)["learning_rate"]  # warmup at most half the run
    np.testing.assert_allclose(at(short, 5), peak, rtol=1e-5)


def test_build_training_wires_the_groups_and_the_plateau() -> None:
    model, optimizer, plateau = build_training(5, 2, plateau_min_delta=0.5)
    assert model.optimizer is optimizer and optimizer.built
    assert optimizer.clock.steps_per_epoch == 5
    hps = optimizer.hyperparameters
    assert plateau.min_delta == 0.5
    np.testing.assert_allclose(
        float(hps["learning_rate"].value), PEAK_LEARNING_RATE / 100, rtol=1e-5
    )
    temperature = [k for k in hps if k.startswith("temperature") and "weight_decay" in k]
    assert temperature and float(hps[temperature[0]].value) == 0.0
