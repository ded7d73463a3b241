"""What ``make dist-check`` runs inside the fresh virtual environment (keras + jax only).

Run from outside the checkout, so that ``import hyperstep`` finds the installed wheel:
imports hyperstep, runs the ``hyperstep`` entry point (``plot --text``), and trains one
step of a model with a scheduled optimizer on JAX.
"""

import os
import shutil
import subprocess
import sys

os.environ["KERAS_BACKEND"] = "jax"

import hyperstep as hs

assert "site-packages" in hs.__file__, f"not the installed wheel: {hs.__file__}"
command = shutil.which("hyperstep", path=os.path.dirname(sys.executable))
assert command, "the wheel installed no `hyperstep` command"
chart = subprocess.run(
    [command, "plot", "warmup(cosine(1e-3, steps=1000), steps=100)", "--steps", "1200", "--text"],
    capture_output=True,
    text=True,
    check=True,
).stdout
assert "* warmup(cosine(1e-3, steps=1000), steps=100)" in chart, chart

import keras  # noqa: E402
import numpy as np  # noqa: E402

assert keras.backend.backend() == "jax"
model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
optimizer = hs.scheduled(keras.optimizers.SGD(), learning_rate="0.1 * 0.5 ** step")
model.compile(optimizer=optimizer, loss="mse")
before = [np.array(w) for w in model.get_weights()]
model.fit(np.ones((8, 4), "float32"), np.ones((8, 1), "float32"), batch_size=8, verbose=0)
assert int(optimizer.clock.step) == 1
assert not np.array_equal(before[0], model.get_weights()[0]), "the weights did not train"
assert abs(float(optimizer.hyperparameters["learning_rate"].value) - 0.05) < 1e-9
print(f"dist-check: hyperstep {hs.__version__} from {hs.__file__}: import, plot --text and one")
print("JAX training step OK")
