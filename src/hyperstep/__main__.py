"""``python -m hyperstep``: the command-line interface."""

from hyperstep.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
