"""``python -m build`` makes a wheel and an sdist; the wheel holds the package and only it.

Built without isolation (from the installed setuptools), so the test needs no network;
``make dist-check`` installs the wheel into a fresh virtual environment and runs it.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "src" / "hyperstep"


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "-o", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return out


def test_build_makes_one_wheel_and_one_sdist(dist: Path) -> None:
    assert len(list(dist.glob("hyperstep-*-py3-none-any.whl"))) == 1
    assert len(list(dist.glob("hyperstep-*.tar.gz"))) == 1


def test_the_wheel_holds_every_module_the_marker_and_the_entry_point(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        entry_points = archive.read(info).decode()
    expected = {
        f"hyperstep/{p.relative_to(PACKAGE).as_posix()}"
        for p in PACKAGE.rglob("*")
        if p.suffix in (".py", ".pyi", ".typed") and "__pycache__" not in p.parts
    }
    assert expected <= names, sorted(expected - names)
    assert "hyperstep/py.typed" in names
    assert "hyperstep/__init__.pyi" in names  # the surface: `import hyperstep` reads it
    assert "hyperstep = hyperstep.cli.main:main" in entry_points
    packaged = {n for n in names if not n.startswith("hyperstep-")}
    assert not [n for n in packaged if not n.startswith("hyperstep/")], "files outside the package"
    assert not [n for n in names if "/tests/" in n or n.startswith("tests/") or "conftest" in n]


def test_the_sdist_holds_the_sources_and_the_readme(dist: Path) -> None:
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    assert {"pyproject.toml", "README.md", "src/hyperstep/__init__.py"} <= names
