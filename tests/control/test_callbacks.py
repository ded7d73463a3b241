"""hs.callbacks: read_all and LogHyperparameters (fit logs, per-step CSV, TensorBoard)."""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf

import hyperstep as hs
from hyperstep.control.callbacks import FIELDS, LogHyperparameters
from hyperstep.control.reading import read_all
from hyperstep.errors import InvalidArgumentError, InvalidTypeError

SPE, BATCH = 4, 8


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(SPE * BATCH, 3)).astype("float32")
    return x, (x @ rng.normal(size=(3, 1))).astype("float32")


def fit(optimizer: Any, callbacks: list[Any], epochs: int, model: Any = None) -> Any:
    x, y = data()
    if model is None:
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile(optimizer=optimizer, loss="mse")
    history = model.fit(
        x, y, epochs=epochs, batch_size=BATCH, callbacks=callbacks, verbose=0, shuffle=False
    )
    return model, history


def adam() -> Any:
    return hs.scheduled(
        keras.optimizers.Adam(),
        clock=hs.Clock(steps_per_epoch=SPE),
        learning_rate=hs.schedules.constant(0.01) * 0.5 ** hs.parse("epoch"),
        beta_1="0.9 - 0.001 * step",
    )


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path) as f:
        return list(csv.DictReader(f))


def test_read_all_returns_every_value_by_name_in_one_call() -> None:
    clock = hs.Clock()
    lr = hs.Hyperparameter("0.1 * 0.5 ** (step / 10)", clock=clock, name="learning_rate")
    beta = hs.Hyperparameter(0.9, clock=clock, name="beta_1")
    for _ in range(10):
        clock.advance()
    expected = {"learning_rate": float(lr.value), "beta_1": float(beta.value)}
    assert read_all([lr, beta]) == expected
    assert read_all({"lr": lr}) == {"lr": expected["learning_rate"]}
    assert read_all(lr) == {"learning_rate": expected["learning_rate"]}
    np.testing.assert_allclose(expected["learning_rate"], 0.05, rtol=1e-6)


def test_read_all_accepts_a_scheduled_optimizer() -> None:
    optimizer = adam()
    values = read_all(optimizer)
    assert set(values) == set(optimizer.hyperparameters)
    np.testing.assert_allclose(values["beta_1"], 0.9, rtol=1e-6)


