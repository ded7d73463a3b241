"""The units of hyperstep.tune.lr_data: ``plan`` for each kind of data ``find_lr`` takes,
its batches against NumPy's own permutations, ``fit``'s arguments and the first batch."""

import keras
import numpy as np
import pytest

from hyperstep.errors import InvalidArgumentError
from hyperstep.tune.lr_data import plan


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
