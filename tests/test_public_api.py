"""The public surface: one place declares it, sorted, every name importable and documented."""

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
    assert {"Schedule", "parse", "from_keras", "sample", "clip", "minimum", "maximum"} <= exported
    # the node classes live in their modules and are not exported a second time
    assert [name for name in exported if name[0].isupper()] == ["Schedule"]
    from hyperstep.schedules import base, combinators, cycles, families

    for module in (base, combinators, cycles, families):
        for name in ("Step", "Epoch", "BinaryOp", "Negate", "Function", "Cosine", "Warmup"):
            if hasattr(module, name):
                assert name not in exported


def test_importing_hyperstep_imports_no_keras_and_doctor_is_callable() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, hyperstep as hs, hyperstep.doctor.report; "
        "print('keras' in sys.modules, callable(hs.doctor), set(hs.__all__) <= set(dir(hs)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "True", "True"]


def test_import_hyperstep_doctor_as_gives_the_package_which_is_callable() -> None:
    import types

    import hyperstep.doctor as d

    assert isinstance(d, types.ModuleType) and d is hs.doctor
    assert d.CODES and d.Finding is hs.Finding
    assert callable(d) and d.doctor.__name__ == "doctor"


def test_schedule_free_rules_are_in_the_rules_namespace() -> None:
    assert {"ScheduleFreeAdamWRule", "ScheduleFreeSGDRule"} <= set(hs.rules.__all__)
    assert hs.rules.get_rule("schedulefreeadamw") == hs.rules.ScheduleFreeAdamWRule()
