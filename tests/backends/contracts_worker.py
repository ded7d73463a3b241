"""Keras's optimizer contracts on one backend; prints ``RESULT <json>`` (``test_contracts.py``).

For every Keras optimizer wrapped by ``hs.scheduled``: pickle and deepcopy round trips
(schedules, scales, overrides, the clock's step), a callable learning rate against the plain
optimizer, a schedule assigned to ``opt.learning_rate``, ``opt.learning_rate.assign``.
Each check reports ``"ok"`` or the error it raised. Importing this module runs nothing.
"""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any


def _state(opt: Any) -> Any:
    return [int(opt.clock.step.numpy())] + [
        [name, repr(hp._raw_schedule), float(hp.scale.numpy()), str(hp.override.numpy())]
        for name, hp in sorted(opt.hyperparameters.items())
    ]


def checks(name: str) -> dict[str, str]:
    import keras
    import numpy as np

    import hyperstep as hs

    cls = getattr(keras.optimizers, name)
    found: dict[str, str] = {}

    def run(check: str, body: Any) -> None:
        try:
            body()
            found[check] = "ok"
        except Exception as error:  # reported, and failed, by the test
            found[check] = f"{type(error).__name__}: {str(error)[:300]}"

    def round_trips() -> None:
        opt = hs.scheduled(cls(), learning_rate="0.01 * 0.5 ** (step / 10)")
        opt.clock.step.assign(7)
        opt.hyperparameters["learning_rate"].scale.assign(0.5)
        other = next(k for k in sorted(opt.hyperparameters) if k != "learning_rate")
        opt.hyperparameters[other].set(0.125)
        for again in (pickle.loads(pickle.dumps(opt)), copy.deepcopy(opt)):
            assert type(again) is type(opt), type(again)
            assert _state(again) == _state(opt), (_state(again), _state(opt))

    def callable_rate() -> None:
        results = []
        for wrap in (lambda o: o, hs.scheduled):
            opt = wrap(cls(learning_rate=lambda: 0.1))
            v = keras.Variable([[1.0, 2.0], [3.0, 4.0]])
            opt.apply_gradients([(keras.ops.ones((2, 2)), v)])
            results.append(keras.ops.convert_to_numpy(v))
        if keras.backend.backend() == "jax":
            # JAX computes `1 - beta_2` of the other (constant) hyperparameters from float32
            # values (no float64 in a jitted step without x64), Keras from Python floats:
            # float32 1 - 0.999 is 4.7e-5 off, so up to 5e-5 of the step (0.1 here)
            np.testing.assert_allclose(results[1], results[0], rtol=0, atol=5e-6)
        else:
            np.testing.assert_array_equal(results[1], results[0])

    def assignment() -> None:
        opt = hs.scheduled(cls(), learning_rate="0.01 * 0.5 ** (step / 10)")
        schedule = keras.optimizers.schedules.PolynomialDecay(0.1, 4)
        opt.learning_rate = schedule
        opt.clock.step.assign(2)
        assert float(opt.learning_rate) == float(schedule(2))
        opt.learning_rate = "0.01 * 0.5 ** (step / 10)"
        opt.learning_rate.assign(1e-4)
        assert abs(float(opt.learning_rate) - 1e-4) <= 1e-11
        assert not bool(opt.hyperparameters["learning_rate"].is_set)

    run("round_trips", round_trips)
    run("callable", callable_rate)
    run("assignment", assignment)
    return found


def main() -> None:
    import keras

    K = keras.optimizers
    names = sorted(
        n
        for n in dir(K)
        if isinstance(getattr(K, n), type)
        and issubclass(getattr(K, n), K.Optimizer)
        and getattr(K, n) is not K.Optimizer
        and n not in ("LossScaleOptimizer", "MultiOptimizer")
    )
    result: dict[str, Any] = {"backend": keras.backend.backend()}
    for name in names:
        result[name] = checks(name)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
