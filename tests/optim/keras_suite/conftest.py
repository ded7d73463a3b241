"""Keras's own optimizer test files (v3.15.1, copied unchanged), with every Keras optimizer
class a test module names replaced, for that module's tests, by a stand-in whose call is
``hs.scheduled(cls(...))``: each test then runs on the scheduled optimizer
(``isinstance`` and class attributes still answer as ``cls``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import keras
import pytest

import hyperstep as hs
from hyperstep.optim.scheduled import ScheduledOptimizer

WRAPPERS = ("LossScaleOptimizer", "MultiOptimizer")
SUITE = Path(__file__).parent

# the files are Keras 3.15.1's and import its modules: older Keras (`make test-oldest`) lacks
# some (schedule_free_adamw, muon), so they are not collected there
collect_ignore_glob: list[str] = []
if tuple(int(part) for part in keras.__version__.split(".")[:2]) < (3, 15):
    collect_ignore_glob = ["test_keras_*.py"]


class _Scheduling(type):
    """``Stand(*args)`` is ``hs.scheduled(cls(*args))``; everything else is ``cls``'s."""

    _hs_cls: type

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return hs.scheduled(cls._hs_cls(*args, **kwargs))

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, cls._hs_cls)

    def __subclasscheck__(cls, subclass: type) -> bool:
        return issubclass(subclass, cls._hs_cls)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls._hs_cls, name)


def _stand_in(optimizer: type) -> type:
    return _Scheduling(optimizer.__name__, (), {"_hs_cls": optimizer})


@pytest.fixture(autouse=True)
def _scheduled_optimizers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    module = request.module
    patched = []
    for name, value in list(vars(module).items()):
        if (
            isinstance(value, type)
            and not isinstance(value, _Scheduling)
            and issubclass(value, keras.optimizers.Optimizer)
            and value.__name__ not in WRAPPERS
            and value is not keras.optimizers.Optimizer
        ):
            monkeypatch.setattr(module, name, _stand_in(value))
            patched.append(name)
    # every copied file tests at least one optimizer, and its tests get scheduled ones
    assert patched, f"{module.__name__} names no Keras optimizer class"
    made = getattr(module, patched[0])()
    assert isinstance(made, ScheduledOptimizer), type(made)


#: Keras tests that fail under hs.scheduled on one backend, with why (strict: a fix shows)
KNOWN_FAILURES = {
    "jax": {
        "test_keras_sgd.py::SGDTest::test_single_step": (
            "on JAX hs.scheduled's clock step and the state its hyperparameters read in the "
            "step (scale, override, cooldown_start, cooldown_form for learning_rate and "
            "momentum) are among `optimizer.variables`, so Keras's "
            "`len(optimizer.variables) == 2` sees 11. They must be: Keras's "
            "`stateless_apply(optimizer_variables, grads, trainable)` takes a list "
            "'corresponding 1:1 to Optimizer().variables', maps only those (and the "
            "trainables) in its StatelessScope and returns only their new values; Keras's "
            "JAX trainer builds that list from `optimizer.variables` (`_get_jax_state`, "
            "`jax_state_sync`, the sharding specs) and so does every custom jitted loop. A "
            "value read in the jitted step from a variable outside that list is the "
            "trace-time constant (hyperstep raises FrozenValueError rather than train with "
            "it) and a clock step assigned there is dropped; on TensorFlow and torch the "
            "step reads the live variables, so nothing needs carrying (the test passes)"
        )
    }
}


#: every pass runs Keras's files (copied unchanged, they declare no backend: tests/conftest.py);
#: the TensorFlow pass in the fast suite, the JAX and torch passes in the slow one
EVERY_BACKEND = ("tensorflow", "jax", "torch")


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Keras's files are collected in the JAX and torch passes too (where tests/conftest.py
    collects only files that name their backend)."""
    if collect_ignore_glob or not collection_path.match("keras_suite/test_keras_*.py"):
        return None
    return False


@pytest.hookimpl(tryfirst=True)  # before tests/conftest.py keeps each pass's own tests
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    known = KNOWN_FAILURES.get(keras.backend.backend(), {})
    for item in items:
        if Path(str(item.path)).parent != SUITE:
            continue
        item.add_marker(pytest.mark.backend(*EVERY_BACKEND))
        if keras.backend.backend() != "tensorflow":  # about a minute a pass: `make test-slow`
            item.add_marker(pytest.mark.slow)
        reason = known.get(item.nodeid.rsplit("/", 1)[-1])
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


def pytest_configure(config: pytest.Config) -> None:
    # Keras's own marker (its conftest skips these on the numpy backend, which we never use)
    config.addinivalue_line("markers", "requires_trainable_backend: Keras's trainable backends")
