"""The pytest passes of tests/conftest.py: which tests each backend's pass runs, and the
worker results read in-process, from a golden file or from a process."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

_spec = importlib.util.spec_from_file_location(
    "passes_conftest", Path(__file__).with_name("conftest.py")
)
assert _spec is not None and _spec.loader is not None
passes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(passes)

WORKER = """
import json, os, sys
print("noise")
print("RESULT " + json.dumps({"argv": sys.argv[1:], "backend": os.environ["KERAS_BACKEND"],
                              "pid": os.getpid()}))
"""


class Item:
    """What ``backends_of`` reads of a collected test."""

    def __init__(self, marks: tuple[tuple[str, ...], ...] = (), params: dict | None = None):
        self.marks = [pytest.mark.backend(*names).mark for names in marks]
        if params is not None:
            self.callspec = SimpleNamespace(params=params)

    def get_closest_marker(self, name: str) -> Any:
        return self.marks[0] if self.marks and name == "backend" else None


def test_an_undeclared_test_runs_in_the_tensorflow_pass_only() -> None:
    assert passes.backends_of(Item()) == {"tensorflow"}
    assert passes.backends_of(Item(params={"dtype": "float16"})) == {"tensorflow"}


def test_a_backend_parameter_puts_each_case_in_its_pass() -> None:
    assert passes.backends_of(Item(params={"backend": "jax"})) == {"jax"}


def test_a_marker_names_its_passes_and_a_parameter_narrows_them() -> None:
    assert passes.backends_of(Item(marks=(("jax", "torch"),))) == {"jax", "torch"}
    both = Item(marks=(("jax", "torch"),), params={"backend": "torch"})
    assert passes.backends_of(both) == {"torch"}
    assert passes.backends_of(Item(marks=(("jax",),), params={"backend": "torch"})) == set()


def test_other_passes_collect_only_files_that_declare_a_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    declared = tmp_path / "test_declared.py"
    declared.write_text('@pytest.mark.parametrize("backend", ["jax"])\ndef test(backend): ...')
    plain = tmp_path / "test_plain.py"
    plain.write_text("def test(): ...")
    helper = tmp_path / "helper_worker.py"
    helper.write_text("x = 1")
    config = None
    assert passes.pytest_ignore_collect(plain, config) is None  # the TensorFlow pass: all
    worker = Path(__file__).parent / "backends" / "fresh_worker.py"  # reads sys.argv
    assert passes.pytest_ignore_collect(worker, config) is True  # no doctests among the tests
    monkeypatch.setattr(passes, "BACKEND", "jax")
    assert passes.pytest_ignore_collect(declared, config) is None
    assert passes.pytest_ignore_collect(plain, config) is True
    assert passes.pytest_ignore_collect(helper, config) is True  # its doctests: TensorFlow's


def _results(tmp_path: Path, backends: list[str], args: tuple[str, ...] = ()) -> Any:
    worker = tmp_path / "tiny_worker.py"
    if not worker.exists():
        worker.write_text(WORKER)
    return passes.WorkerResults(worker, backends, 60.0, args, tmp_path / "golden")


def test_the_pass_backend_runs_in_this_process_and_tensorflow_leaves_a_golden_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(passes, "BACKEND", "tensorflow")
    monkeypatch.setattr(sys, "argv", ["pytest"])
    found = _results(tmp_path, ["tensorflow"], ("a", "b"))["tensorflow"]
    assert found["pid"] == os.getpid() and found["argv"] == ["a", "b"]
    assert sys.argv == ["pytest"]  # put back
    stored = json.loads((tmp_path / "golden" / f"{tmp_path.name}-tiny_worker-a-b.json").read_text())
    assert stored["result"] == found


def test_other_passes_read_tensorflow_from_the_golden_file_while_the_code_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(passes, "BACKEND", "tensorflow")
    _results(tmp_path, ["tensorflow"])["tensorflow"]
    golden = tmp_path / "golden" / f"{tmp_path.name}-tiny_worker-.json"
    stored = json.loads(golden.read_text())
    golden.write_text(json.dumps({**stored, "result": "from the file"}))
    monkeypatch.setattr(passes, "BACKEND", "jax")
    assert _results(tmp_path, ["tensorflow", "jax"])["tensorflow"] == "from the file"
    # the worker's folder changed: the file is stale, TensorFlow runs in a process
    (tmp_path / "tiny_worker.py").write_text(WORKER + "\n# changed\n")
    started = len(passes._STARTED)
    fresh = _results(tmp_path, ["tensorflow", "jax"])["tensorflow"]
    assert fresh["backend"] == "tensorflow" and fresh["pid"] != os.getpid()
    assert len(passes._STARTED) == started + 1  # listed at the end of the session
    passes._STARTED.pop()


def test_a_failing_worker_fails_with_its_output(tmp_path: Path) -> None:
    worker = tmp_path / "bad_worker.py"
    worker.write_text("import sys\nprint('no result')\nsys.exit(3)")
    results = passes.WorkerResults(worker, ["torch"], 60.0, (), tmp_path)
    with pytest.raises(AssertionError, match=r"torch worker bad_worker\.py failed"):
        results["torch"]  # (this test runs in the TensorFlow pass: torch in a process)
    passes._STARTED.pop()
