"""The units of hyperstep.optim.scheduled_update, through ``hs.scheduled``: clipping bounds
read at the update's step (float64 closed forms), Keras's non-finite global norm, and the
weight decay and update run per group with each group's own values."""

import keras
import numpy as np
import pytest

import hyperstep as hs

K = keras.optimizers


def test_a_scheduled_clipnorm_bounds_each_update_at_its_step() -> None:
    opt = hs.scheduled(K.SGD(learning_rate=1.0), clipnorm="1 + step")
    w = keras.Variable(np.zeros(2, "float32"))
    g = np.array([3.0, 4.0], "float32")  # norm 5
    expected = np.zeros(2)
    for step in range(6):
        opt.apply([g], [w])
        c = 1.0 + step
        expected -= g * c / max(5.0, c)  # Keras's g * c / max(norm, c)
        np.testing.assert_allclose(w.numpy(), expected, rtol=1e-6)


def test_a_scheduled_clipvalue_and_global_clipnorm() -> None:
    opt = hs.scheduled(K.SGD(learning_rate=1.0), clipvalue="0.5 * (1 + step)")
    w = keras.Variable(np.zeros(3, "float32"))
    g = np.array([2.0, -0.2, -5.0], "float32")
    opt.apply([g], [w])
    opt.apply([g], [w])
    np.testing.assert_allclose(w.numpy(), -(np.clip(g, -0.5, 0.5) + np.clip(g, -1.0, 1.0)))
    opt = hs.scheduled(K.SGD(learning_rate=1.0), global_clipnorm="2 ** step")
    a, b = keras.Variable(np.zeros(1, "float32")), keras.Variable(np.zeros(1, "float32"))
    grads = [np.array([6.0], "float32"), np.array([8.0], "float32")]  # global norm 10
    total = np.zeros(2)
    for step in range(5):
        opt.apply(grads, [a, b])
        c = 2.0**step
        total -= np.array([6.0, 8.0]) * min(1.0, c / 10.0)
    np.testing.assert_allclose([a.numpy()[0], b.numpy()[0]], total, rtol=1e-6)


def test_an_infinite_global_norm_gives_what_keras_gives() -> None:
    grads = [keras.ops.convert_to_tensor(np.array([np.inf, 1.0], "float32"))]
    plain = K.SGD(global_clipnorm=1.0)._clip_gradients(grads)
    ours = hs.scheduled(K.SGD(global_clipnorm=1.0))._clip_gradients(grads)
    np.testing.assert_array_equal(
        keras.ops.convert_to_numpy(ours[0]), keras.ops.convert_to_numpy(plain[0])
    )
    assert np.isnan(keras.ops.convert_to_numpy(ours[0])).all()


def test_weight_decay_and_the_rate_are_each_groups_own() -> None:
    lr, wd, head_wd = 0.1, 0.5, 0.0
    opt = hs.scheduled(
        K.SGD(learning_rate=lr),
        weight_decay=wd,
        groups=[hs.Group("head", match="*head*", weight_decay=head_wd, learning_rate=0.2)],
    )
    body = keras.Variable(np.full(2, 2.0, "float32"), name="body")
    head = keras.Variable(np.full(2, 2.0, "float32"), name="head")
    g = np.ones(2, "float32")
    opt.apply([g, g], [body, head])
    # Keras's decoupled decay first (w -= w * wd * lr), then SGD's w -= lr * g
    np.testing.assert_allclose(body.numpy(), 2.0 - 2.0 * wd * lr - lr * 1.0, rtol=1e-6)
    np.testing.assert_allclose(head.numpy(), 2.0 - 2.0 * head_wd * 0.2 - 0.2 * 1.0, rtol=1e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_without_groups_a_constant_update_is_kerass_bit_for_bit(name) -> None:
    plain_w = keras.Variable(np.array([1.0, -1.0], "float32"))
    ours_w = keras.Variable(np.array([1.0, -1.0], "float32"))
    plain = getattr(K, name)(learning_rate=0.01, clipnorm=0.5, weight_decay=0.1)
    ours = hs.scheduled(getattr(K, name)(learning_rate=0.01, clipnorm=0.5, weight_decay=0.1))
    for g in ([0.3, -2.0], [1.0, 1.0], [-0.5, 0.25]):
        plain.apply([np.array(g, "float32")], [plain_w])
        ours.apply([np.array(g, "float32")], [ours_w])
    np.testing.assert_array_equal(ours_w.numpy(), plain_w.numpy())
