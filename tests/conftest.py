"""Test-wide settings: one Keras backend per pytest pass, quiet logs, fixed seeds.

**Passes.** ``KERAS_BACKEND`` (default ``tensorflow``) names the pass, as in Keras's CI
matrix; ``make test`` runs the TensorFlow pass, then the JAX and the torch pass. A test runs
in the passes of the backends it declares:

- ``@pytest.mark.backend("jax", "torch")`` (on a test, a parameter or a module's
  ``pytestmark``): in those passes only;
- a test parametrized by an argument named ``backend`` (``@pytest.mark.parametrize("backend",
  ["tensorflow", "jax"])``, or a fixture ``def backend(request)`` with ``params``): each
  case in its own backend's pass;
- anything else (the backend-agnostic units, TensorFlow's own checks): the TensorFlow pass.

The JAX and torch passes skip, without importing them, test files that declare no backend
(and the doctests of ``src/``).

**Workers.** A worker script (``tests/backends/worker.py`` and the like) computes a JSON
``RESULT`` under one backend. The ``workers`` fixture runs it in this process for the pass's
backend, reads TensorFlow's result from the golden file the TensorFlow pass wrote (keyed by
the code's content, so never stale), and only for anything else starts a process (the end
of the session lists any it started). ``HYPERSTEP_WORKERS=subprocess`` starts a process for
every backend, as before the passes.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
BACKEND = os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import contextlib  # noqa: E402
import gc  # noqa: E402
import hashlib  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import runpy  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Iterable, Iterator, Mapping  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

# property tests draw the same examples on every run and machine: CI cannot fail by chance
settings.register_profile("hyperstep", derandomize=True, database=None)
settings.load_profile("hyperstep")

#: A guard against a hung subprocess, never a speed check: generous enough for a loaded
#: machine (the whole suite took 23 minutes on a loaded 2-core one). Set
#: HYPERSTEP_TEST_TIMEOUT=seconds to change it.
HANG_TIMEOUT = float(os.environ.get("HYPERSTEP_TEST_TIMEOUT", "3600"))

BACKENDS = ("tensorflow", "jax", "torch")
#: what a test file must contain to be collected in the JAX and torch passes
_DECLARES = re.compile(r"mark\.backend\(|parametrize\(\s*\(?\s*[\"']backend[\"']|def backend\(")


@pytest.fixture(scope="session")
def hang_timeout() -> float:
    """Seconds a test's subprocess may run before it counts as hung (:data:`HANG_TIMEOUT`)."""
    return HANG_TIMEOUT


@pytest.fixture(autouse=True)
def _seed() -> None:
    import keras

    keras.utils.set_random_seed(0)


# ---- one backend per pass ---------------------------------------------------------------------
def backends_of(item: pytest.Item) -> set[str]:
    """The passes ``item`` runs in (see the module docstring)."""
    mark = item.get_closest_marker("backend")
    names = set(mark.args) if mark is not None else set(BACKENDS)
    callspec = getattr(item, "callspec", None)
    if callspec is not None and "backend" in callspec.params:
        names &= {callspec.params["backend"]}
    elif mark is None:
        names = {"tensorflow"}
    return names


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if collection_path.suffix != ".py" or collection_path.name.startswith("test_"):
        if BACKEND == "tensorflow" or collection_path.suffix != ".py":
            return None
        return None if _DECLARES.search(collection_path.read_text(encoding="utf-8")) else True
    if Path(__file__).parent in collection_path.parents:
        return True  # the worker scripts and helpers here: no doctests, some read sys.argv
    return None if BACKEND == "tensorflow" else True  # src/'s doctests: the TensorFlow pass


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        unknown = backends_of(item) - set(BACKENDS)
        if unknown:
            raise pytest.UsageError(f"{item.nodeid}: no pass for backend(s) {sorted(unknown)}")
    kept = [item for item in items if BACKEND in backends_of(item)]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if BACKEND not in backends_of(i)])
        items[:] = kept
    items.sort(key=lambda item: _LONGEST_FIRST.get(item.nodeid.split("::")[0], 0), reverse=True)


