"""Every Keras optimizer x variable dtype on one backend: ``hs.scheduled`` against the
plain optimizer whose learning rate is set to the same value before each step.

Per (optimizer, dtype): the plain optimizer's run first; if Keras itself fails on that dtype
the case is ``"unsupported"``; else the scheduled run's weights are compared bitwise
(``"equal"``, ``"differs"`` or the error it raised). TensorFlow steps run in a
``tf.function`` (as in ``fit``); JAX and torch eagerly.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import keras
import numpy as np
from worker_io import report

import hyperstep as hs

BACKEND = keras.backend.backend()
DTYPES = ["float16", "bfloat16", "float32", "float64"]
STEPS = 4
#: a subset, for a quick run: ``Adam,Ftrl/float64`` is Adam on every dtype and Ftrl on float64
ONLY = sys.argv[1].split(",") if len(sys.argv) > 1 else None
NAMES = sorted(
    name
    for name in dir(keras.optimizers)
    if isinstance(getattr(keras.optimizers, name), type)
    and issubclass(getattr(keras.optimizers, name), keras.optimizers.Optimizer)
    and name not in ("Optimizer", "LossScaleOptimizer", "MultiOptimizer")
    and (ONLY is None or any(item.split("/")[0] == name for item in ONLY))
)
CELLS = [
    (name, dtype)
    for name in NAMES
    for dtype in DTYPES
    if ONLY is None or name in ONLY or f"{name}/{dtype}" in ONLY
]
#: arguments that switch on a hyperparameter's code path
EXTRA: dict[str, dict[str, Any]] = {
    "SGD": {"momentum": 0.9},
    "RMSprop": {"centered": True, "momentum": 0.5},
    "Ftrl": {"l1_regularization_strength": 0.01, "l2_regularization_strength": 0.01},
    "AdamW": {},
}


class ExtraDecay(keras.optimizers.SGD):
    """A user's optimizer that decides in Python whether a hyperparameter is on."""

    def __init__(self, extra_decay: float = 0.01, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.extra_decay = extra_decay

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> None:
        on = self.extra_decay > 0
        if on:
            decay = keras.ops.cast(self.extra_decay, variable.dtype)
            self.assign_sub(
                variable, keras.ops.cast(learning_rate, variable.dtype) * decay * variable
            )
        super().update_step(gradient, variable, learning_rate)

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "extra_decay": self.extra_decay}


SCHEDULE = "0.05 * 0.5 ** (step / 2)"

#: TensorFlow's graph optimizer rewrites arithmetic on Keras's Python-float constants, which
#: a value that can change at run time never is (measured: Ftrl's ``power(x, 0.5)`` by the
#: arithmetic optimizer, ScheduleFreeAdamW's ``x / beta_1`` by constant folding; each equals
#: bitwise with that rewrite off; plain Keras's graph against its eager run and hyperstep's
#: graph: tests/optim/test_grappler_rewrites.py): these two compare with both rewrites off
GRAPH_CONSTANT_REWRITES = {"Ftrl", "ScheduleFreeAdamW"}


@contextlib.contextmanager
def without_constant_rewrites(name: str) -> Iterator[None]:
    if BACKEND != "tensorflow" or name not in GRAPH_CONSTANT_REWRITES:
        yield
        return
    import tensorflow as tf

    off = {"arithmetic_optimization": False, "constant_folding": False}
    was = tf.config.optimizer.get_experimental_options()
    tf.config.optimizer.set_experimental_options(off)
    try:
        yield
    finally:
        tf.config.optimizer.set_experimental_options({k: was.get(k, True) for k in off})


def value_at(schedule: str, step: int) -> float:
    """The schedule's float32 value at ``step`` (hyperstep's own), as a Python float."""
    value = hs.parse(schedule)(keras.ops.convert_to_tensor(step, "float32"))
    return float(keras.ops.convert_to_numpy(value))


def rate(step: int) -> float:
    return value_at(SCHEDULE, step)


def train(optimizer: Any, dtype: str, set_rate: bool) -> list[np.ndarray]:
    rng = np.random.RandomState(0)
    variables = [
        keras.Variable(rng.normal(size=(4, 3)), dtype=dtype, name="w0"),
        keras.Variable(rng.normal(size=(3,)), dtype=dtype, name="b0"),
    ]
    grads = [
        [keras.ops.convert_to_tensor(rng.normal(size=v.shape), dtype) for v in variables]
        for _ in range(STEPS)
    ]
    optimizer.build(variables)

    def apply(gradients: list[Any]) -> None:
        optimizer.apply(gradients, variables)

    if BACKEND == "tensorflow":
        import tensorflow as tf

        apply = tf.function(apply)
    for step in range(STEPS):
        if set_rate:
            optimizer.learning_rate.assign(rate(step))
        apply(grads[step])
    return [keras.ops.convert_to_numpy(v).astype("float64") for v in variables]


def case(name: str, dtype: str) -> str:
    with without_constant_rewrites(name):
        return compare(name, dtype)


def compare(name: str, dtype: str) -> str:
    make = ExtraDecay if name == "ExtraDecay" else getattr(keras.optimizers, name)
    extra = EXTRA.get(name, {})
    try:
        expected = train(make(**extra), dtype, set_rate=True)
    except Exception:  # Keras itself does not train this dtype
        return "unsupported"
    try:
        actual = train(hs.scheduled(make(**extra), learning_rate=SCHEDULE), dtype, False)
    except Exception as error:
        return f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
    same = all(np.array_equal(a, e, equal_nan=True) for a, e in zip(actual, expected, strict=True))
    return "equal" if same else "differs"


def scheduled_extra_decay() -> str:
    """``extra_decay`` on a schedule trains (its ``if`` sees a positive number) and equals
    the plain optimizer set to the same value before each (eager) step."""
    schedule = "0.02 * (1 - step / 8)"
    rng = np.random.RandomState(1)
    start, grads = rng.normal(size=(3,)), [rng.normal(size=(3,)) for _ in range(STEPS)]
    found = []
    for scheduled in (False, True):
        variable = keras.Variable(start, dtype="float32")
        opt = ExtraDecay(learning_rate=0.1)
        if scheduled:
            opt = hs.scheduled(opt, extra_decay=schedule)
        for step in range(STEPS):
            if not scheduled:
                opt.extra_decay = value_at(schedule, step)
            opt.apply([keras.ops.convert_to_tensor(grads[step], "float32")], [variable])
        found.append(keras.ops.convert_to_numpy(variable))
    return "equal" if np.array_equal(found[0], found[1]) else f"differs: {found}"


if __name__ == "__main__":
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = {f"{name}/{dtype}": case(name, dtype) for name, dtype in CELLS}
        found["ExtraDecay/float32"] = case("ExtraDecay", "float32")
        found["ExtraDecay/scheduled"] = scheduled_extra_decay()
    report({"backend": BACKEND, "cases": found}, caught)
