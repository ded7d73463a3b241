"""The built site opened as the README says, from disk (``file://``), in headless Chromium:
every internal link of every page is followed in the browser and lands on a page of the
site (never a directory listing) and on the anchor it names."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = next(
    (
        found
        for name in ("chromium", "chromium-browser", "google-chrome")
        if (found := shutil.which(name))
    ),
    None,
)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Chromium is not installed (apt-get install chromium): the built site is not "
    "opened in a browser on this machine",
)

#: opened in the browser next to the pages: loads each page, then each page each of its
#: links leads to, in an iframe, and writes what it found into ``data-result``
HARNESS = """<!DOCTYPE html><html><body><iframe id="frame"></iframe><script>
const PAGES = %s;
const frame = document.getElementById("frame");
function load(url) {
  return new Promise((resolve) => {
    const late = setTimeout(() => resolve(null), 20000);  // virtual time: a load that hangs
    frame.onload = () => {
      clearTimeout(late);
      let doc = null;
      try { doc = frame.contentDocument; } catch (error) {}
      resolve(doc);
    };
    frame.src = url;
  });
}
(async () => {
  const result = {pages: 0, links: 0, followed: 0, problems: []};
  const targets = new Map();  // the URL of a page, without its fragment -> [page, link]
  const base = new URL(".", document.URL);
  for (const page of PAGES) {
    const doc = await load(page);
    result.pages += 1;
    for (const a of doc.querySelectorAll("a[href]")) {
      const url = new URL(a.getAttribute("href"), doc.URL);
      if (url.protocol !== "file:") continue;
      result.links += 1;
      if (/[.](png|svg|jpg|inv|xml|gz|json|txt)$/.test(url.pathname)) continue;  // not a page
      const key = url.href.split("#")[0];
      if (!targets.has(key)) targets.set(key, []);
      targets.get(key).push([page, a.getAttribute("href"), decodeURIComponent(url.hash.slice(1))]);
    }
  }
  for (const [target, sources] of targets) {
    const doc = await load(target);
    result.followed += 1;
    const page = target.replace(base.href, "");
    if (doc === null || doc.querySelector(".md-content") === null) {
      const what = doc === null ? "nothing" : doc.title;
      result.problems.push([sources[0][0], sources[0][1], "opens " + what]);
      continue;
    }
    for (const [from, href, id] of sources) {
      if (id && doc.getElementById(id) === null) {
        result.problems.push([from, href, "no anchor #" + id + " in " + page]);
      }
    }
  }
  document.body.setAttribute("data-result", JSON.stringify(result));
})();
</script></body></html>
"""


def test_every_internal_link_of_every_page_opens_a_page_and_its_anchor_from_disk(
    site: Path, tmp_path: Path
) -> None:
    site = Path(shutil.copytree(site, tmp_path / "site"))  # the harness goes beside the pages
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    pages.remove("404.html")  # a server's page, never linked
    harness = site / "follow-every-link.html"
    harness.write_text(HARNESS % json.dumps(pages))
    done = subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
            "--allow-file-access-from-files",  # the harness reads the pages it opens
            f"--user-data-dir={tmp_path / 'profile'}",  # no other Chromium's profile
            "--virtual-time-budget=600000", "--dump-dom", harness.as_uri(),
        ],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = re.search(r'data-result="([^"]*)"', done.stdout)
    assert found is not None, done.stdout[-3000:]
    result = json.loads(html.unescape(found[1]))
    assert result["problems"] == [], result["problems"][:20]
    assert result["pages"] == len(pages) >= 20  # every page was opened
    assert result["links"] > 1000 and result["followed"] >= len(pages)  # and followed from
