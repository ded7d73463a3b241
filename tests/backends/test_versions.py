"""Units of hyperstep.backends.versions: the verified ranges, ``installed``, ``verified``,
``missing`` and ``reach`` (every private API present: tests/backends/test_internals.py)."""

from __future__ import annotations

import importlib.metadata

import pytest

from hyperstep.backends import versions
from hyperstep.backends.versions import (
    PRIVATE_APIS,
    VERIFIED,
    PrivateAPI,
    installed,
    missing,
    reach,
    verified,
)
from hyperstep.errors import BackendError


def test_installed_is_the_package_version_or_none() -> None:
    assert installed("keras") == importlib.metadata.version("keras")
    assert installed("numpy") == importlib.metadata.version("numpy")
    assert installed("hs_no_such_package") is None


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("3.10.0", True),
        ("3.15.1", True),
        ("3.12.0rc1", True),
        ("3.9.9", False),
        ("3.15.2", False),
        ("4.0", False),
        ("3.12.0+cu121", True),
    ],
)
def test_verified_compares_releases(version: str, expected: bool) -> None:
    low, high = VERIFIED["keras"]
    assert (low, high) == ("3.10.0", "3.15.1")  # the range the cases above are written for
    assert verified("keras", version) is expected


def test_verified_of_the_installed_and_of_a_package_not_installed(monkeypatch) -> None:
    monkeypatch.setattr(versions, "installed", lambda package: None)
    assert verified("torch") is False


def _api(monkeypatch, probe, package: str = "keras") -> str:
    name = "keras.hs_probe"
    monkeypatch.setitem(PRIVATE_APIS, name, PrivateAPI(name, package, "a test", probe))
    return name


def test_reach_returns_the_probe_result_or_the_fallback(monkeypatch) -> None:
    found = object()
    assert reach(_api(monkeypatch, lambda: found)) is found
    assert reach("keras.hs_probe", get=lambda: 3) == 3

    def moved():
        raise AttributeError("gone")

    assert reach(_api(monkeypatch, moved), fallback=None) is None


def test_reach_of_a_moved_api_explains_the_version(monkeypatch) -> None:
    def moved():
        raise ImportError("no module x")

    name = _api(monkeypatch, moved)
    with pytest.raises(BackendError, match=r"private `keras.hs_probe` \(a test\)") as caught:
        reach(name)
    message = str(caught.value)
    low, high = VERIFIED["keras"]
    assert f"keras {installed('keras')} does not provide (ImportError: no module x)" in message
    assert f"verified with keras {low} to {high}" in message
    assert isinstance(caught.value.__cause__, ImportError)


def test_missing_advice_depends_on_the_range(monkeypatch) -> None:
    name = _api(monkeypatch, lambda: None)
    monkeypatch.setattr(versions, "installed", lambda package: "3.12.0")
    assert "hyperstep bug" in str(missing(name, AttributeError("x")))
    monkeypatch.setattr(versions, "installed", lambda package: "9.0.0")
    advice = str(missing(name, AttributeError("x")))
    assert f'pip install "keras=={VERIFIED["keras"][1]}"' in advice and "keras 9.0.0" in advice


def test_a_backend_error_inside_the_probe_passes_through(monkeypatch) -> None:
    def refuses():
        raise BackendError("own")

    with pytest.raises(BackendError, match=r"^own$"):
        reach(_api(monkeypatch, refuses), fallback=None)


def test_every_private_api_names_a_verified_package() -> None:
    for name, api in PRIVATE_APIS.items():
        assert api.name == name and api.package in VERIFIED and api.use
