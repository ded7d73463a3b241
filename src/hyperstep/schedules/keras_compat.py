"""Keras compatibility (PLACEHOLDER: being written; see issue 2)."""

from typing import Any


def from_keras(schedule: Any) -> Any:
    raise NotImplementedError("being written")
