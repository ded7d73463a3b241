"""A file saved before hyperstep saved hyperparameter state by name (its layout,
``optimizer/hyperparameters/hyperparameter[_<i>]/vars/<state>``, written here from a file
saved now): read by position with a warning, or refused when the counts differ."""

from pathlib import Path

import h5py
import keras
import numpy as np
import pytest

import hyperstep as hs


def _model(**hyperparameters: float) -> keras.Model:
    opt = hs.scheduled(keras.optimizers.Adam(), **hyperparameters)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(opt, "mse")
    model.fit(np.ones((4, 3)), np.ones((4, 1)), verbose=0)
    return model


def _positional(path: Path, keys: list[str]) -> None:
    """Move the by-name entries ``<key>:<state>`` to the positional layout, in ``keys``'s
    order (what Keras's saving walk wrote for the ``hyperparameters`` dict); drop the
    others."""
    with h5py.File(path, "r+") as f:
        store = f["optimizer/vars"]
        for i, key in enumerate(keys):
            group = f.create_group(
                f"optimizer/hyperparameters/hyperparameter{'' if i == 0 else f'_{i}'}/vars"
            )
            for name in [n for n in store if n.startswith(f"{key}:")]:
                group[name.rpartition(":")[2]] = store[name][()]
                del store[name]
        for name in [n for n in store if ":" in n]:
            del store[name]


def test_a_file_saved_by_position_is_read_by_position_with_a_warning(tmp_path: Path) -> None:
    saved = _model(learning_rate=0.01, beta_1=0.9)
    hps = saved.optimizer.hyperparameters
    hps["beta_1"].set(0.5)
    hps["learning_rate"].scale.assign(0.25)
    path = tmp_path / "old.weights.h5"
    saved.save_weights(path)
    _positional(path, list(hps))

    loaded = _model(learning_rate=0.01, beta_1=0.9)
    with pytest.warns(UserWarning, match=r"by position \(`optimizer/hyperparameters/"):
        loaded.load_weights(path)
    for key, hp in loaded.optimizer.hyperparameters.items():
        for state in ("scale", "override"):
            np.testing.assert_array_equal(getattr(hp, state).numpy(), getattr(hps[key], state))
    for a, b in zip(loaded.optimizer.variables, saved.optimizer.variables, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())  # Adam's own state too


def test_a_file_saved_by_position_for_other_hyperparameters_is_refused(tmp_path: Path) -> None:
    saved = _model(learning_rate=0.01, beta_1=0.9)
    path = tmp_path / "old.weights.h5"
    saved.save_weights(path)
    _positional(path, list(saved.optimizer.hyperparameters)[:3])  # fewer than now

    loaded = _model(learning_rate=0.01, beta_1=0.9)
    # Keras's loader raises a ValueError that carries hyperstep's message
    with pytest.raises(ValueError, match=r"state of 3 hyperparameters by position"):
        loaded.load_weights(path)
