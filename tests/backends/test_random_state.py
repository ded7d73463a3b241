"""Units of hyperstep.backends.random_state: ``capture`` then ``restore`` gives every global
generator back its draws (Python, NumPy, Keras, TensorFlow in this pass)."""

from __future__ import annotations

import random

import keras
import numpy as np
import tensorflow as tf

from hyperstep.backends.random_state import RandomState, capture, restore


def _draws() -> tuple:
    return (
        random.random(),
        float(np.random.rand()),
        float(keras.random.uniform(())),  # the global SeedGenerator
        # a new shuffle's seed comes from the generator tf.random.set_seed starts
        tuple(tf.data.Dataset.range(20).shuffle(20).as_numpy_iterator()),
    )


def test_restore_replays_every_generator() -> None:
    keras.utils.set_random_seed(7)
    state = capture()
    assert isinstance(state, RandomState)
    first = _draws()
    _draws()  # code in between draws more
    restore(state)
    assert _draws() == first


def test_restore_removes_a_keras_generator_made_after_capture() -> None:
    from keras.src.backend.common import global_state

    keras.utils.set_random_seed(1)
    global_state.set_global_attribute("global_seed_generator", None)
    state = capture()
    assert state.keras is None
    keras.random.uniform(())  # makes the global SeedGenerator
    assert global_state.get_global_attribute("global_seed_generator") is not None
    restore(state)
    assert global_state.get_global_attribute("global_seed_generator") is None


def test_restore_puts_back_the_global_tf_generator() -> None:
    generator = tf.random.get_global_generator()
    state = capture()
    expected = generator.uniform(()).numpy()
    generator.uniform(())
    restore(state)
    assert generator.uniform(()).numpy() == expected


def test_capture_copies_not_references() -> None:
    np.random.seed(3)
    state = capture()
    np.random.rand(5)
    again = capture()
    assert not np.array_equal(state.numpy[1], again.numpy[1])
