"""The code blocks of the documentation: read them from a page, run a session of them.

Used by ``test_blocks.py`` (its docstring describes the conventions). Run as a script,
``python blocks.py SESSION.json OUTPUT.json`` runs one session in a fresh process (another
Keras backend, a CPU split into logical devices, TF1 graph mode) and writes each block's
standard output to ``OUTPUT.json``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

SHELL = {"sh", "bash", "shell"}
RUNNABLE = SHELL | {"python"}

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<info>[\w+-]*)\s*$")
_COMMENT = re.compile(r"^<!--\s*test\b(?P<options>[^\n]*?)(?P<end>-->)?\s*$")


@dataclasses.dataclass
class Block:
    """A fenced block of a page, or a hidden one (``<!-- test ... -->``)."""

    page: str
    line: int  # the line of its opening fence or comment, from 1
    language: str  # "python", "sh", "text", ... or "" (no info string)
    code: str
    hidden: bool = False
    session: str = "main"
    expected: str | None = None  # the ```text block right below it: its standard output
    output_of: int | None = None  # for such a text block: the index of the block it shows

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runnable(self) -> bool:
        return self.language in RUNNABLE

    @property
    def head(self) -> str:
        """The block's first non-empty line: its key in ``test_blocks.NOT_RUN``."""
        return next((line.strip() for line in self.code.splitlines() if line.strip()), "")


def _options(text: str, where: str) -> dict[str, str]:
    options = {}
    for word in text.split():
        key, equals, value = word.partition("=")
        if not equals or key != "session":
            raise ValueError(f"{where}: unknown option {word!r} in a `<!-- test` comment")
        options[key] = value
    return options


def parse(path: Path, page: str | None = None) -> list[Block]:
    """Every fenced block of the Markdown file ``path`` and every hidden block, in order."""
    page = page or path.name
    lines = path.read_text().splitlines()
    found: list[Block] = []
    pending: dict[str, str] = {}  # options of a one-line `<!-- test ... -->` for the next block
    only_blank_since_runnable = False
    index = 0
    while index < len(lines):
        line = lines[index]
        where = f"{page}:{index + 1}"
        fence, comment = _FENCE.match(line), _COMMENT.match(line)
        if fence:
            indent, marker = fence["indent"], fence["fence"]
            end = index + 1
            while end < len(lines) and lines[end].strip() != marker:
                end += 1
            if end == len(lines):
                raise ValueError(f"{where}: the block is not closed")
            body = [
                text[len(indent) :] if text.startswith(indent) else text
                for text in lines[index + 1 : end]
            ]
            block = Block(page, index + 1, fence["info"], "\n".join(body) + "\n", **pending)
            pending = {}
            if block.language == "text" and only_blank_since_runnable:
                shown = len(found) - 1
                while not found[shown].runnable:
                    shown -= 1
                found[shown].expected = block.code
                block.output_of, block.session = shown, found[shown].session
            found.append(block)
            only_blank_since_runnable = block.runnable
            index = end + 1
            continue
        if comment:
            options = _options(comment["options"], where)
            if comment["end"]:
                pending = options
            else:
                end = index + 1
                while end < len(lines) and lines[end].strip() != "-->":
                    end += 1
                if end == len(lines):
                    raise ValueError(f"{where}: the `<!-- test` comment is not closed by `-->`")
                code = "\n".join(lines[index + 1 : end]) + "\n"
                found.append(Block(page, index + 1, "python", code, hidden=True, **options))
                only_blank_since_runnable = True
                index = end + 1
                continue
        elif line.strip() and not line.lstrip().startswith("<!--"):
            only_blank_since_runnable = False
        index += 1
    return found


def normalize(text: str) -> str:
    """Output as compared: trailing spaces and the blank lines around it dropped."""
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


# --- running --------------------------------------------------------------------------------


def _commands(code: str) -> list[str]:
    """The commands of a shell block: one per line, ``\\`` continuations joined."""
    commands, current = [], ""
    for line in code.splitlines():
        current += line
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        if current.strip() and not current.lstrip().startswith("#"):
            commands.append(current.strip())
        current = ""
    return commands


