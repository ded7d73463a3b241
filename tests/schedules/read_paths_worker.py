"""Record one schedule's float32 values on every read path of one backend (a subprocess).

Usage: ``python read_paths_worker.py OUT.json [numpy]``; ``KERAS_BACKEND`` picks the backend.
For each vocabulary example (``WORDS``) and each step of ``STEPS`` it writes the float32 bits
read on each path: ``in_step`` (what SGD's update used inside the compiled step: the weight
``0 - lr * 1``), ``eager`` (``float(opt.learning_rate)`` before that step), ``hp`` (``hp.value``),
``vector`` (the schedule called on the whole array of steps), ``log`` (LogHyperparameters'
row). With ``numpy`` it records only ``cli``: ``sample`` in a process without Keras, as
``hyperstep plot`` samples.
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

#: the vocabulary's words, one example each (tests/schedules/test_parse.py's EXAMPLES)
WORDS = {
    "constant": "constant(0.5)",
    "linear": "linear(1.0, 0.1, 1000)",
    "exponential": "exponential(0.1, 0.5, 100, staircase=True)",
    "exponential_smooth": "exponential(0.1, 0.96, 70)",
    "inverse_time": "inverse_time(0.1, 0.5, every=10)",
    "polynomial": "polynomial(0.1, 0.001, 500, power=2, cycle=True)",
    "cosine": "cosine(1e-3, 1000, end=1e-5)",
    "cosine_restarts": "cosine_restarts(0.1, steps=100, t_mul=2.0, m_mul=0.5)",
    "piecewise": "piecewise([100, 500], [1.0, 0.5, 0.1])",
    "cyclic": "cyclic(0.1, 1.0, 100, mode='triangular2')",
    "cyclic_exp_range": "cyclic(0.1, 1.0, 70, mode='exp_range', gamma=0.999)",
    "one_cycle": "one_cycle(0.1, 1000, pct_start=0.25)",
    "wsd": "wsd(1e-3, 100, 800, 100, decay_type='1-sqrt', min_ratio=0.1)",
    "wsd_cosine": "wsd(1e-3, 100, 700, 300, decay_type='cosine', warmup_type='cosine')",
    "inverse_sqrt": "inverse_sqrt(1e-3, 100, timescale=50)",
    "cooldown": "cooldown(1e-3, 300, 700, shape='cosine', end=1e-5)",
    "cooldown_exponential": "cooldown(0.9, 70, 630, shape='exponential', end=0.1)",
    "exponential_decay": "exponential_decay(0.1, 100, 0.5, staircase=True)",
    "exponential_decay_smooth": "exponential_decay(0.1, 70, 0.96)",
    "polynomial_decay": "polynomial_decay(0.1, 500, 0.001, power=2.0, cycle=True)",
    "cosine_decay": "cosine_decay(0.0, 900, alpha=0.1, warmup_target=1e-3, warmup_steps=100)",
    "cosine_decay_restarts": "cosine_decay_restarts(0.1, 100, t_mul=2.0, m_mul=0.5, alpha=0.1)",
    "warmup": "warmup(cosine(1e-3, steps=900), steps=100, start=1e-5)",
    "join": "join([linear(0, 1, 100), cosine(1.0, 400), 0.01], [100, 500])",
}

#: every 9th step (``READ_PATHS_STRIDE``) to 1100 (past every example's horizon), and each
#: boundary and +-1
BOUNDARIES = (70, 100, 140, 200, 300, 400, 500, 700, 800, 900, 1000)
STRIDE = int(os.environ.get("READ_PATHS_STRIDE", "9"))


def steps_of(stride: int) -> list[int]:
    """Every ``stride``-th step to 1100, and each boundary and +-1."""
    return sorted(set(range(0, 1101, stride)) | {b + d for b in BOUNDARIES for d in (-1, 0, 1)})


STEPS = steps_of(STRIDE)


def bits(values: object) -> list[int]:
    array = np.asarray(values, dtype=np.float32).reshape(-1)
    return array.view(np.uint32).tolist()


def cli_values() -> dict[str, dict[str, list[int]]]:
    from hyperstep.backends import numpy_ops

    assert numpy_ops.request(), "Keras was imported before the NumPy schedules"
    from hyperstep.schedules.language import parse
    from hyperstep.schedules.sample import sample

    assert "keras" not in sys.modules
    found = {}
    for word, text in WORDS.items():
        grid, values = sample(parse(text), max(STEPS) + 1)
        assert grid.tolist() == list(range(max(STEPS) + 1))
        found[word] = {"cli": bits(values[STEPS])}
    assert "keras" not in sys.modules
    return found


def backend_values(steps: list[int] = STEPS) -> dict[str, dict[str, list[int]]]:
    """The in-step, eager, ``hp``, vector and log bits (also called in the TensorFlow pass's
    own process: ``test_read_paths.py``)."""
    import keras

    import hyperstep as hs

    found = {}
    for word, text in WORDS.items():
        schedule = hs.parse(text)
        opt = hs.scheduled(keras.optimizers.SGD(), learning_rate=text)
        w = keras.Variable(np.zeros((), "float32"))
        opt.build([w])
        hp = opt.hyperparameters["learning_rate"]
        log = hs.callbacks.LogHyperparameters(opt, include="all")
        grad = keras.ops.ones(())
        step = _compiled_step(opt, w, grad)
        paths: dict[str, list[int]] = {k: [] for k in ("in_step", "eager", "hp", "log")}
        for t in steps:
            hp.clock.step.assign(t)
            paths["eager"] += bits(float(opt.learning_rate))
            paths["hp"] += bits(keras.ops.convert_to_numpy(hp.value))
            paths["log"] += bits(log.record()["learning_rate"])
            step()
            paths["in_step"] += bits(0.0 - keras.ops.convert_to_numpy(w.value))
        paths["vector"] = bits(keras.ops.convert_to_numpy(schedule(np.asarray(steps))))
        found[word] = paths
    return found


def _compiled_step(opt, w, grad):
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        @tf.function
        def step():
            w.assign(0.0)
            opt.apply([grad], [w])

        return step
    if backend == "torch":
        import torch

        def eager():
            w.assign(0.0)
            opt.apply([grad], [w])

        compiled = torch.compile(eager)
        return compiled
    if backend == "jax":
        import jax

        @jax.jit
        def stateless(opt_values):
            new_w, new_opt = opt.stateless_apply(opt_values, [grad], [keras.ops.zeros(())])
            return new_w, new_opt

        def step():
            (new_w,), new_opt = stateless([v.value for v in opt.variables])
            w.assign(new_w)
            for v, value in zip(opt.variables, new_opt, strict=True):
                v.assign(value)

        return step
    raise ValueError(backend)


if __name__ == "__main__":
    out = sys.argv[1]
    result = cli_values() if sys.argv[2:] == ["numpy"] else backend_values()
    with open(out, "w") as f:
        json.dump(result, f)
