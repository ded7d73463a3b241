"""``python -m hyperstep``: the command-line interface."""

from hyperstep.cli.main import main

raise SystemExit(main())
