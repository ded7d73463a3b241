"""Units of hyperstep._registration: the stand-ins Keras finds before hyperstep's classes load."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import keras
import pytest

from hyperstep import _registration
from hyperstep._registration import TOP_LEVEL, install, register


def _fake_keras(registry: dict) -> SimpleNamespace:
    return SimpleNamespace(saving=SimpleNamespace(get_custom_objects=lambda: registry))


def test_register_puts_a_standin_under_every_top_level_name_only() -> None:
    registry: dict = {}
    register(_fake_keras(registry))
    assert set(registry) == set(TOP_LEVEL)  # none per Keras optimizer class
    for name, cls in registry.items():
        assert cls._hs_standin is True
        assert cls.__name__ == name.split(">")[1]
        assert cls.__module__ == TOP_LEVEL[name]


def test_register_keeps_a_class_already_registered() -> None:
    real = type("Real", (), {})
    registry = {"hyperstep>StepOptimizer": real}
    register(_fake_keras(registry))
    assert registry["hyperstep>StepOptimizer"] is real
    assert registry["hyperstep>Scheduled"]._hs_standin


def test_a_standin_hands_its_config_to_the_class_its_module_registers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "hyperstep>RegistrationProbe"
    module = "hs_registration_probe"
    (tmp_path / f"{module}.py").write_text(
        textwrap.dedent(f"""
            import keras

            class Probe:
                @classmethod
                def from_config(cls, config, custom_objects=None):
                    return ("real", config, custom_objects)

            keras.saving.get_custom_objects()[{name!r}] = Probe
        """),
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = keras.saving.get_custom_objects()
    standin = _registration._standin(name, module)
    monkeypatch.setitem(registry, name, standin)
    try:
        assert standin.from_config({"a": 1}) == ("real", {"a": 1}, None)
        assert registry[name] is not standin  # the import replaced it
        assert standin.from_config({"b": 2}, {"x": int}) == ("real", {"b": 2}, {"x": int})
    finally:
        sys.modules.pop(module, None)


def test_a_standin_whose_module_registers_nothing_raises_like_keras(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = "hyperstep>NeverRegistered"
    standin = _registration._standin(name, "hyperstep.errors")
    monkeypatch.setitem(keras.saving.get_custom_objects(), name, standin)
    with pytest.raises(TypeError, match=r"Could not locate class 'hyperstep>NeverRegistered'"):
        standin.from_config({})


def test_install_with_keras_imported_registers_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = keras.saving.get_custom_objects()
    name = "hyperstep>SkipNonFinite"
    monkeypatch.delitem(registry, name, raising=False)
    before = list(sys.meta_path)
    install()
    assert registry[name]._hs_standin
    assert sys.meta_path == before  # no import hook once Keras is imported
