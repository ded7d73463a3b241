"""The public surface: one place declares it, sorted, every name importable and documented."""

import hyperstep as hs

AGREED = {
    "Clock",
    "Diagnosis",
    "Finding",
    "Group",
    "Hyperparameter",
    "ReduceOnPlateau",
    "StepOptimizer",
    "averaged_weights",
    "callbacks",
    "doctor",
    "errors",
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


def test_schedule_free_rules_are_in_the_rules_namespace() -> None:
    assert {"ScheduleFreeAdamW", "ScheduleFreeSGD"} <= set(hs.rules.__all__)
    assert hs.rules.get_rule("schedulefreeadamw") == hs.rules.ScheduleFreeAdamW()
