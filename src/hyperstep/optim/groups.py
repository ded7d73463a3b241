"""Group (PLACEHOLDER: being written; see issue 4)."""


class Group:
    def __init__(self, *args: object, **kwargs: object) -> None:
        raise NotImplementedError("being written")
