"""The README's example runs as written."""

import pathlib
import re

README = pathlib.Path(__file__).parents[1] / "README.md"


def test_readme_python_example_runs(capsys) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has no python example"
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    out = capsys.readouterr().out
    assert "no findings" in out
    assert int(namespace["clock"].step) == 60  # 5 epochs x 12 batches of 32
