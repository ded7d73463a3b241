"""Reading hyperparameters from another thread while ``fit`` traces and trains (issue 19
item 3): every read gives the current value; the update in progress is per thread."""

import threading

import keras
import numpy as np

import hyperstep as hs

X = np.random.default_rng(0).normal(size=(256, 4)).astype("float32")
Y = np.random.default_rng(1).normal(size=(256, 1)).astype("float32")


def test_reads_from_another_thread_during_fit_give_current_values():
    opt = hs.scheduled(
        keras.optimizers.Adam(),
        learning_rate="cosine(0.01, steps=64, end=0.001)",
        beta_1="0.9 - 0.1 * min(step / 64, 1)",
    )
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8), keras.layers.Dense(1)])
    model.compile(opt, "mse")
    done = threading.Event()
    errors: list[str] = []
    seen: list[tuple[float, float]] = []

    def read() -> None:
        while not done.is_set():
            try:
                seen.append((float(opt.learning_rate), float(opt.beta_1)))
            except Exception as error:  # reported below
                errors.append(f"{type(error).__name__}: {error}")

    reader = threading.Thread(target=read)
    reader.start()
    try:
        model.fit(X, Y, batch_size=16, epochs=4, verbose=0)
    finally:
        done.set()
        reader.join()
    assert errors == []
    assert len(seen) > 10
    steps = np.arange(65)
    rates, betas = np.array(seen).T
    for read, key in ((rates, "learning_rate"), (betas, "beta_1")):  # each a value of a step
        values = keras.ops.convert_to_numpy(opt.hyperparameters[key].at(steps))
        # (a vector of steps may round `cos` one ulp from a scalar step: a tolerance of 1e-6)
        nearest = np.min(np.abs(read[:, None] - values[None, :]), axis=1)
        assert np.all(nearest <= 1e-6 * np.abs(read))
    assert int(opt.clock.step) == 64
