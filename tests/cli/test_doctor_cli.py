"""`hyperstep doctor MODULE:FUNCTION [--loss NAME] [--json]`: exit 0 healthy, 1 findings, 2
usage errors.

Runs on the Keras backend of the process (``KERAS_BACKEND``; JAX and torch through
``tests/doctor/test_backends.py``): the target's raw variable is that backend's own.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import hyperstep
from hyperstep.cli.main import main

#: every pass: the doctor's catalogue on each backend's own mistakes (see tests/conftest.py)
pytestmark = pytest.mark.backend("tensorflow", "jax", "torch")

TARGET = textwrap.dedent(
    """
    import keras
    import numpy as np

    X, Y = np.ones((4, 3), "float32"), np.zeros((4, 1), "float32")


    def raw(value):
        if keras.backend.backend() == "tensorflow":
            import tensorflow as tf

            return tf.Variable(value)
        if keras.backend.backend() == "torch":
            import torch

            return torch.nn.Parameter(torch.tensor(value))
        import jax.numpy as jnp

        return jnp.asarray(value, "float32")


    def dense():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)], name="s")
        model.compile(optimizer="sgd", loss="mse")
        return model


    class RawScale(keras.Model):
        def __init__(self):
            super().__init__(name="m")
            self.dense = keras.layers.Dense(1)
            self.scale = raw(2.0)

        def call(self, x):
            return self.dense(x) * self.scale


    def healthy():
        return dense(), (X, Y)


    def broken():
        model = RawScale()
        model.compile(optimizer="sgd", loss="mse")
        return model, (X, Y)


    def with_optimizer():
        return dense(), (X, Y), keras.optimizers.SGD(learning_rate=0.0)


    def as_dict():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        return {"model": model, "data": (X, Y),
                "loss_fn": lambda m, b: keras.ops.mean((m(b[0]) - b[1]) ** 2)}


    def not_compiled():
        return keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)]), (X, Y)


    def wrong():
        return 42


    def raises():
        raise RuntimeError("no data here")


    def interrupted():
        raise KeyboardInterrupt


    def exits():
        raise SystemExit(5)


    def dead_relu():
        model = keras.Sequential([
            keras.Input((3,)),
            keras.layers.Dense(2, activation="relu", bias_initializer="zeros",
                               kernel_initializer="zeros", name="hidden"),
            keras.layers.Dense(1, name="out"),
        ])
        return model, (X, Y)


    CONSTANT = 3
    """
)


@pytest.fixture
def target(tmp_path, monkeypatch):
    (tmp_path / "doctor_target.py").write_text(TARGET)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path / "doctor_target.py"


def test_healthy_model_exits_0_and_prints_no_findings(target, capsys):
    assert main(["doctor", "doctor_target:healthy"]) == 0
    assert "no findings" in capsys.readouterr().out


def test_findings_exit_1_with_the_table(target, capsys):
    assert main(["doctor", "doctor_target:broken"]) == 1
    out = capsys.readouterr().out
    assert "m/scale" in out and "untracked" in out and "self.add_weight(" in out


def test_json_output_is_the_diagnosis_dict(target, capsys):
    assert main(["doctor", f"{target}:broken", "--json"]) == 1  # a file path works too
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    assert [(f["code"], f["path"]) for f in data["findings"]] == [("untracked", "m/scale")]
    assert set(data["findings"][0]) == {"path", "code", "what", "why", "fix"}


def test_third_item_optimizer_and_dict_form_are_accepted(target, capsys):
    assert main(["doctor", "doctor_target:with_optimizer", "--json"]) == 1
    codes = [f["code"] for f in json.loads(capsys.readouterr().out)["findings"]]
    assert codes == ["zero-learning-rate"]
    assert main(["doctor", "doctor_target:as_dict"]) == 0


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ("doctor_target", "expected MODULE:FUNCTION"),
        ("no_such_module_xyz:f", "could not import 'no_such_module_xyz': ModuleNotFoundError"),
        ("missing.py:f", "no such file: 'missing.py'"),
        ("doctor_target:nothing", "has no attribute 'nothing'"),
        ("doctor_target:CONSTANT", "is not a function: it is a int"),
        ("doctor_target:wrong", "returned int 42; it must return (model, batch)"),
        ("doctor_target:raises", "raised RuntimeError: no data here"),
        ("doctor_target:not_compiled", "not compiled; pass --loss NAME"),
        ("doctor_target:interrupted", "raised KeyboardInterrupt"),
        ("doctor_target:exits", "raised SystemExit: 5"),
    ],
)
def test_usage_errors_exit_2_with_one_message_and_no_traceback(target, capsys, argument, message):
    assert main(["doctor", argument]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert captured.err.startswith("hyperstep doctor: error:")
    assert "Traceback" not in captured.err and captured.out == ""


def test_loss_compiles_an_uncompiled_model(target, capsys):
    assert main(["doctor", "doctor_target:not_compiled", "--loss", "mse"]) == 0
    assert "no findings" in capsys.readouterr().out
    # the loss is really used: a zero-initialized ReLU layer gets exactly zero gradients
    assert (
        main(["doctor", "doctor_target:dead_relu", "--loss", "mean_squared_error", "--json"]) == 1
    )
    found = {(f["code"], f["path"]) for f in json.loads(capsys.readouterr().out)["findings"]}
    assert ("zero-gradient", "sequential/hidden/kernel") in found or any(
        code == "zero-gradient" for code, _ in found
    )


def test_an_unknown_loss_name_is_a_usage_error(target, capsys):
    assert main(["doctor", "doctor_target:not_compiled", "--loss", "msee"]) == 2
    err = capsys.readouterr().err
    assert "--loss must name a Keras loss" in err and "Received: --loss msee" in err


def test_help_says_what_function_returns_and_offers_loss(capsys):
    assert main(["doctor", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "FUNCTION takes no arguments and returns (model, batch)" in out
    assert "--loss NAME" in out and "uncompiled" in out


def test_quiet_stderr_drops_the_banners_and_keeps_everything_else():
    script = (
        "import os\nfrom hyperstep.cli.arguments import quiet_stderr\nwith quiet_stderr():\n"
        "    os.write(2, b'WARNING: All log messages before absl::InitializeLog() is called\\n')\n"
        "    os.write(2, b'I0000 00:00:1796130818.98 28155 port.cc:153] oneDNN custom ops\\n')\n"
        "    os.write(2, b'To enable the following instructions: AVX2 FMA\\n')\n"
        "    os.write(2, b'E0000 00:00:17.1 1 x.cc:1] a real error\\nyour own warning\\n')\n"
    )
    source = str(Path(hyperstep.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "E0000 00:00:17.1 1 x.cc:1] a real error\nyour own warning\n"


@pytest.mark.slow  # a fresh process importing TensorFlow: 5-20 s
@pytest.mark.backend("tensorflow")
def test_no_backend_banner_reaches_the_terminal(target):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    source = str(Path(hyperstep.__file__).parents[1])  # this checkout, from any directory
    env["PYTHONPATH"] = os.pathsep.join([source, env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-m", "hyperstep", "doctor", "doctor_target:healthy"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr == "" and "no findings" in done.stdout