#: the fast passes' longest files (TensorFlow pass, CPU seconds per file in one process, the
#: tests' own: 10 s and more): they run first (a stable sort), so that ``--dist loadfile``
#: hands the workers short files last and the two finish together instead of one waiting
#: while the other runs a long file
_LONGEST_FIRST = {
    path: rank
    for rank, path in enumerate(
        reversed(
            (
                "tests/optim/test_keras_contracts.py",
                "tests/docs/test_blocks.py",
                "tests/control/test_controllers.py",
                "tests/control/test_value_forms.py",
                "tests/optim/test_scheduled.py",
                "tests/schedules/test_total.py",
                "tests/optim/test_scheduled_training.py",
                "tests/tune/test_ray.py",
                "tests/optim/test_rules.py",
                "tests/optim/test_schedule_free.py",
                "tests/control/test_remote_schedule.py",
                "tests/schedules/test_read_paths.py",
                "tests/distribute/test_mirrored.py",
                "tests/control/test_reading.py",
                "tests/optim/test_assign_exact.py",
                "tests/tune/test_lr_find.py",
                "tests/optim/test_iteration_order.py",
                "tests/control/test_fit_total.py",
                "tests/control/test_resume_order.py",
                "tests/optim/test_loss_scale_skips.py",
                "tests/control/test_callbacks.py",
                "tests/control/test_fit_epochs.py",
                "tests/control/test_resume_matrix.py",
                "tests/control/test_cooldown.py",
                "tests/cli/test_usage_errors.py",
                "tests/control/test_remote.py",
            )
        ),
        start=1,
    )
}


# ---- workers ----------------------------------------------------------------------------------
_STARTED: list[str] = []  # processes started for a backend other than the pass's


def _parse(out: str, what: str, err: str = "") -> Any:
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert lines, f"{what} printed no RESULT line:\n{err[-4000:]}"
    return json.loads(lines[-1].removeprefix("RESULT "))


def _run_here(worker: Path, args: tuple[str, ...]) -> Any:
    """Run ``worker`` as ``__main__`` in this process (the pass's backend) and read its
    RESULT line; warnings behave as in a fresh process (the worker records its own)."""
    import keras

    out = io.StringIO()
    argv, path = sys.argv, list(sys.path)
    sys.argv = [str(worker), *args]
    sys.path.insert(0, str(worker.parent))
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(out):
            warnings.resetwarnings()
            warnings.simplefilter("ignore")
            try:
                runpy.run_path(str(worker), run_name="__main__")
            except SystemExit as exit:  # a worker may end with sys.exit(0)
                assert exit.code in (None, 0), f"{worker.name} exited with {exit.code}"
    finally:
        sys.argv, sys.path[:] = argv, path
        keras.config.set_dtype_policy("float32")
        keras.backend.clear_session()
    return _parse(out.getvalue(), f"{BACKEND} {worker.name} (in this process)")


