"""A ``.keras`` file whose ``StepOptimizer`` uses a user's ``@hs.rules.register_rule`` rule,
loaded in a fresh process that imported only ``hyperstep``: one line naming the rule's
registered name, the decorator and the module to import; with the module imported, it loads."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hyperstep

pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

RULES = """
import hyperstep as hs


@hs.rules.register_rule(package="my_project")
class HalfSGD(hs.rules.SGDRule):
    '''SGD at half the learning rate (a rule of the user's own).'''
"""

SAVE = """
import keras, numpy as np, hyperstep as hs, my_rules
model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
model.compile(hs.StepOptimizer(my_rules.HalfSGD(), learning_rate=0.1), "mse")
model.fit(np.ones((4, 2)), np.ones((4, 1)), verbose=0)
model.save("model.keras")
"""

LOAD = """
import sys, keras, hyperstep
if sys.argv[1:] == ["import"]:
    import my_rules
print(type(keras.saving.load_model("model.keras").optimizer.rule).__name__)
"""


def _python(code: str, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    source = str(Path(hyperstep.__file__).parents[1])
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env["PYTHONPATH"] = os.pathsep.join([source, str(cwd)])
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *argv],
        cwd=cwd, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(  # three fresh processes a backend: two in `make test-slow`
    "backend",
    [
        pytest.param("tensorflow", marks=pytest.mark.slow),
        pytest.param("jax", marks=pytest.mark.slow),
        "torch",
    ],
)
def test_loading_a_rule_no_module_registered_says_which_and_what_to_import(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERAS_BACKEND", backend)  # the processes' (this pass's) backend
    (tmp_path / "my_rules.py").write_text(RULES)
    saved = _python(SAVE, tmp_path)
    assert saved.returncode == 0, saved.stderr[-3000:]
    failed = _python(LOAD, tmp_path)
    assert failed.returncode == 1
    assert failed.stderr.splitlines()[-1] == (
        "hyperstep.errors.NotRegisteredError: The saved optimizer's update rule "
        "'my_project>HalfSGD' is not registered in this process: a rule registers with "
        "`@hs.rules.register_rule` when its module is imported, so import the module that "
        "defines it ('my_rules') before loading. Received: rule='my_project>HalfSGD'"
    )
    assert "register_keras_serializable" not in failed.stderr  # Keras's advice, wrong here
    loaded = _python(LOAD, tmp_path, "import")
    assert (loaded.returncode, loaded.stdout) == (0, "HalfSGD\n"), loaded.stderr[-3000:]
