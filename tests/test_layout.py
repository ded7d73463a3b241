"""The layout rule of DESIGN.md: a module imports only rooms to its left."""

import ast
import pathlib

import hyperstep

SRC = pathlib.Path(hyperstep.__file__).parent
ROOMS = ["errors", "clock", "schedules", "control", "optim", "doctor", "tune", "demo", "cli"]
RANK = {
    "errors": 0,
    "_backend": 0,
    "backends": 0,
    "clock": 1,
    **{r: i for i, r in enumerate(ROOMS) if i >= 2},
}
# the public surface and entry points may import from every room
EXEMPT = {"__init__.py", "__main__.py", "callbacks.py", "rules.py"}


def _room(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "hyperstep" or len(parts) < 2:
        return None
    return parts[1]


def _imports(path: pathlib.Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
    return found


def test_modules_import_only_rooms_to_their_left() -> None:
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC)
        if len(relative.parts) == 1 and relative.name in EXEMPT:
            continue
        own = relative.parts[0].removesuffix(".py")
        for line, module in _imports(path):
            room = _room(module)
            if room is None or room not in RANK or own not in RANK:
                continue
            if RANK[room] > RANK[own]:
                bad.append(f"{relative}:{line} imports {module} ({room} is right of {own})")
    assert not bad, "\n".join(bad)


def test_layout_rule_catches_a_backward_import(tmp_path: pathlib.Path) -> None:
    probe = tmp_path / "x.py"
    probe.write_text("from hyperstep.cli.main import main\n")
    assert _imports(probe) == [(1, "hyperstep.cli.main")]
    assert RANK[_room("hyperstep.cli.main")] > RANK["schedules"]
