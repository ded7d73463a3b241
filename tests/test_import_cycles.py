"""No import cycle anywhere in the package.

Two graphs: the imports that run when a module is imported (module level), which must form a
DAG; and every import, inside functions too, whose circles are listed below until they are
gone. Imports under ``if TYPE_CHECKING:`` never run and are not counted; ``from package
import name`` counts as an import of ``package.name`` when that is a module, else of
``package``.
"""

import ast
import pathlib

import hyperstep

SRC = pathlib.Path(hyperstep.__file__).parent


def _module(path: pathlib.Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If):
            if "TYPE_CHECKING" not in ast.unparse(node.test):
                found += _top_level(node.body) + _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            found += _top_level(node.body) + _top_level(node.orelse) + _top_level(node.finalbody)
            for handler in node.handlers:
                found += _top_level(handler.body)
        else:
            found.append(node)
    return found


def _every_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """The import statements of ``body`` at any depth (functions, methods, branches)."""
    found: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found += _every_level(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for field in ("body", "orelse", "finalbody", "handlers"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                found += _every_level(inner)
    return found


def graph(every_level: bool = False) -> dict[str, set[str]]:
    modules = {_module(p): p for p in SRC.rglob("*.py")}
    statements = _every_level if every_level else _top_level
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in statements(ast.parse(path.read_text()).body):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                    base = f"{base}.{node.module}" if node.module else base
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.add(full if full in modules else base)
        edges[name] = {t for t in targets if t in modules and t != name}
    return edges


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules, or None (depth-first search, three colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        state[node] = 2
        stack.pop()
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_package_has_no_import_cycle() -> None:
    found = cycle(graph())
    assert found is None, " -> ".join(found or [])


def test_the_cycle_finder_finds_one() -> None:
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set()}) is None
    edges = graph()
    assert "hyperstep.schedules.base" in edges["hyperstep.schedules.families"]


#: Imports inside functions that close a circle, to remove (each by moving the code it needs
#: to the lower module, or the import to the module that needs it): none left. The list
#: must stay empty: a new circle fails.
PENDING_CIRCLES: set[str] = set()


def _closes_a_circle(edges: dict[str, set[str]], source: str, target: str) -> bool:
    """Whether ``target`` reaches ``source`` (so the edge ``source -> target`` is in a circle)."""
    seen, todo = {target}, [target]
    while todo:
        node = todo.pop()
        if node == source:
            return True
        for nxt in edges[node] - seen:
            seen.add(nxt)
            todo.append(nxt)
    return False


def test_no_import_circle_counting_imports_inside_functions() -> None:
    edges = graph(every_level=True)
    pending = {tuple(entry.split(" -> ")) for entry in PENDING_CIRCLES}
    still = {
        (a, b) for a, b in pending if b in edges.get(a, set()) and _closes_a_circle(edges, a, b)
    }
    assert still == pending, f"no longer a circle, delete from the list: {sorted(pending - still)}"
    without = {
        name: targets - {b for a, b in pending if a == name} for name, targets in edges.items()
    }
    found = cycle(without)
    assert found is None, " -> ".join(found or [])
    assert len(PENDING_CIRCLES) <= 0


def test_the_every_level_graph_sees_imports_inside_functions(tmp_path: pathlib.Path) -> None:
    source = "def f():\n    if True:\n        import os\nif TYPE_CHECKING:\n    import sys\n"
    found = _every_level(ast.parse(source).body)
    assert [ast.unparse(n) for n in found] == ["import os"]
    edges = graph(every_level=True)
    assert "hyperstep.schedules.language" in edges["hyperstep.cli.plot"]
    assert "hyperstep.schedules.language" not in graph()["hyperstep.cli.plot"]
