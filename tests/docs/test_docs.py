"""The documentation: ``mkdocs build --strict`` succeeds, the API reference names every
public name, every page is in the navigation, the built HTML shows no raw Sphinx role and
links nothing that is not there, loads nothing from another site, and draws every schedule
word. The pages' code blocks run in ``test_blocks.py``.
"""

from __future__ import annotations

import html.parser
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import hyperstep as hs

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"


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


#: a Sphinx role as reST writes it, left as text in the HTML (``:class:`~x.Y```)
RAW_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj):(?:`|<code>)")


def pages(site: Path) -> dict[Path, str]:
    return {p: p.read_text() for p in sorted(site.rglob("*.html"))}


def test_the_html_shows_no_raw_role_and_no_literal_block_marker(site: Path) -> None:
    found = {
        p.relative_to(site).as_posix(): RAW_ROLE.findall(text) or text.count("::</p>")
        for p, text in pages(site).items()
        if RAW_ROLE.search(text) or "::</p>" in text
    }
    assert not found, f"raw reST in the built pages: {found}"
    escaped = [p.name for p, text in pages(site).items() if re.search(r"</a>\\ |\\ s\b", text)]
    assert not escaped, f"reST's escaped space shows in {escaped}"  # "Finding\ s"
    html_text = pages(site)[site / "api" / "hyperstep.html"]
    assert 'href="#hyperstep.Clock"' in html_text  # the roles became links
    # the Clock's literal block, inside a list item, is code: a <pre>, not a run-on paragraph
    code = [re.sub(r"<[^>]+>", "", b) for b in re.findall(r"<pre>.*?</pre>", html_text, re.S)]
    assert any("for batch in data:\n    with clock.iteration():" in c for c in code)
    doctor = re.sub(r"<[^>]+>", "", pages(site)[site / "api" / "doctor.html"])
    assert "a Diagnosis of Findings;" in re.sub(r"\s+", " ", doctor)


class _Links(html.parser.HTMLParser):
    """Every ``href`` and ``src`` of a page, the ones the browser loads, and every ``id``."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.loads: list[str] = []  # scripts, images, style sheets, icons, fonts
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        for name in ("href", "src"):
            if name in values:
                self.links.append(values[name])
                if tag != "a" and values.get("rel") not in ("canonical",):
                    self.loads.append(values[name])
        if "id" in values:
            self.ids.add(values["id"])


def test_every_internal_link_resolves_and_nothing_loads_from_another_site(site: Path) -> None:
    parsed = {}
    for page, text in pages(site).items():
        parsed[page] = _Links()
        parsed[page].feed(text)
    broken, external = [], []
    for page, links in parsed.items():
        where = page.relative_to(site).as_posix()
        external += [(where, u) for u in links.loads if urlsplit(u).scheme or u.startswith("//")]
        for link in links.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:
                continue
            path = unquote(parts.path)
            if path.startswith("/"):  # 404.html links from the site's root
                target = (site / path.lstrip("/")).resolve()
            else:
                target = (page.parent / path).resolve() if path else page
            if not target.is_file():  # a folder too: opened from disk, a directory listing
                broken.append((where, link))
            elif parts.fragment and target.suffix == ".html":
                if unquote(parts.fragment) not in parsed[target].ids:
                    broken.append((where, link))
    assert not broken, f"links to nothing: {broken[:20]} ({len(broken)} in all)"
    assert not external, f"loaded from another site (offline, nothing shows): {external[:10]}"
    assert sum(len(p.links) for p in parsed.values()) > 1000  # the check read real pages


def test_every_schedule_word_is_drawn_by_the_build(site: Path) -> None:
    words = [
        n
        for n in hs.schedules.__all__
        if isinstance(getattr(hs.schedules, n), type)
        and issubclass(getattr(hs.schedules, n), hs.schedules.Schedule)
        and n != "Schedule"
    ]
    assert len(words) >= 14
    api = (site / "api" / "schedules.html").read_text()
    for word in words:
        figure = site / "figures" / "schedules" / f"{word}.png"
        assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", word
        assert f"../figures/schedules/{word}.png" in api, f"{word}: no figure on its page"
    assert not list(DOCS.rglob("figures")), "the figures are built, not committed"


def test_no_page_installs_hyperstep_as_if_it_were_published() -> None:
    for page in [*DOCS.rglob("*.md"), ROOT / "README.md"]:
        found = re.findall(r"pip install ['\"]?hyperstep\b", page.read_text())
        assert not found, f"{page.name}: {found}: hyperstep is not on PyPI; install a checkout"


def test_the_index_links_every_page() -> None:
    index = (DOCS / "index.md").read_text()
    pages = [p.relative_to(DOCS).as_posix() for p in DOCS.glob("*.md") if p.name != "index.md"]
    missing = [p for p in [*pages, "api/index.md"] if f"]({p})" not in index]
    assert not missing, f"docs/index.md does not link {missing}"