def check_pip(words: list[str], root: Path, cwd: Path) -> None:
    """``pip install -e '.[EXTRA,...]'`` in a checkout: each extra is one of pyproject's.

    hyperstep is not published, so the only install a page may show is from a checkout
    (``-e`` optional, the path a folder holding a ``pyproject.toml``); ``pip install
    hyperstep`` as if from PyPI fails here."""
    pyproject = (root / "pyproject.toml").read_text()
    section = pyproject.split("[project.optional-dependencies]")[1].split("\n[")[0]
    extras = set(re.findall(r"^([\w-]+) = \[", section, re.M))  # no tomllib on Python 3.10
    for word in words:
        if word == "-e":
            continue
        match = re.fullmatch(r"(?P<path>[^\[\]]+?)(?:\[(?P<extras>[\w,-]+)\])?", word)
        assert match, f"`pip install {word}`: not PATH or PATH[extras]"
        assert (cwd / match["path"] / "pyproject.toml").is_file(), (
            f"`pip install {word}`: {match['path']!r} is not a checkout of hyperstep here"
            " (it is not published: install from a checkout)"
        )
        for extra in (match["extras"] or "").split(","):
            assert not extra or extra in extras, f"no extra {extra!r} in pyproject.toml"


def fake_clone(words: list[str], root: Path, cwd: Path) -> None:
    """``git clone URL [FOLDER]``: nothing may download, so FOLDER (the URL's last part by
    default, as git names it) gets this checkout's ``pyproject.toml``, all the ``pip``
    check reads."""
    url, *folder = [w for w in words if not w.startswith("-")]
    name = folder[0] if folder else url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    (cwd / name).mkdir(parents=True, exist_ok=True)
    (cwd / name / "pyproject.toml").write_text((root / "pyproject.toml").read_text())


def check_make(words: list[str], root: Path) -> None:
    """``make TARGET ...``: each target has a rule in the Makefile."""
    makefile = (root / "Makefile").read_text()
    for target in words:
        assert re.search(rf"^{re.escape(target)}:", makefile, re.M), f"no `make {target}`"


def _tools(bin_dir: Path) -> None:
    """``hyperstep`` as ``python -m hyperstep``, and ``python``: this interpreter."""
    bin_dir.mkdir(exist_ok=True)
    for name, line in (("hyperstep", "-m hyperstep"), ("python", "")):
        tool = bin_dir / name
        tool.write_text(f'#!/bin/sh\nexec "{sys.executable}" {line} "$@"\n')
        tool.chmod(0o755)


def run_shell(block: Block, root: Path, workdir: Path) -> str:
    """Each command of a shell block in ``workdir`` (``cd DIR`` moves the next ones);
    ``git clone``, ``pip`` and ``make`` lines are checked, not run."""
    _tools(workdir / ".bin")
    env = dict(os.environ)
    env["PATH"] = f"{workdir / '.bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(root / "src"), env.get("PYTHONPATH", "")])
    out, cwd = [], workdir
    for command in _commands(block.code):
        words = shlex.split(command, comments=True)
        if words[:2] == ["pip", "install"]:
            check_pip(words[2:], root, cwd)
            continue
        if words[:2] == ["git", "clone"]:
            fake_clone(words[2:], root, cwd)
            continue
        if words[0] == "cd" and len(words) == 2:  # for the block's next commands
            cwd = (cwd / words[1]).resolve()
            assert cwd.is_dir(), f"{block.where}: `{command}`: no such folder"
            continue
        if words[0] == "make":
            check_make(words[1:], root)
            continue
        done = subprocess.run(
            ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, (
            f"{block.where}: `{command}` exited with {done.returncode}\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
        out.append(done.stdout)
    return "".join(out)


def run(blocks: list[Block], root: Path, workdir: Path) -> list[str]:
    """Run the blocks in order, Python ones in one namespace; return each one's stdout."""
    namespace: dict[str, object] = {"__name__": "__main__"}
    outputs = []
    for block in blocks:
        if block.language in SHELL:
            outputs.append(run_shell(block, root, workdir))
            continue
        # padded so that a traceback's line numbers are the page's
        code = compile("\n" * block.line + block.code, block.page, "exec")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, namespace)
        outputs.append(out.getvalue())
    return outputs


if __name__ == "__main__":
    session, output = Path(sys.argv[1]), Path(sys.argv[2])
    spec = json.loads(session.read_text())
    blocks = [Block(**b) for b in spec["blocks"]]
    output.write_text(json.dumps(run(blocks, Path(spec["root"]), Path.cwd())))
