"""The documentation: ``mkdocs build --strict`` succeeds, the API reference names every
public name, and every page is in the navigation. The pages' code blocks run in
``test_blocks.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import hyperstep as hs

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"


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
