"""Units of hyperstep.backends.doctor_tf, the doctor's TensorFlow half: what its raw variables are
(the contract every backend's half keeps: tests/backends/test_doctor.py; the whole
diagnosis: tests/doctor)."""

from __future__ import annotations

import keras

from hyperstep.backends import doctor_tf as backend


def test_raw_variables_are_tf_variables() -> None:
    import tensorflow as tf

    frozen = tf.Variable(1.0, trainable=False)
    assert backend.is_raw_variable(frozen) and not backend.raw_trainable(frozen)
    assert backend.raw_kind(frozen) == "tf.Variable"
    assert not backend.is_raw_variable(keras.Variable(1.0))
    assert isinstance(backend.underlying(keras.Variable(1.0)), tf.Variable)
