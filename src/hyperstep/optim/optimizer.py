"""StepOptimizer (PLACEHOLDER: being written; see issue 4)."""


class StepOptimizer:
    def __init__(self, *args: object, **kwargs: object) -> None:
        raise NotImplementedError("being written")
