"""A griffe extension for the API reference: hyperstep's docstrings title their doctests
``Example:`` (singular); griffe's Google parser knows ``Examples:``. Rename on load, so
the doctests render as code."""

from __future__ import annotations

import re
from typing import Any

import griffe

_TITLE = re.compile(r"^(\s*)Example:\s*$", re.M)


class ExampleSections(griffe.Extension):
    """Read ``Example:`` sections as ``Examples:``."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _TITLE.sub(r"\1Examples:", obj.docstring.value)
