"""CLI entry point (PLACEHOLDER: being written; see issue 2)."""


def main(argv: list[str] | None = None) -> int:
    raise NotImplementedError("being written")
