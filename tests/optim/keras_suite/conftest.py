"""Keras's own optimizer test files (v3.15.1, copied unchanged), with every Keras optimizer
class a test module names replaced, for that module's tests, by a stand-in whose call is
``hs.scheduled(cls(...))``: each test then runs on the scheduled optimizer
(``isinstance`` and class attributes still answer as ``cls``)."""

from __future__ import annotations

from typing import Any

import keras
import pytest

import hyperstep as hs
from hyperstep.optim.scheduled import ScheduledOptimizer

WRAPPERS = ("LossScaleOptimizer", "MultiOptimizer")

# the files are Keras 3.15.1's and import its modules: older Keras (`make test-oldest`) lacks
# some (schedule_free_adamw, muon), so they are not collected there
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
            "on JAX hs.scheduled keeps its clock and hyperparameter state in "
            "`optimizer.variables` (stateless training carries only those through a jitted "
            "step), so Keras's `len(optimizer.variables) == 2` sees 11 (the state model issue)"
        )
    }
}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    known = KNOWN_FAILURES.get(keras.backend.backend(), {})
    for item in items:
        reason = known.get(item.nodeid.rsplit("/", 1)[-1])
        if reason is not None:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


def pytest_configure(config: pytest.Config) -> None:
    # Keras's own marker (its conftest skips these on the numpy backend, which we never use)
    config.addinivalue_line("markers", "requires_trainable_backend: Keras's trainable backends")
