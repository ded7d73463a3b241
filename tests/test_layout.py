"""The layout rule: a module imports only rooms to its left (errors, backends, clock and
iteration, schedules, control, optim, diagnosis, tune, demo, cli)."""

import ast
import pathlib

import hyperstep

SRC = pathlib.Path(hyperstep.__file__).parent
ROOMS = ["errors", "clock", "schedules", "control", "optim", "diagnosis", "tune", "demo", "cli"]
RANK = {
    "errors": 0,
    "backends": 0.5,
    "clock": 1,
    "iteration": 1,  # the clock's room: who advances a clock, and when
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


# ---- the backend room -------------------------------------------------------------------------

PRIVATE = ("keras.src", "jax._src", "tensorflow.python")
#: modules outside backends/ that still reach a private API or branch on the backend, owned by
#: other work in progress; the set must shrink, never grow (a new one fails the test)
PENDING_PRIVATE: set[str] = set()
PENDING_BRANCH: set[str] = set()


def _source_files() -> list[pathlib.Path]:
    return [p for p in sorted(SRC.rglob("*.py")) if p.relative_to(SRC).parts[0] != "backends"]


def test_only_the_backend_room_imports_private_apis() -> None:
    found = set()
    for path in _source_files():
        if any(m.startswith(PRIVATE) for _, m in _imports(path)):
            found.add(path.relative_to(SRC).as_posix())
    assert found == PENDING_PRIVATE


def test_only_the_backend_room_branches_on_the_backend() -> None:
    found = set()
    for path in _source_files():
        relative = path.relative_to(SRC).as_posix()
        if "keras.backend.backend()" in path.read_text():
            found.add(relative)
    assert found == PENDING_BRANCH


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _top_level_imports(path: pathlib.Path) -> set[str]:
    """The hyperstep modules ``path`` imports when it is imported (not inside functions)."""
    found: set[str] = set()
    stack = list(ast.parse(path.read_text()).body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.If, ast.Try)):
            stack.extend(node.body + node.orelse + getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                stack.extend(handler.body)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("hyperstep"):
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("hyperstep"))
    return found


def test_no_import_cycles() -> None:
    modules = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}
    graph = {
        name: sorted(m for m in _top_level_imports(path) if m in modules and m != name)
        for name, path in modules.items()
    }
    # a package's __init__ importing its own submodules is how a package is built
    graph = {
        n: [m for m in deps if not (n == "hyperstep" or m.startswith(n + "."))]
        for n, deps in graph.items()
    }
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for dep in graph[node]:
            if state.get(dep) == 1:
                cycles.append([*path[path.index(dep) :], dep] if dep in path else [node, dep])
            elif dep not in state:
                visit(dep, [*path, dep])
        state[node] = 2

    for name in graph:
        if name not in state:
            visit(name, [name])
    assert not cycles, cycles


# ---- private names stay in their module -------------------------------------------------------

#: `importer <- module._name`: cross-module imports of a private name still to remove: none
#: left. The set must stay empty: a new one fails the test.
PENDING_PRIVATE_IMPORTS: set[str] = set()


def _private_imports(paths: dict[str, pathlib.Path]) -> set[str]:
    """Every ``from hyperstep.m import _name`` (at any level, inside functions too) in a module
    other than ``m``, as ``"importer <- m._name"``. A private *module* (``_common``) may be
    imported inside its own package; its private names may not."""
    found = set()
    for importer, path in paths.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    parts = alias.name.split(".")
                    private = [i for i, p in enumerate(parts) if p.startswith("_")]
                    package = ".".join(parts[: private[0]]) if private else ""
                    if private and not (importer + ".").startswith(package + "."):
                        found.add(f"{importer} <- {alias.name}")
            if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
                continue
            if not node.module.startswith("hyperstep") or node.module == importer:
                continue
            parts = node.module.split(".")
            private = [i for i, p in enumerate(parts) if p.startswith("_")]
            if private and not importer.startswith(".".join(parts[: private[0]]) + "."):
                found.add(f"{importer} <- {node.module}")  # a private module, from outside
            for alias in node.names:
                if not alias.name.startswith("_") or alias.name.startswith("__"):
                    continue
                submodule = f"{node.module}.{alias.name}"
                if submodule in paths and (importer + ".").startswith(node.module + "."):
                    continue  # a package's private module, imported inside the package
                found.add(f"{importer} <- {submodule}")
    return found


def _modules() -> dict[str, pathlib.Path]:
    return {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def test_no_module_imports_another_modules_private_name() -> None:
    found = _private_imports(_modules())
    assert found - PENDING_PRIVATE_IMPORTS == set(), "new private imports (make the name public)"
    assert PENDING_PRIVATE_IMPORTS - found == set(), "fixed: delete them from the list"
    assert len(PENDING_PRIVATE_IMPORTS) <= 0  # 51 before (the parser, doctor, optim ones)


def test_the_private_import_check_finds_one(tmp_path: pathlib.Path) -> None:
    package = tmp_path / "hyperstep" / "room"
    package.mkdir(parents=True)
    files = {
        "hyperstep.room.a": package / "a.py",
        "hyperstep.room.b": package / "b.py",
        "hyperstep.room._c": package / "_c.py",
        "hyperstep.other": tmp_path / "hyperstep" / "other.py",
    }
    files["hyperstep.room.a"].write_text("def _x(): ...\nx = 1\n")
    files["hyperstep.room.b"].write_text(
        "from hyperstep.room.a import x\nfrom hyperstep.room import _c\n"
        "def f():\n    from hyperstep.room.a import _x\n"
    )
    files["hyperstep.room._c"].write_text("")
    files["hyperstep.other"].write_text("from hyperstep.room._c import y\n")
    assert _private_imports(files) == {
        "hyperstep.room.b <- hyperstep.room.a._x",
        "hyperstep.other <- hyperstep.room._c",
    }


# ---- a test module per source module ------------------------------------------------------------

TESTS = pathlib.Path(__file__).parent
#: where the tests of each room live (the diagnosis room's are the doctor's)
TEST_ROOMS = {"diagnosis": "doctor"}
#: modules with no units of their own, and where what they do is tested
NO_UNITS = {
    "__main__.py": "`python -m hyperstep` calls cli.main.main (tests/cli/test_main.py)",
    "callbacks.py": "the `hs.callbacks` namespace, names only (tests/test_public_api.py)",
    "rules.py": "the `hs.rules` namespace, names only (tests/test_public_api.py)",
}


def _test_module(module: pathlib.Path) -> pathlib.Path:
    relative = module.relative_to(SRC)
    room = (
        TESTS / TEST_ROOMS.get(relative.parts[0], relative.parts[0])
        if len(relative.parts) > 1
        else TESTS
    )
    return room / f"test_{relative.stem.lstrip('_')}.py"


def test_every_source_module_has_a_test_module_of_its_name() -> None:
    """``src/hyperstep/<room>/<m>.py`` has its units tested in ``tests/<room>/test_<m>.py``
    (a package's ``__init__`` and a private module's underscore aside)."""
    modules = [p for p in sorted(SRC.rglob("*.py")) if p.name != "__init__.py"]
    missing = sorted(
        p.relative_to(SRC).as_posix()
        for p in modules
        if not _test_module(p).is_file() and p.relative_to(SRC).as_posix() not in NO_UNITS
    )
    assert not missing, f"no test module: {missing}"
    stale = sorted(set(NO_UNITS) - {p.relative_to(SRC).as_posix() for p in modules})
    assert not stale, f"NO_UNITS names modules that are gone: {stale}"
