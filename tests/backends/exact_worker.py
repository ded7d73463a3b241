"""``hs.scheduled`` against the plain Keras optimizer set per step, on the JAX backend; JSON.

Run with ``KERAS_BACKEND=jax`` (``test_jax_exact.py``). Prints, per optimizer and mode, the
largest absolute difference between the weights of the two runs and how far the reference
moved. ``HYPERSTEP_EXACT_MODES`` (comma-separated) picks the modes:

* ``eager``: ``optimizer.apply`` in a Python loop, 100 steps, the reference's values set as
  Python floats before each step (a constant is its own Python float);
* ``jit``: ``optimizer.stateless_apply`` under ``jax.jit``, 100 steps: ours traced once (the
  values are read from variables inside), the reference retraced every step, since Keras
  bakes its Python floats into the trace (the same kernels on both sides);
* ``eager-changed``, ``jit-changed``: the same with CHANGED's run-time changes;
* ``fit``: ``model.fit``, 100 batches, constants but for the learning rate: the reference
  reads the same float32 learning rates from a table in a Keras ``LearningRateSchedule``.
"""

from __future__ import annotations

import json
import os

import jax
import keras
import numpy as np

import hyperstep as hs
from hyperstep.optim.scheduled import ScheduledOptimizer
from hyperstep.schedules.expressions import Constant

K = keras.optimizers
STEPS = 100
TARGET = np.linspace(-1.0, 1.0, 6).astype("float32")
START = np.linspace(0.5, -0.7, 6).astype("float32")

#: optimizer, and its scheduled values (a beta-like value; learning rate and weight decay
#: are in COMMON); the other hyperparameters are constants (`beta_2=0.999`, `epsilon`)
CASES = {
    "Adam": (K.Adam, {"beta_1": "0.95 - 0.1 * min(step / 60, 1)"}),
    "AdamW": (K.AdamW, {"beta_1": "0.8 + 0.15 * min(step / 50, 1)", "beta_2": "0.99"}),
    "SGD-momentum": (lambda: K.SGD(momentum=0.9), {"momentum": "0.5 + 0.4 * min(step / 40, 1)"}),
    "RMSprop": (lambda: K.RMSprop(momentum=0.5), {"rho": "0.8 + 0.15 * min(step / 70, 1)"}),
}
COMMON = {
    "learning_rate": "warmup(cosine(0.05, steps=100, end=0.001), steps=10)",
    "weight_decay": "0.004 * (1 + step / 50)",
}
#: a hyperparameter changed at run time (an override from step 30, a scale from 50, back to
#: its schedule from 70): no retrace, and each step equals the plain optimizer set to the
#: float32 value it then has (a constant is again its Python float from step 70)
CHANGED = {"Adam": "beta_2", "AdamW": "beta_2", "SGD-momentum": "momentum", "RMSprop": "momentum"}
OVERRIDE, SCALE = 0.97, 0.99

#: fit: constants but the learning rate (a plain jitted step cannot change its floats)
FIT = {
    "Adam": lambda: K.Adam(),
    "AdamW": lambda: K.AdamW(weight_decay=0.01),
    "SGD-momentum": lambda: K.SGD(momentum=0.9, nesterov=True),
    "RMSprop": lambda: K.RMSprop(momentum=0.5, centered=True),
}


def _gradient(w: jax.Array) -> jax.Array:
    return w - TARGET + 0.1 * w**3


def _values(schedules: dict[str, str], traced: bool = False) -> list[dict[str, float]]:
    """Each step's values as the Python floats set on the reference: a constant's own Python
    float, a schedule's float32 value (``traced``: evaluated under ``jax.jit``, as inside a
    jitted step, where XLA may rewrite ``step / 40`` as ``step * 0.025``)."""
    parsed = {key: hs.parse(text) for key, text in schedules.items()}
    evaluate = {key: jax.jit(s) if traced else s for key, s in parsed.items()}
    return [
        {
            key: float(s.value_) if isinstance(s, Constant) else float(evaluate[key](step))
            for key, s in parsed.items()
        }
        for step in np.arange(STEPS, dtype="float32")
    ]


def _changed(values: list[dict[str, float]], key: str, own: float) -> list[dict[str, float]]:
    """``values`` with CHANGED's run-time changes of ``key`` (the optimizer's ``own`` value
    where not scheduled) as float32 values."""
    for step, now in enumerate(values):
        now.setdefault(key, own)
        if 30 <= step < 50:
            now[key] = float(np.float32(OVERRIDE))
        elif 50 <= step < 70:
            now[key] = float(np.float32(now[key]) * np.float32(SCALE))
    return values


def _change(opt: keras.optimizers.Optimizer, key: str, step: int) -> None:
    """CHANGED's change of ``opt.hyperparameters[key]`` before ``step`` (between steps)."""
    hyperparameter = opt.hyperparameters[key]
    if step == 30:
        hyperparameter.set(OVERRIDE)
    elif step == 50:
        hyperparameter.clear()
        hyperparameter.scale.assign(SCALE)
    elif step == 70:
        hyperparameter.scale.assign(1.0)


