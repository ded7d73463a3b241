"""Finding and Diagnosis: frozen findings, a readable table, JSON, and argument checks."""

import dataclasses
import json

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep import Diagnosis, Finding
from hyperstep.diagnosis import CODES
from hyperstep.errors import BackendError, InvalidArgumentError, InvalidTypeError

#: every pass: the doctor's catalogue on each backend's own mistakes (see tests/conftest.py)
pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

UNTRACKED = Finding(
    "m/scale", "untracked", "raw tf.Variable", "not tracked", "self.add_weight(...)"
)
UNUSED = Finding("m/dense/bias", "unused", "not read", "no path", "use it")


def test_finding_is_frozen_and_has_the_five_fields():
    assert [f.name for f in dataclasses.fields(Finding)] == ["path", "code", "what", "why", "fix"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        UNTRACKED.code = "unused"


def test_finding_rejects_an_unknown_code():
    with pytest.raises(InvalidArgumentError, match="Received: code='untrained'"):
        Finding("m/x", "untrained", "", "", "")


def test_codes_are_the_stable_kebab_case_codes_of_the_design():
    assert set(CODES) == {
        "untracked",
        "not-trainable",
        "not-in-optimizer",
        "stale-in-optimizer",
        "unused",
        "blocked",
        "zero-gradient",
        "non-float-dtype",
        "zero-learning-rate",
    }


def test_diagnosis_sorts_root_causes_first_and_is_not_ok():
    diagnosis = Diagnosis([UNUSED, UNTRACKED], variables=3, loss=0.25)
    assert diagnosis.codes() == ["untracked", "unused"]
    assert not diagnosis.ok


def test_str_is_a_table_with_every_path_code_and_fix():
    text = str(Diagnosis([UNUSED, UNTRACKED], variables=3, loss=0.25))
    lines = text.splitlines()
    assert lines[0] == "hs.doctor: 3 variables examined, loss 0.25: 2 findings."
    assert lines[2].split() == ["path", "code", "what"]
    assert lines[4].split()[:2] == ["m/scale", "untracked"]
    assert lines[5].split()[:2] == ["m/dense/bias", "unused"]
    assert "fix: self.add_weight(...)" in text and "fix: use it" in text


def test_to_dict_round_trips_through_json():
    diagnosis = Diagnosis([UNTRACKED], variables=1, loss=None)
    data = json.loads(json.dumps(diagnosis.to_dict()))
    assert data == {
        "ok": False,
        "variables": 1,
        "loss": None,
        "findings": [dataclasses.asdict(UNTRACKED)],
    }
    assert Finding(**data["findings"][0]) == UNTRACKED


def compiled():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    return model


BATCH = (np.ones((2, 3), "float32"), np.ones((2, 1), "float32"))


def test_doctor_rejects_what_is_not_a_keras_model():
    with pytest.raises(InvalidTypeError, match="Received: model=42 of type int"):
        hs.doctor(42, BATCH)


def test_doctor_needs_data_and_a_loss():
    with pytest.raises(InvalidArgumentError, match="Received: data=None"):
        hs.doctor(compiled(), None)
    uncompiled = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)], name="plain")
    with pytest.raises(InvalidArgumentError, match=r"needs a loss.*Received: loss_fn=None"):
        hs.doctor(uncompiled, BATCH)
    with pytest.raises(InvalidTypeError, match="Received: loss_fn='mse'"):
        hs.doctor(uncompiled, BATCH, loss_fn="mse")


def test_doctor_rejects_a_var_list_of_non_variables():
    with pytest.raises(InvalidTypeError, match=r"Received: an item 1\.0 of type float"):
        hs.doctor(compiled(), BATCH, var_list=[1.0])


def test_a_loss_that_fails_on_the_data_is_reported_as_such():
    with pytest.raises(InvalidArgumentError, match="could not compute the loss on `data`"):
        hs.doctor(compiled(), (np.ones((2, 5), "float32"), np.ones((2, 1), "float32")))


def test_doctor_accepts_a_dataset_and_uses_its_first_batch():
    import tensorflow as tf

    dataset = tf.data.Dataset.from_tensor_slices(BATCH).batch(2)
    assert hs.doctor(compiled(), dataset).ok


def test_doctor_under_a_backend_it_does_not_run_on_fails_with_one_clear_message(monkeypatch):
    # TensorFlow, JAX and torch are diagnosed (tests/doctor/test_backends.py); numpy is not
    monkeypatch.setattr(keras.backend, "backend", lambda: "numpy")
    with pytest.raises(
        BackendError, match=r"hs\.doctor runs on Keras's TensorFlow, JAX and torch.*'numpy'"
    ):
        hs.doctor(compiled(), BATCH)