def test_fit_logs_history_and_csv_logger_see_every_hyperparameter(tmp_path: Path) -> None:
    optimizer = adam()
    log = LogHyperparameters(optimizer)
    keras_csv = keras.callbacks.CSVLogger(str(tmp_path / "keras.csv"))
    _, history = fit(optimizer, [log, keras_csv], epochs=3)
    # the value the next update uses, read at each epoch end (step = (epoch + 1) * SPE)
    steps = np.arange(1, 4) * SPE
    np.testing.assert_allclose(history.history["learning_rate"], 0.01 * 0.5 ** (steps // SPE))
    np.testing.assert_allclose(history.history["beta_1"], 0.9 - 0.001 * steps, rtol=1e-6)
    rows = read_rows(tmp_path / "keras.csv")
    # by default only what moves: the two schedules, not Adam's constant beta_2, epsilon, ...
    assert {"learning_rate", "beta_1"} <= set(rows[0])
    assert not {"beta_2", "epsilon", "ema_momentum"} & set(rows[0])
    assert [float(r["beta_1"]) for r in rows] == history.history["beta_1"]


def test_epoch_schedule_is_bound_from_fit_steps() -> None:
    optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.01)
    kl_weight = hs.Hyperparameter("0.5 ** epoch", clock=optimizer.clock, name="kl_weight")
    assert optimizer.clock.steps_per_epoch is None
    _, history = fit(optimizer, [LogHyperparameters([kl_weight])], epochs=2)
    assert optimizer.clock.steps_per_epoch == SPE
    np.testing.assert_allclose(history.history["kl_weight"], [0.5, 0.25])


def test_csv_has_one_row_per_step_with_value_schedule_scale_override(tmp_path: Path) -> None:
    optimizer = adam()
    lr = optimizer.hyperparameters["learning_rate"]
    lr.scale.assign(0.5)

    def override(epoch: int, logs: Any) -> None:
        lr.set(0.003) if epoch == 1 else lr.clear()

    log = LogHyperparameters(optimizer, csv_path=tmp_path / "hp.csv", fields=tuple(FIELDS))
    switch = keras.callbacks.LambdaCallback(on_epoch_begin=override)
    fit(optimizer, [switch, log], epochs=3)
    rows = read_rows(tmp_path / "hp.csv")
    steps = np.arange(3 * SPE)
    assert [int(r["step"]) for r in rows] == steps.tolist()
    assert [int(r["epoch"]) for r in rows] == (steps // SPE).tolist()
    schedule = np.float32(0.01) * np.float32(0.5) ** (steps // SPE)
    np.testing.assert_allclose([float(r["learning_rate/schedule"]) for r in rows], schedule)
    assert {r["learning_rate/scale"] for r in rows} == {"0.5"}
    overridden = steps // SPE == 1
    values = np.where(overridden, 0.003, 0.5 * schedule)
    np.testing.assert_allclose([float(r["learning_rate"]) for r in rows], values, rtol=1e-6)
    assert [r["learning_rate/override"] != "" for r in rows] == overridden.tolist()
    np.testing.assert_allclose([float(r["beta_1"]) for r in rows], 0.9 - 0.001 * steps, rtol=1e-6)


def test_csv_every_and_appending_across_fit_calls(tmp_path: Path) -> None:
    optimizer = adam()
    log = LogHyperparameters(optimizer, csv_path=tmp_path / "hp.csv", every=3)
    model, _ = fit(optimizer, [log], epochs=2)
    fit(optimizer, [log], epochs=1, model=model)
    lines = (tmp_path / "hp.csv").read_text().splitlines()
    assert sum(line.startswith("step,") for line in lines) == 1
    steps = [int(r["step"]) for r in read_rows(tmp_path / "hp.csv")]
    assert steps == [0, 3, 6, 8, 11]  # every 3 batches of each fit; the clock keeps counting


def test_append_resumes_a_file_without_a_second_header_and_keeps_its_columns(
    tmp_path: Path,
) -> None:
    optimizer = adam()
    model, _ = fit(optimizer, [LogHyperparameters(optimizer, csv_path=tmp_path / "hp.csv")], 1)
    # a resumed run's new callback: the file's header decides the columns, not `include`
    resumed = LogHyperparameters(
        optimizer, csv_path=tmp_path / "hp.csv", append=True, include="all"
    )
    fit(optimizer, [resumed], epochs=1, model=model)
    lines = (tmp_path / "hp.csv").read_text().splitlines()
    assert lines[0] == "step,epoch,learning_rate,beta_1"
    assert sum(line.startswith("step,") for line in lines) == 1
    assert all(line.count(",") == 3 for line in lines)
    assert [int(r["step"]) for r in read_rows(tmp_path / "hp.csv")] == list(range(2 * SPE))
    assert list(resumed.hyperparameters) == ["learning_rate", "beta_1"]


def test_tensorboard_event_files_hold_per_step_scalars(tmp_path: Path) -> None:
    optimizer = adam()
    fit(optimizer, [LogHyperparameters(optimizer, log_dir=tmp_path / "tb")], epochs=2)
    events = list((tmp_path / "tb").glob("events.out.tfevents.*"))
    assert events
    found: dict[str, dict[int, float]] = {}
    for event in tf.compat.v1.train.summary_iterator(str(events[0])):
        for value in event.summary.value:
            found.setdefault(value.tag, {})[event.step] = float(tf.make_ndarray(value.tensor))
    assert sorted(found["beta_1"]) == list(range(2 * SPE))
    np.testing.assert_allclose(
        [found["beta_1"][s] for s in range(2 * SPE)], 0.9 - 0.001 * np.arange(2 * SPE), rtol=1e-6
    )
    np.testing.assert_allclose(found["learning_rate"][SPE], 0.005, rtol=1e-6)
    assert found["total"] == {0: 2 * SPE}  # the run's length, once: epochs x steps per epoch


def test_shared_clock_in_a_custom_loop_records_rows(tmp_path: Path) -> None:
    clock = hs.Clock(steps_per_epoch=2)
    generator = hs.scheduled(keras.optimizers.SGD(), clock=clock, learning_rate="0.1 / (1 + step)")
    discriminator = hs.scheduled(
        keras.optimizers.SGD(), clock=clock, advance=False, learning_rate="0.2 / (1 + step)"
    )
    log = LogHyperparameters(
        {
            "g_lr": generator.hyperparameters["learning_rate"],
            "d_lr": discriminator.hyperparameters["learning_rate"],
        },
        csv_path=tmp_path / "gan.csv",
    )
    rows = []
    for _ in range(3):
        rows.append(log.record())
        clock.advance()
    log.close()
    assert [r["step"] for r in rows] == [0, 1, 2]
    np.testing.assert_allclose([r["d_lr"] / r["g_lr"] for r in rows], 2.0, rtol=1e-6)
    written = read_rows(tmp_path / "gan.csv")
    assert [r["epoch"] for r in written] == ["", "", ""]
    np.testing.assert_allclose([float(r["g_lr"]) for r in written], [0.1, 0.05, 0.1 / 3], rtol=1e-6)


@pytest.mark.parametrize(
    ("make", "kwargs", "error", "match"),
    [
        (lambda: [], {}, InvalidArgumentError, r"at least one.*Received: hyperparameters=\[\]"),
        (lambda: 0.1, {}, InvalidTypeError, r"Received: hyperparameters of type float"),
        (lambda: [0.1], {}, InvalidTypeError, r"Hyperparameter objects. Received: \?=0.1"),
        (
            lambda: [hs.Hyperparameter(1.0, name="a"), hs.Hyperparameter(2.0, name="a")],
            {},
            InvalidArgumentError,
            r"two hyperparameters named 'a'.*Received: names=\['a', 'a'\]",
        ),
        (lambda: adam(), {"every": 0}, InvalidArgumentError, r"Received: every=0"),
        (
            lambda: [hs.Hyperparameter(1.0, name="a"), hs.Hyperparameter(2.0, name="b")],
            {"csv_path": "x.csv"},
            InvalidArgumentError,
            r"one clock.*\['b'\]",
        ),
    ],
)
def test_invalid_arguments_are_rejected(make: Any, kwargs: Any, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        LogHyperparameters(make(), **kwargs)


def test_separate_clocks_are_fine_for_epoch_logs_only() -> None:
    a, b = hs.Hyperparameter(1.0, name="a"), hs.Hyperparameter(2.0, name="b")
    logs: dict[str, float] = {}
    LogHyperparameters([a, b]).on_epoch_end(0, logs)
    assert logs == {"a": 1.0, "b": 2.0}
    assert math.isnan(a.read()["override"])


def test_log_dir_without_tensorboard_installed_says_what_to_install(monkeypatch, tmp_path):
    """TensorFlow 2.21 does not install TensorBoard: say so at construction, not mid-fit."""
    import importlib.util

    from hyperstep.errors import BackendError

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "tensorboard" else find_spec(name, *args),
    )
    lr = hs.Hyperparameter(0.1, name="learning_rate")
    with pytest.raises(BackendError, match=r"pip install tensorboard.*Received: log_dir="):
        hs.callbacks.LogHyperparameters([lr], log_dir=tmp_path)
    hs.callbacks.LogHyperparameters([lr], csv_path=tmp_path / "hp.csv")  # CSV needs nothing


def test_defaults_log_what_moves_one_column_each_and_all_on_request(tmp_path: Path) -> None:
    optimizer = adam()
    optimizer.hyperparameters["epsilon"].set(1e-6)  # a change: logged although constant
    default = LogHyperparameters(optimizer, csv_path=tmp_path / "default.csv")
    every = LogHyperparameters(optimizer, csv_path=tmp_path / "all.csv", include="all")
    fit(optimizer, [default, every], epochs=1)
    header = (tmp_path / "default.csv").read_text().splitlines()[0].split(",")
    assert header == ["step", "epoch", "learning_rate", "beta_1", "epsilon"]
    header = (tmp_path / "all.csv").read_text().splitlines()[0].split(",")
    assert header == ["step", "epoch", *optimizer.hyperparameters]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"include": "some"}, "must be one of 'moving', 'all'. Received: include='some'"),
        ({"fields": ("scale",)}, "must start with 'value'"),
        ({"fields": ("value", "bogus")}, "must start with 'value'"),
    ],
)
def test_include_and_fields_are_checked(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(hs.errors.InvalidArgumentError, match=re.escape(message)):
        LogHyperparameters(adam(), **kwargs)