def _start(worker: Path, backend: str, args: tuple[str, ...]) -> subprocess.Popen[str]:
    env = {**os.environ, "KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("JAX_ENABLE_X64", None)
    return subprocess.Popen(
        [sys.executable, str(worker), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str], what: str, timeout: float) -> Any:
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(
            f"{what} still ran after {timeout:.0f} s and was killed (a hang guard; set "
            f"HYPERSTEP_TEST_TIMEOUT=seconds on a very slow machine):\n{err[-4000:]}"
        )
    assert process.returncode == 0, f"{what} failed:\n{err[-4000:]}"
    return _parse(out, what, err)


def _code_key(worker: Path, args: tuple[str, ...]) -> str:
    """A digest of what a worker's result depends on: hyperstep's source, the worker and the
    helpers beside it (not the test modules), its arguments, the installed Keras and
    TensorFlow."""
    from importlib.metadata import PackageNotFoundError, version

    digest = hashlib.sha256(repr(args).encode())
    spec = importlib.util.find_spec("hyperstep")
    assert spec is not None and spec.origin is not None
    package = Path(spec.origin).parent
    files = [(package, file) for file in sorted(package.rglob("*.py"))]
    helpers = sorted(worker.parent.glob("*.py"))
    files += [(worker.parent, f) for f in helpers if f == worker or not f.name.startswith("test_")]
    for folder, file in files:
        digest.update(str(file.relative_to(folder)).encode() + file.read_bytes())
    for package in ("keras", "tensorflow", "tensorflow-cpu"):
        with contextlib.suppress(PackageNotFoundError):
            digest.update(f"{package}=={version(package)}".encode())
    return digest.hexdigest()


class WorkerResults(Mapping[str, Any]):
    """``{backend: worker's RESULT}``, each computed on first use (see the module docstring)."""

    def __init__(
        self,
        worker: Path,
        backends: Iterable[str],
        timeout: float,
        args: tuple[str, ...],
        golden: Path,
    ) -> None:
        self.worker, self.backends, self.timeout, self.args = worker, tuple(backends), timeout, args
        self.golden = golden / f"{worker.parent.name}-{worker.stem}-{'-'.join(args)}.json"
        self.found: dict[str, Any] = {}
        self.processes: dict[str, subprocess.Popen[str]] = {}
        if os.environ.get("HYPERSTEP_WORKERS") == "subprocess":  # all at once, as before
            for backend in self.backends:
                self.processes[backend] = _start(worker, backend, args)

    def __iter__(self) -> Iterator[str]:
        return iter(self.backends)

    def __len__(self) -> int:
        return len(self.backends)

    def __getitem__(self, backend: str) -> Any:
        if backend not in self.backends:
            raise KeyError(backend)
        if backend not in self.found:
            self.found[backend] = self._compute(backend)
        return self.found[backend]

    def _compute(self, backend: str) -> Any:
        what = f"{backend} worker {self.worker.name}"
        if backend in self.processes:
            return _finish(self.processes.pop(backend), what, self.timeout)
        if backend == BACKEND:
            result = _run_here(self.worker, self.args)
            if backend == "tensorflow":  # the other passes compare with it
                key = _code_key(self.worker, self.args)
                self.golden.parent.mkdir(parents=True, exist_ok=True)
                self.golden.write_text(json.dumps({"key": key, "result": result}))
            return result
        if backend == "tensorflow" and self.golden.exists():
            stored = json.loads(self.golden.read_text())
            if stored["key"] == _code_key(self.worker, self.args):
                return stored["result"]
        _STARTED.append(f"{what} {' '.join(self.args)}".rstrip())
        return _finish(_start(self.worker, backend, self.args), what, self.timeout)


@pytest.fixture(scope="session")
def golden_dir(request: pytest.FixtureRequest) -> Path:
    """Where the TensorFlow pass leaves the results the other passes compare with
    (``HYPERSTEP_GOLDEN_DIR``, default ``.pytest-golden/`` in the checkout)."""
    default = request.config.rootpath / ".pytest-golden"
    return Path(os.environ.get("HYPERSTEP_GOLDEN_DIR", default))


@pytest.fixture(scope="session")
def workers(golden_dir: Path) -> Callable[..., Mapping[str, Any]]:
    """``workers(worker, backends, timeout=None, args=())``: a :class:`WorkerResults`."""

    def run(
        worker: Path,
        backends: Iterable[str],
        timeout: float | None = None,
        args: Iterable[str] = (),
    ) -> Mapping[str, Any]:
        timeout = HANG_TIMEOUT if timeout is None else timeout
        return WorkerResults(worker, backends, timeout, tuple(args), golden_dir)

    return run


def pytest_report_header(config: pytest.Config) -> str:
    return f"hyperstep pass: KERAS_BACKEND={BACKEND}"


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)  # a pytest-xdist worker's
    if output is not None:
        output["hyperstep_started"] = list(_STARTED)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:  # pytest-xdist, on the controller
    _STARTED.extend(getattr(node, "workeroutput", {}).get("hyperstep_started", []))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _STARTED:
        terminalreporter.write_line(
            f"worker processes started for a backend other than this pass's ({len(_STARTED)}):"
            " declare the test's backend to run it in that pass instead"
        )
        for line in _STARTED:
            terminalreporter.write_line(f"  {line}")


def pytest_collection_finish(session: pytest.Session) -> None:
    """The objects alive after collection (TensorFlow's, Keras's, torch's modules: millions)
    move to the collector's permanent generation: a full collection during a test then scans
    only what tests made (in a whole pass full collections had cost a test up to a minute)."""
    if os.environ.get("HYPERSTEP_TEST_GC") != "default":
        gc.collect()
        gc.freeze()
