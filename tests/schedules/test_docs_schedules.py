"""The Python examples of docs/schedules.md run as written."""

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).parents[2] / "docs" / "schedules.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index: int, capsys: pytest.CaptureFixture[str]) -> None:
    exec(compile(BLOCKS[index], f"{DOC.name}[{index}]", "exec"), {})
    for line in BLOCKS[index].splitlines():  # `print(x)   # shown` must print `shown`
        match = re.match(r"print\(.*\)\s+# (.*)$", line)
        if match:
            assert match.group(1) in capsys.readouterr().out
