"""The public surface: one place declares it, sorted, every name importable and documented."""

import pytest

import hyperstep as hs

AGREED = {
    "Clock",
    "Diagnosis",
    "Finding",
    "Group",
    "Hyperparameter",
    "LRFinding",
    "ReduceOnPlateau",
    "StepOptimizer",
    "averaged_weights",
    "callbacks",
    "doctor",
    "errors",
    "find_lr",
    "parse",
    "rules",
    "schedules",
    "scheduled",
}


def test_all_is_sorted_and_contains_the_agreed_names() -> None:
    assert list(hs.__all__) == sorted(hs.__all__)
    assert AGREED <= set(hs.__all__)


def test_every_public_name_exists_and_has_a_docstring() -> None:
    for name in hs.__all__:
        obj = getattr(hs, name)
        if name == "__version__":
            continue
        assert obj.__doc__ and obj.__doc__.strip(), f"hs.{name} has no docstring"


def test_schedules_all_is_sorted_and_importable() -> None:
    assert list(hs.schedules.__all__) == sorted(hs.schedules.__all__)
    for name in hs.schedules.__all__:
        assert getattr(hs.schedules, name) is not None


VOCABULARY = {
    "constant",
    "linear",
    "exponential",
    "inverse_time",
    "polynomial",
    "cosine",
    "cosine_restarts",
    "piecewise",
    "cyclic",
    "one_cycle",
    "warmup",
    "join",
}


def test_schedules_export_the_vocabulary_and_helpers_not_the_node_classes() -> None:
    exported = set(hs.schedules.__all__)
    assert VOCABULARY <= exported
    assert {"Schedule", "from_keras", "sample", "clip", "minimum", "maximum"} <= exported
    # the node classes live in their modules and are not exported a second time
    assert [name for name in exported if name[0].isupper()] == ["Schedule"]
    from hyperstep.schedules import base, combinators, expressions, families, wsd

    for module in (base, expressions, combinators, families, wsd):
        for name in ("Step", "Epoch", "BinaryOp", "Negate", "Function", "Cosine", "Warmup"):
            if hasattr(module, name):
                assert name not in exported


def test_importing_hyperstep_imports_no_keras() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, hyperstep as hs, hyperstep.diagnosis.report; "
        "print('keras' in sys.modules, set(hs.__all__) <= set(dir(hs)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True"]


def test_hs_doctor_is_a_plain_function_whose_help_is_its_docstring() -> None:
    import inspect
    import pydoc

    assert inspect.isfunction(hs.doctor) and hs.doctor.__name__ == "doctor"
    page = pydoc.render_doc(hs.doctor, renderer=pydoc.plaintext)
    assert "Explain, from evidence, why each variable" in page
    import hyperstep.diagnosis as room

    assert hs.doctor is not room and not callable(room)
    assert room.CODES and "untracked" in room.CODES


def test_the_stub_is_the_one_list_of_the_surface() -> None:
    import ast
    import pathlib

    stub = pathlib.Path(hs.__file__).with_name("__init__.pyi")
    names = [
        alias.asname or alias.name
        for node in ast.parse(stub.read_text()).body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]
    assert sorted([*names, "__version__"]) == hs.__all__
    assert "__version__" in stub.read_text()  # typed for checkers too
    source = pathlib.Path(hs.__file__).read_text()
    for name in ("Clock", "ReduceOnPlateau", "find_lr"):  # not written a second time
        assert name not in source


def test_schedule_free_rules_are_in_the_rules_namespace() -> None:
    assert {"ScheduleFreeAdamWRule", "ScheduleFreeSGDRule"} <= set(hs.rules.__all__)
    assert hs.rules.get_rule("schedulefreeadamw") == hs.rules.ScheduleFreeAdamWRule()


# ---- one name per public object ------------------------------------------------------------


def _public_names() -> dict[str, object]:
    """Every name of the public surface: ``hs.X`` and ``hs.<namespace>.X``, by ``__all__``."""
    import types

    names: dict[str, object] = {}
    for name in hs.__all__:
        if name == "__version__":
            continue
        value = getattr(hs, name)
        names[f"hs.{name}"] = value
        if isinstance(value, types.ModuleType):
            for inner in value.__all__:
                names[f"hs.{name}.{inner}"] = getattr(value, inner)
    return {n: v for n, v in names.items() if not isinstance(v, types.ModuleType)}


def test_every_public_object_has_exactly_one_name() -> None:
    by_object: dict[int, list[str]] = {}
    for name, value in _public_names().items():
        by_object.setdefault(id(value), []).append(name)
    twice = [names for names in by_object.values() if len(names) > 1]
    assert not twice, twice
    assert len(by_object) >= 60  # the walk reads the real surface


def test_the_one_name_check_finds_a_second_name(monkeypatch) -> None:
    monkeypatch.setattr(hs.callbacks, "__all__", [*hs.callbacks.__all__, "Clock"])
    monkeypatch.setattr(hs.callbacks, "Clock", hs.Clock, raising=False)
    with pytest.raises(AssertionError, match=r"hs\.callbacks\.Clock"):
        test_every_public_object_has_exactly_one_name()


def test_an_unknown_name_of_a_namespace_is_an_attribute_error_naming_it() -> None:
    with pytest.raises(AttributeError, match=r"'hyperstep.schedules' has no attribute 'parse'"):
        hs.schedules.parse  # noqa: B018  (the parser is hs.parse)
    with pytest.raises(AttributeError, match=r"has no attribute 'find_lr'"):
        hs.tune.find_lr  # noqa: B018  (the range test is hs.find_lr)
