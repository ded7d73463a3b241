"""The learning-rate range test on the demo's digits (scikit-learn's 8x8 images).

    hyperstep lr-find examples/lr_find_digits.py:digits --min-lr 1e-5 --out docs/lr_find.png

``digits()`` returns ``(model, (x, y))``, the shape ``hyperstep lr-find`` and ``hyperstep
doctor`` expect: the demo's MLP, compiled with AdamW whose learning rate is a cosine of
unit peak over ``EPOCHS`` epochs. After the test the model is untouched, so training at
the suggestion is one assignment, with no recompile:

    finding = hs.find_lr(model, x, y, min_lr=1e-5)
    model.optimizer.hyperparameters["learning_rate"].scale.assign(finding.suggestion())
    model.fit(x, y, epochs=EPOCHS)

The demo's model and data are imported here only (they may move within hyperstep).
"""

from __future__ import annotations

from typing import Any

from hyperstep.demo.model import BATCH_SIZE, PEAK_LEARNING_RATE, build_model, load_data

__all__ = ["BATCH_SIZE", "EPOCHS", "PEAK_LEARNING_RATE", "digits", "load_data"]

#: epochs of the short run at the suggestion
EPOCHS = 3


def digits(seed: int = 0) -> tuple[Any, tuple[Any, Any]]:
    """The demo's digits model, compiled, and its training data ``(x, y)``."""
    import keras

    import hyperstep as hs

    data = load_data(seed)
    steps = -(-len(data.x_train) // BATCH_SIZE) * EPOCHS
    optimizer = hs.scheduled(
        keras.optimizers.AdamW(), learning_rate=hs.schedules.cosine(1.0, steps=steps)
    )
    model = build_model()
    model.compile(
        optimizer=optimizer,
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model, (data.x_train, data.y_train)
