"""Loads the example scripts in ``examples/`` (not a package) as modules, once per session."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _load(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def seed000() -> ModuleType:
    return _load("seed000_step_in_formula")


@pytest.fixture(scope="session")
def seed001() -> ModuleType:
    return _load("seed001_custom_variable")


@pytest.fixture(scope="session")
def seed002() -> ModuleType:
    return _load("seed002_learning_rate_decay")


@pytest.fixture(scope="session")
def keras_io_total_steps() -> ModuleType:
    return _load("keras_io_total_steps")
