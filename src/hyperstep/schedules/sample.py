"""Sampling schedules for plots (PLACEHOLDER: being written; see issue 2)."""

from typing import Any


def sample(schedule: Any, steps: int) -> Any:
    raise NotImplementedError("being written")
