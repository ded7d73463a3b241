"""Three keras-io examples that compute total_steps by hand, ported to ``total``: the hand
figure against the steps fit runs (counted), and the port's values against the schedule
written by hand with the number of steps fit ran."""

from __future__ import annotations

import numpy as np
import pytest

import hyperstep as hs
from hyperstep.schedules import bind_total

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")
NAMES = ["masked_image_modeling", "vit_small_ds", "patch_convnet"]


def _port(module, name):
    return next(p for p in module.KERAS_IO if p.name == name)


@pytest.mark.parametrize("name", NAMES)
def test_the_port_trains_in_the_length_fit_ran_and_the_hand_figure_misses_it(
    keras_io_total_steps, name
) -> None:
    module = keras_io_total_steps
    port = module.shrunk(_port(module, name))
    found = module.run(port)
    assert found.total == found.ran == module.keras_steps(port)
    assert found.hand != found.ran  # the keras-io figure is not the run's length
    by_hand = bind_total(hs.parse(module.schedule(port)), found.ran)  # written with the number
    expected = np.array([np.float32(by_hand(s)) for s in range(found.ran)])
    np.testing.assert_array_equal(found.rates.view(np.uint32), expected.view(np.uint32))
    old = module.warmup_cosine(port, found.hand, np.arange(found.ran, dtype=np.float64))
    if found.hand < found.ran:  # keras-io's schedule is 0 for the steps past its figure
        assert (old[found.hand + 1 :] == 0).all() and (found.rates[found.hand + 1 :] > 0).all()
    else:  # it never reaches its end
        assert old[-1] > 0.05 * port.learning_rate


@pytest.mark.parametrize("name", NAMES)
def test_keras_counts_the_batches_of_the_full_size_example_as_the_note_says(
    keras_io_total_steps, name
) -> None:
    # one epoch of the keras-io sizes, counted: fit's steps per epoch, times its epochs
    import keras

    module = keras_io_total_steps
    port = _port(module, name)
    counted = []
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    rows = np.zeros((port.rows, 1), np.float32)
    model.fit(
        rows,
        rows,
        batch_size=port.batch_size,
        epochs=1,
        validation_split=port.validation_split,
        verbose=0,
        callbacks=[
            keras.callbacks.LambdaCallback(
                on_train_batch_begin=lambda batch, logs: counted.append(batch)
            )
        ],
    )
    assert len(counted) * port.epochs == module.keras_steps(port)
    expected = {"masked_image_modeling": (15625, 15700), "vit_small_ds": (9765, 8800)}
    expected["patch_convnet"] = (15625, 15650)
    assert (module.hand_total(port), module.keras_steps(port)) == expected[name]
