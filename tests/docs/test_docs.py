"""The documentation: ``mkdocs build --strict`` succeeds, the API reference names every
public name, and the code on the user's pages runs as written.

``recipes.md``, ``scaling.md`` and ``backends.md`` show excerpts of longer programs (the
old TF1 code beside the new): the programs themselves are ``examples/`` and the tests that
run them (``tests/examples``, ``tests/distribute``, ``tests/backends``).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import hyperstep as hs
from hyperstep.cli.main import main

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
#: pages whose every python block runs, in order, in one namespace per page
RUNNABLE = ["index.md", "runtime.md"]


def blocks(page: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out


def public_names() -> dict[str, str]:
    """``{public name: the name of the object it is}`` (``cosine`` is the class ``Cosine``)."""
    import hyperstep.errors

    names = {f"hyperstep.{n}": n for n in hs.__all__ if n != "__version__"}
    for space in (hs.schedules, hs.callbacks, hs.rules, hs.tune):
        for n in space.__all__:
            names[f"{space.__name__}.{n}"] = getattr(getattr(space, n), "__name__", n)
    errors = [n for n in dir(hyperstep.errors) if n.endswith("Error")]
    return names | {f"hyperstep.errors.{n}": n for n in errors}


def test_the_api_reference_documents_every_public_name(site: Path) -> None:
    html = "".join(p.read_text() for p in (site / "api").rglob("*.html"))
    documented = set(re.findall(r'id="(hyperstep[\w.]*)"', html))
    missing = [
        name
        for name, target in public_names().items()
        if name not in documented
        and not any(d.endswith(f".{name.rsplit('.')[-1]}") for d in documented)
        and not any(d.endswith(f".{target}") for d in documented)
    ]
    assert not missing, f"not in the API reference: {missing}"
    assert "hyperstep.schedules.families.Cosine" in documented  # the check reads real anchors


def test_every_page_is_in_the_navigation_and_no_page_points_outside_the_repository() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for page in DOCS.rglob("*.md"):
        relative = page.relative_to(DOCS).as_posix()
        assert relative in nav, f"{relative} is not in mkdocs.yml's nav"
        text = page.read_text()
        assert not re.search(r"DESIGN\.md|STYLE\.md|PRIOR_ART\.md|seeds/", text), relative


@pytest.mark.parametrize("page", RUNNABLE)
def test_python_blocks_of_the_page_run(page: str) -> None:
    namespace: dict[str, object] = {"__name__": f"docs_{page}"}
    found = blocks(page, "python")
    assert found
    for index, code in enumerate(found):
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(code, f"{page} block {index}", "exec"), namespace)


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_every_python_block_of_every_page_is_valid_python(page: str) -> None:
    for index, code in enumerate(blocks(page, "python")):
        compile(code, f"{page} block {index}", "exec")  # the excerpts too


def test_plot_commands_of_the_docs_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    lines = [
        line
        for page in ("index.md", "cli.md")
        for block in blocks(page, "sh")
        for line in block.splitlines()
        if line.startswith("hyperstep plot")
    ]
    assert len(lines) >= 3
    for line in lines:
        argv = shlex.split(line.split("#")[0])[1:]
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(argv) == 0, line
    assert (tmp_path / "lr.png").is_file()
