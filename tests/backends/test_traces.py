"""Units of :mod:`hyperstep.backends.traces`: the trace's data classes and
:func:`user_source`, which names the first frame of the user's code (not Python's, not a
site-package's, not hyperstep's own)."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import pytest

import hyperstep
from hyperstep.backends.traces import Trace, TracedOp, user_source


def test_a_traced_op_is_frozen_hashable_and_passes_gradients_by_default() -> None:
    op = TracedOp("mul", "eqn 3", None, (1, 2), ((3, True),))
    assert op.stops is False
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.stops = True  # type: ignore[misc]
    same = TracedOp("mul", "eqn 3", None, (1, 2), ((3, True),))
    assert op == same and hash(op) == hash(same)
    assert op != dataclasses.replace(op, stops=True)


def test_each_trace_gets_its_own_centred_and_keep() -> None:
    first = Trace(ops=[], sources={}, loss=0)
    second = Trace(ops=[], sources={}, loss=0)
    first.centred.add(5)
    first.keep.append(object())
    assert second.centred == set() and second.keep == []


def test_user_source_names_the_file_line_and_code(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text("import keras\n    loss = model(x) * 2  \n")
    assert user_source([(str(script), 2)]) == f"{script}:2: `loss = model(x) * 2`"


def test_user_source_without_the_line_is_file_and_line(tmp_path: Path) -> None:
    script = tmp_path / "gone.py"
    script.write_text("x = 1\n")
    assert user_source([(str(script), 40)]) == f"{script}:40"
    assert user_source([(str(tmp_path / "missing.py"), 3)]) == f"{tmp_path / 'missing.py'}:3"


def test_user_source_skips_python_site_packages_hyperstep_and_generated_code(
    tmp_path: Path,
) -> None:
    script = tmp_path / "model.py"
    script.write_text("a = 1\nb = 2\n")
    internal = [
        ("<string>", 1),  # exec'd or generated code
        (os.__file__, 10),  # the standard library
        (json.__file__, 1),
        (np.__file__, 1),  # a site-package
        (hyperstep.__file__, 1),  # hyperstep itself
    ]
    assert user_source(internal) is None
    found = user_source([*internal, (str(script), 2), (str(script), 1)])
    assert found == f"{script}:2: `b = 2`"  # the innermost user frame, not the outer one


def test_user_source_of_no_frames_is_none() -> None:
    assert user_source([]) is None
    assert user_source(iter([("<frozen importlib._bootstrap>", 1)])) is None
