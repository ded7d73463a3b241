# Two commands on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip

.PHONY: demo test test-slow test-oldest lint bench docs dist-check clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	$(PIP) install -q -e ".[demo]"
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(BIN)/python
	$(PIP) install -q -e ".[dev]" "torch==2.13.0"
	touch $@

demo: $(VENV)/.demo-installed
	$(BIN)/hyperstep demo

# One pytest pass per Keras backend, KERAS_BACKEND fixed for the pass (as Keras's CI matrix):
# TensorFlow runs the backend-agnostic tests, the doctests and its own; JAX and torch the
# tests that declare their backend (`@pytest.mark.backend(...)`, see tests/conftest.py),
# comparing with the results the TensorFlow pass left in .pytest-golden/.
# The fast passes in JOBS processes (pytest-xdist), every test file whole in one of them so
# its module fixtures run once: `make test JOBS=1` for one process. The slow checks (Ray,
# torch.compile, several workers on ports) run one at a time.
PASSES := tensorflow jax torch
JOBS ?= 2
PYTEST := $(BIN)/python -m pytest $(if $(filter-out 1,$(JOBS)),-n $(JOBS) --dist loadfile)
SERIAL := $(BIN)/python -m pytest

test: $(VENV)/.dev-installed
	KERAS_BACKEND=tensorflow $(PYTEST) src tests -m "not slow"
	KERAS_BACKEND=jax $(PYTEST) tests -m "not slow"
	KERAS_BACKEND=torch $(PYTEST) tests -m "not slow"

# compile-heavy checks (torch.compile, multi-worker): CI runs them after `make test`
test-slow: $(VENV)/.dev-installed
	@for backend in $(PASSES); do \
		KERAS_BACKEND=$$backend $(SERIAL) tests -m slow || [ $$? -eq 5 ] || exit 1; \
	done

# the oldest Keras and TensorFlow that pyproject claims, in a second venv: the schedule,
# optimizer and control tests (tests needing a newer Keras skip, saying so)
OLDEST := .venv-oldest
$(OLDEST)/.installed: pyproject.toml
	$(PY) -m venv $(OLDEST)
	$(OLDEST)/bin/pip install -q --upgrade pip
	$(OLDEST)/bin/pip install -q -e . "keras==3.10.0" "tensorflow-cpu==2.19.1" pytest hypothesis \
		pytest-xdist jax optax "torch==2.13.0"
	touch $@

test-oldest: $(OLDEST)/.installed
	@for backend in $(PASSES); do \
		KERAS_BACKEND=$$backend $(OLDEST)/bin/python -m pytest -n $(JOBS) --dist loadfile \
			tests/schedules tests/optim tests/control tests/test_clock.py \
			tests/backends/test_steering.py -m "not slow" \
			|| [ $$? -eq 5 ] || exit 1; \
	done
# the user's guide and API reference (mkdocs-material; the schedule figures drawn from the
# code by docs/_ext/hooks.py), warnings as errors, into site/: open site/index.html
docs: $(VENV)/.dev-installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

# the wheel, installed into a fresh virtual environment with only keras and jax: import,
# `hyperstep plot --text`, one training step on JAX (see .ci/dist_check.py)
dist-check: $(VENV)/.dev-installed
	rm -rf dist .dist-check
	$(BIN)/python -m build -o dist .
	$(PY) -m venv .dist-check
	.dist-check/bin/pip install -q --upgrade pip
	.dist-check/bin/pip install -q dist/hyperstep-*.whl keras jax
	cd .dist-check && KERAS_BACKEND=jax bin/python ../.ci/dist_check.py

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check src tests benchmarks examples
	$(BIN)/ruff format --check src tests benchmarks examples
	$(BIN)/mypy src

bench: $(VENV)/.dev-installed
	@for f in benchmarks/[!_]*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) $(OLDEST) build dist site .dist-check .pytest-golden src/*.egg-info