def eager(
    make: object, schedules: dict[str, str], changed: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    values = _values(schedules)
    if changed is not None:
        values = _changed(values, changed, float(getattr(make(), changed)))  # type: ignore[operator]
    found = []
    for opt in (make(), hs.scheduled(make(), **schedules)):  # type: ignore[operator]
        w = keras.Variable(START.copy())
        opt.build([w])
        for step in range(STEPS):
            if not isinstance(opt, ScheduledOptimizer):
                for key, value in values[step].items():
                    setattr(opt, key, value)
            elif changed is not None:
                _change(opt, changed, step)
            opt.apply([_gradient(w.value)], [w])
        found.append(np.asarray(w.value))
    return found[0], found[1]


def jitted(
    make: object, schedules: dict[str, str], changed: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    values = _values(schedules, traced=True)
    if changed is not None:
        values = _changed(values, changed, float(getattr(make(), changed)))  # type: ignore[operator]
    found = []
    for opt in (make(), hs.scheduled(make(), **schedules)):  # type: ignore[operator]
        plain = not isinstance(opt, ScheduledOptimizer)
        w = keras.Variable(START.copy())
        opt.build([w])

        traces = [0]

        def step(
            weight: jax.Array, state: list[jax.Array], opt: object = opt, traces: list = traces
        ) -> tuple:
            traces[0] += 1
            new, state = opt.stateless_apply(state, [_gradient(weight)], [weight])  # type: ignore[attr-defined]
            return new[0], state

        compiled = jax.jit(step)
        for i in range(STEPS):
            if plain:  # Python floats are baked into the trace: set, and retrace
                for key, value in values[i].items():
                    setattr(opt, key, value)
                compiled = jax.jit(lambda w, s, step=step: step(w, s))
            elif changed is not None:
                _change(opt, changed, i)  # read through the state: traced once
            state = [v.value for v in opt.variables]
            weight, state = compiled(w.value, state)
            w.assign(weight)
            for variable, value in zip(opt.variables, state, strict=True):
                variable.assign(value)
        found.append(np.asarray(w.value))
    TRACES[mode_name(changed)] = traces[0]  # ours: traced once
    return found[0], found[1]


#: how often the last jitted run traced our step
TRACES: dict[str, int] = {}


def mode_name(changed: str | None) -> str:
    return "jit-changed" if changed else "jit"


class _Table(keras.optimizers.schedules.LearningRateSchedule):
    """The learning rate at ``step`` from a table of float32 values (the reference's)."""

    def __init__(self, values: list[float]) -> None:
        self.values = np.asarray(values, dtype="float32")

    def __call__(self, step: object) -> object:
        return keras.ops.take(keras.ops.convert_to_tensor(self.values), step)

    def get_config(self) -> dict[str, object]:
        return {"values": self.values.tolist()}


def fitted(make: object) -> tuple[np.ndarray, np.ndarray]:
    schedule = COMMON["learning_rate"]
    rates = [v["learning_rate"] for v in _values({"learning_rate": schedule}, traced=True)]
    x = np.random.default_rng(0).normal(size=(STEPS * 4, 5)).astype("float32")
    y = np.random.default_rng(1).normal(size=(STEPS * 4, 2)).astype("float32")
    found = []
    keras.utils.set_random_seed(0)
    initial = keras.Sequential([keras.Input((5,)), keras.layers.Dense(2)]).get_weights()
    for opt in (make(rates), hs.scheduled(make(None), learning_rate=schedule)):  # type: ignore[operator]
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(2)])
        model.compile(opt, "mse")
        model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
        found.append(np.concatenate([np.ravel(w) for w in model.get_weights()]))
    start = np.concatenate([np.ravel(w) for w in initial])
    return found[0] - start, found[1] - start


def _fit_make(make: object) -> object:
    def build(rates: list[float] | None) -> keras.optimizers.Optimizer:
        opt = make()  # type: ignore[operator]
        if rates is not None:
            config = opt.get_config()
            config["learning_rate"] = _Table(rates)
            opt = type(opt).from_config(config)
        return opt

    return build


def main() -> None:
    modes = os.environ.get("HYPERSTEP_EXACT_MODES", "eager,eager-changed,fit").split(",")
    result: dict[str, object] = {"backend": keras.backend.backend()}
    ours_unchanged: dict[str, np.ndarray] = {}
    for mode in modes:
        for name in CASES if mode != "fit" else FIT:
            if mode == "fit":  # the changes from the initial weights
                reference, ours = fitted(_fit_make(FIT[name]))
                moved = float(np.max(np.abs(reference)))
            else:
                make, own = CASES[name]
                run = jitted if mode.startswith("jit") else eager
                changed = CHANGED[name] if mode.endswith("changed") else None
                reference, ours = run(make, {**COMMON, **own}, changed)
                moved = float(np.max(np.abs(reference - START)))
            outcome = {"difference": float(np.max(np.abs(reference - ours))), "moved": moved}
            unchanged = ours_unchanged.get(f"{mode.removesuffix('-changed')}/{name}")
            if mode.endswith("-changed") and unchanged is not None:  # the changes mattered
                outcome["effect"] = float(np.max(np.abs(ours - unchanged)))
            if mode.startswith("jit"):
                outcome["traces"] = TRACES[mode]
            ours_unchanged[f"{mode}/{name}"] = ours
            result[f"{mode}/{name}"] = outcome
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
