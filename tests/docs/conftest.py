"""The built site, shared by the documentation's tests."""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="session")
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``mkdocs build --strict`` into a fresh folder, once per run: under pytest-xdist the
    first worker to ask builds it in the run's own temporary folder, under a lock, and the
    others wait and read it. The folder (tests that write copy it first)."""
    if not hasattr(request.config, "workerinput"):  # one process
        return _build(tmp_path_factory.mktemp("site"))
    shared = tmp_path_factory.getbasetemp().parent  # this run's, above every worker's
    with open(shared / "site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = shared / "site"
        if not (out / ".built").exists():
            _build(out)
            (out / ".built").touch()
    return out


def _build(out: Path) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return out
