"""Controllers (PLACEHOLDER: being written; see issue 3)."""


class ReduceOnPlateau:
    def __init__(self, *args: object, **kwargs: object) -> None:
        raise NotImplementedError("being written")
