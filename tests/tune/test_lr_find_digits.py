"""On the demo's digits: the suggestion is within 10x of the demo's peak learning rate, and
three epochs at the suggestion (a cosine of unit peak, scaled by it after the test, no
recompile) reach the demo's 95% validation accuracy."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import keras

import hyperstep as hs

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lr_find_digits.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lr_find_digits", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_suggestion_is_near_the_demo_peak_and_trains_the_digits_to_95_percent() -> None:
    example = _example()
    keras.utils.set_random_seed(0)
    model, (x, y) = example.digits()
    finding = hs.find_lr(model, x, y, min_lr=1e-5, max_lr=1.0, verbose=0)
    suggestion = finding.suggestion()
    assert suggestion is not None
    peak = example.PEAK_LEARNING_RATE
    assert peak / 10 <= suggestion <= peak * 10, finding
    assert peak / 10 <= finding.valley() <= peak * 10, finding  # type: ignore[operator]
    assert int(model.optimizer.clock.step.numpy()) == 0  # restored: the cosine starts at 0
    model.optimizer.hyperparameters["learning_rate"].scale.assign(suggestion)
    data = example.load_data(0)
    history = model.fit(
        x, y, batch_size=example.BATCH_SIZE, epochs=example.EPOCHS,
        validation_data=(data.x_val, data.y_val), verbose=0,
    )  # fmt: skip
    assert history.history["val_accuracy"][-1] >= 0.95
