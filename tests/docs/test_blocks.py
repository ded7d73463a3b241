"""Every code block of the documentation (``docs/*.md`` and ``README.md``) runs.

Conventions, read by ``blocks.py``:

- **Python blocks** (```` ```python ````) of a page run in order, in one namespace per
  *session*, as one interpreter session would run them; each runs for real, on small data.
  The default session, ``main``, runs in this process on TensorFlow (after
  ``keras.backend.clear_session()``, as in a fresh process), in ``make test``. Any other
  session runs in its own process, in ``make test-slow`` (a process costs a backend
  import, and these blocks train or compile more): ``jax`` and ``torch`` with that
  ``KERAS_BACKEND``, the others on TensorFlow (``tf1`` runs the ``tf.compat.v1`` recipes
  with eager execution disabled, ``mirrored`` splits the CPU into two logical devices for
  ``tf.distribute``, ``slow`` is for long blocks: Ray, the demo, shell commands that
  import TensorFlow).
- **Hidden blocks**: an HTML comment that starts with ``<!-- test`` on its own line and
  ends with ``-->`` on its own line holds Python code that runs where it stands, unseen on
  the rendered page: the setup an excerpt needs (data, a model, the objects named before
  ``...`` in the prose) and checks of what the excerpt did. ``<!-- test session=NAME``
  puts it in a session; a one-line ``<!-- test session=NAME -->`` puts the next block there.
- **Output**: a ```` ```text ```` block right below a runnable block (only blank lines
  and comments between them) is that block's standard output and is compared with it, line
  by line (trailing spaces and surrounding blank lines ignored). A hidden block may print
  what a visible ```` ```text ```` block shows (an error message, for example).
- **Shell blocks** (```` ```sh ````/``bash``/``shell``) run one command a line with
  ``bash`` in the session's temporary directory (every session of a page shares one, the
  current directory of its Python blocks too); ``hyperstep`` there is ``python -m
  hyperstep`` on this checkout's ``src``. Exit status 0 is required. ``cd DIR`` moves the
  block's next commands. ``git clone URL [DIR]`` is not run: DIR gets this checkout's
  ``pyproject.toml``. ``pip install`` lines are not run: each must install a checkout
  (``-e .[EXTRAS]``: hyperstep is not published) and each extra they name must be one of
  pyproject's. ``make`` lines are not run: each target must be a rule of the Makefile.
- **Everything else** (formulas, transcripts, a block run by another test) is listed in
  :data:`NOT_RUN` by its first line, with the reason; the list stays short, and a block
  neither run nor listed fails :func:`test_every_block_is_run_or_listed`, which also
  renders each page as MkDocs does and requires one ``<pre>`` per block found, so an
  indented code block cannot slip past.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import markdown
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from blocks import Block, normalize, parse, run

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
#: every page, by its path relative to docs/ (the API reference's too), and the README
PAGES = {
    **{
        p.relative_to(DOCS).as_posix(): p
        for p in sorted(DOCS.rglob("*.md"))
        if "_ext" not in p.parts
    },
    "README.md": ROOT / "README.md",
}

#: the environment of a session in its own process, besides ``KERAS_BACKEND=tensorflow``
ENV = {"jax": {"KERAS_BACKEND": "jax"}, "torch": {"KERAS_BACKEND": "torch"}}

#: blocks that are not run, by (page, first line): why
NOT_RUN = {
    ("README.md", "import keras"): "tests/test_readme.py runs it and checks what it prints",
    ("runtime.md", "value = override            if an override is set"): "a formula",
    ("schedules.md", "value(step) = peak * (min_ratio + (1 - min_ratio) * f(step))"): "a formula",
    ("schedules.md", "base(step) = schedule(step)"): "a formula",
    ("schedules.md", "epoch = epoch_index + floor((step - epoch_start) / length)"): "a formula",
    (
        "schedules.md",
        'model.fit(..., callbacks=[hs.callbacks.StartCooldown(cooldown, when_file="cooldown")])',
    ): "two terminals at once (tests/control/test_cooldown.py runs `when_file`)",
    ("tune.md", "python examples/pbt_digits.py"): "a 3-minute population, and a Ray cluster",
    ("steering.md", "# shell 1"): "two terminals at once (tests/control/test_remote.py and "
    "tests/demo/test_steering.py run these commands on a training run)",
}


def blocks_of(page: str) -> list[Block]:
    return parse(PAGES[page], page)


def sessions() -> list[pytest.param]:
    found = []
    for page in PAGES:
        for name in dict.fromkeys(b.session for b in blocks_of(page) if b.runnable):
            if to_run(page, name):
                marks = [] if name == "main" else [pytest.mark.slow]
                found.append(pytest.param(page, name, marks=marks, id=f"{page}-{name}"))
    return found


def listed(block: Block) -> bool:
    return any(block.page == page and block.head.startswith(head) for page, head in NOT_RUN)


def to_run(page: str, session: str) -> list[Block]:
    return [b for b in blocks_of(page) if b.runnable and b.session == session and not listed(b)]


@pytest.fixture(scope="module")
def workdirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return {page: tmp_path_factory.mktemp(re.sub(r"\W", "_", page)) for page in PAGES}


@pytest.mark.parametrize(("page", "session"), sessions())
def test_blocks_run_and_print_what_the_page_shows(
    page: str,
    session: str,
    workdirs: dict[str, Path],
    monkeypatch: pytest.MonkeyPatch,
    hang_timeout: float,
) -> None:
    blocks = to_run(page, session)
    workdir = workdirs[page]
    if session == "main":
        import keras

        keras.backend.clear_session()
        monkeypatch.chdir(workdir)
        monkeypatch.setenv("HOME", str(workdir))
        monkeypatch.setenv("HYPERSTEP_DOCS_ROOT", str(ROOT))
        outputs = run(blocks, ROOT, workdir)
    else:
        spec = {"root": str(ROOT), "blocks": [b.__dict__ for b in blocks]}
        (workdir / f".{session}.json").write_text(json.dumps(spec))
        env = {
            **os.environ,
            "KERAS_BACKEND": "tensorflow",
            "TF_CPP_MIN_LOG_LEVEL": "3",
            "HOME": str(workdir),
            "HYPERSTEP_DOCS_ROOT": str(ROOT),
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
            **ENV.get(session, {}),
        }
        done = subprocess.run(
            [
                sys.executable,
                str(Path(__file__).with_name("blocks.py")),
                f".{session}.json",
                f".{session}.out",
            ],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=hang_timeout,
        )
        assert done.returncode == 0, done.stderr[-6000:]
        outputs = json.loads((workdir / f".{session}.out").read_text())
    for block, out in zip(blocks, outputs, strict=True):
        if block.expected is not None:
            assert normalize(out) == normalize(block.expected), f"{block.where} printed:\n{out}"


@pytest.mark.parametrize("page", sorted(PAGES))
def test_every_block_is_run_or_listed(page: str) -> None:
    found = blocks_of(page)
    visible = [b for b in found if not b.hidden]
    for block in visible:
        assert block.runnable or block.output_of is not None or listed(block), (
            f"{block.where}: a ```{block.language} block that no test runs: run it (python, sh)"
            f", show it as the ```text output of the block above, or list it in NOT_RUN"
        )
        if block.output_of is not None:  # an output is compared only where its block runs
            assert not listed(block) and not listed(found[block.output_of]), block.where
    html = markdown.markdown(PAGES[page].read_text(), extensions=["fenced_code", "tables", "toc"])
    assert html.count("<pre>") == len(visible), f"{page}: a code block the parser missed"
    shown = re.sub(r"<!--.*?-->", "", html, flags=re.S)  # hidden blocks stay HTML comments
    assert "&lt;!--" not in shown and "<!-- test" not in shown, f"{page}: a hidden block shows"


def test_the_list_of_blocks_not_run_is_short_and_current() -> None:
    assert len(NOT_RUN) <= 8
    for page, head in NOT_RUN:
        assert any(b.head.startswith(head) for b in blocks_of(page)), (
            f"stale NOT_RUN entry {page}: {head}"
        )
