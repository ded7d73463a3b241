"""A griffe extension for the API reference: hyperstep's docstrings cross-reference with
Sphinx roles (``:class:`~hyperstep.Clock```, ``:meth:`start```) and introduce literal
blocks with reST's ``::``; mkdocstrings reads Markdown. On load, each role becomes an
optional autorefs link to the object it names, resolved in the docstring's own scope as
Sphinx would (``:meth:`start``` in a method of ``Clock`` is ``hyperstep.clock.Clock.start``),
titled as Sphinx titles it (``~`` keeps the last name); an object the reference does not
render stays code, unlinked. A line ending in ``::`` ends in ``:``, and its indented block
becomes a fenced code block (inside a list item too, where Markdown wants four spaces), as
reST renders it; reST's escaped space (``Finding`\\ s``) joins the words.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

#: ``:role:`target``` and ``:role:`title <target>```, the roles hyperstep's docstrings use
ROLE = re.compile(r":(?:py:)?(?P<role>class|func|meth|attr|data|mod|exc|obj):`(?P<body>[^`]+)`")
_LITERAL = re.compile(r"(?<=\S)::[ \t]*$")
_ESCAPED_SPACE = re.compile(r"\\ ")
_ITEM = re.compile(r"^(?P<indent> *)(?:[*+-]|\d+\.) ")
_EXPLICIT = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$")


def resolve(obj: griffe.Object, target: str) -> str:
    """The full path of ``target`` as written in ``obj``'s docstring (``target`` itself if
    it is already a full path, or if griffe cannot resolve it)."""
    if target.startswith("hyperstep.") or target == "hyperstep":
        return _renamed(obj, target)
    head, dot, rest = target.partition(".")
    scope: griffe.Object | None = obj
    while scope is not None:
        try:
            return scope.resolve(head) + dot + rest
        except Exception:  # griffe.NameResolutionError, or an alias it cannot follow
            scope = scope.parent
    return target


def _renamed(obj: griffe.Object, target: str) -> str:
    """The class a vocabulary word names (``hyperstep.schedules.piecewise`` is documented as
    its class ``Piecewise``); ``target`` itself otherwise."""
    try:
        found = obj.modules_collection.get_member(target)
    except Exception:  # not loaded, or not a member: autorefs decides
        return target
    if found.is_alias and found.name != found.target_path.rsplit(".", 1)[-1]:
        return str(found.target_path)
    return target


def link(obj: griffe.Object, match: re.Match[str]) -> str:
    """One role as an optional autorefs link (plain code when its target is not rendered)."""
    body = match["body"]
    explicit = _EXPLICIT.match(body)
    if explicit:
        title, target = explicit["title"], explicit["target"]
    else:
        target = body.lstrip("~")
        title = target.rsplit(".", 1)[-1] if body.startswith("~") else target
    if match["role"] in ("func", "meth") and not title.endswith(")"):
        title += "()"  # as Sphinx's add_function_parentheses
    target = resolve(obj, target.rstrip("()"))
    return (
        f'<autoref identifier="{html.escape(target)}" optional>'
        f"<code>{html.escape(title)}</code></autoref>"
    )


def convert(obj: griffe.Object, text: str) -> str:
    """``text`` (a docstring) with its roles as links and its ``::`` blocks fenced."""
    return literal_blocks(_ESCAPED_SPACE.sub("", ROLE.sub(lambda m: link(obj, m), text)))


def literal_blocks(text: str) -> str:
    r"""Each reST literal block (a line ending in ``::``, then lines indented deeper) as a
    fenced Python block, the line ending in ``:``.

    Example:
        >>> text = "* wrap it::\n\n      with clock.iteration():\n          step()\n"
        >>> print(literal_blocks(text))
        * wrap it:
        <BLANKLINE>
            ```python
            with clock.iteration():
                step()
            ```
        <BLANKLINE>
    """
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not _LITERAL.search(line):
            out.append(line)
            continue
        out.append(_LITERAL.sub(":", line))
        indent = len(line) - len(line.lstrip())
        item = _ITEM.match(line)
        fence = " " * (len(item["indent"]) + 4 if item else indent)  # a list item's content
        block: list[str] = []
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
            block.append(lines[i])
            i += 1
        while block and not block[-1].strip():  # blank lines after it stay outside
            block.pop()
            i -= 1
        while block and not block[0].strip():
            block.pop(0)
        if not block:
            continue
        depth = min(_indent(b) for b in block if b.strip())
        out += ["", f"{fence}```python"]
        out += [f"{fence}{b[depth:]}" if b.strip() else "" for b in block]
        out += [f"{fence}```"]
    return "\n".join(out)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


class SphinxRoles(griffe.Extension):
    """Convert the docstrings' Sphinx roles and literal-block markers to Markdown."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        # after the whole package is loaded, so that names resolve across modules
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = convert(obj, obj.docstring.value)


def _walk(obj: griffe.Object) -> Any:
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _walk(member)  # type: ignore[arg-type]
