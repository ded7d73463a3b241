"""Units of hyperstep.backends.jax: writes into the state a JAX ``fit`` holds (``write``,
``apply_pending``, ``held_scope``), outside a fit and in one tiny fit."""

from __future__ import annotations

import threading

import keras
import numpy as np
import pytest

from hyperstep.backends.jax import apply_pending, fit_started, held_scope, write

pytestmark = pytest.mark.backend("jax")


def test_outside_a_fit_nothing_is_held() -> None:
    variable = keras.Variable(1.0, trainable=False)
    assert write(variable, 2.0) is False and float(variable.numpy()) == 1.0
    assert held_scope([variable]) is None
    apply_pending()  # nothing waiting: a no-op
    assert float(variable.numpy()) == 1.0


class _Gain(keras.layers.Layer):
    def build(self, shape) -> None:
        self.gain = self.add_weight(shape=(), initializer="ones", trainable=False, name="gain")

    def call(self, x):
        return x * self.gain


def test_in_a_fit_writes_reach_the_trainer_state() -> None:
    gain = _Gain()
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1, use_bias=False), gain])
    model.compile(keras.optimizers.SGD(0.0), "mse")
    seen: dict[str, list] = {"scope": [], "other": []}

    class Steer(keras.callbacks.Callback):
        def on_train_begin(self, logs=None) -> None:
            fit_started(self.model)  # as hyperstep's fit hook does

        def on_train_batch_begin(self, batch, logs=None) -> None:
            if batch == 1:
                scope = held_scope([gain.gain])
                seen["scope"].append(scope)
                with scope:
                    seen["held"] = float(gain.gain.value)
                assert write(gain.gain, 3.0) is True
            if batch == 2:  # another thread's write waits for the fit's thread
                thread = threading.Thread(
                    target=lambda: seen["other"].append(write(gain.gain, 5.0))
                )
                thread.start()
                thread.join()
                apply_pending()

    model.fit(
        np.ones((4, 1)), np.ones((4, 1)), batch_size=1, epochs=1, verbose=0, callbacks=[Steer()]
    )
    assert isinstance(seen["scope"][0], keras.StatelessScope) and seen["held"] == 1.0
    assert seen["other"] == [True]
    assert float(gain.gain.numpy()) == 5.0  # kept at the end of fit


def test_a_clock_read_in_a_batch_callback_gives_the_step_and_a_purged_one_names_the_way() -> None:
    import hyperstep as hs
    from hyperstep.errors import FrozenValueError

    opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=0.1)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(opt, "mse")
    seen: list = []

    class Read(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None) -> None:
            # the callback's captured optimizer, not `self.model` (which syncs fit's state)
            seen.append((int(opt.clock.step), int(opt.clock.epoch)))

        def on_train_batch_end(self, batch, logs=None) -> None:
            seen.append(int(keras.ops.convert_to_numpy(opt.clock.step)))

    x, y = np.ones((6, 2), "float32"), np.ones((6, 1), "float32")
    model.fit(x, y, batch_size=2, epochs=2, verbose=0, callbacks=[Read()])
    # Keras's own counter, synced after fit, agrees: 6 updates
    assert int(keras.ops.convert_to_numpy(opt.iterations)) == 6
    assert seen == [(0, 0), 1, (1, 0), 2, (2, 0), 3, (3, 1), 4, (4, 1), 5, (5, 1), 6]
    opt.clock.step._value = None  # purged as by a fit, with no fit holding it now
    with pytest.raises(FrozenValueError, match=r"self\.model\.optimizer\.clock\.step.*Received"):
        int(opt.clock.step)
