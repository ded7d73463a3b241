"""scheduled (PLACEHOLDER: being written; see issue 3)."""

from typing import Any


def scheduled(optimizer: Any, clock: Any = None, **hyperparameters: Any) -> Any:
    raise NotImplementedError("being written")
