"""The doctor: why each variable does or does not train (PLACEHOLDER; see issue 5)."""

from typing import Any


class Finding:
    pass


class Diagnosis:
    pass


def doctor(model: Any, **kwargs: Any) -> Any:
    raise NotImplementedError("being written")
