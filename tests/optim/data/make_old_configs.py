"""Writes old_configs.json: optimizer configs in the format hyperstep saved before the one
shared format (run once with that version's code, kept as the fixture that old configs load).

    PYTHONPATH=<old checkout>/src python tests/optim/data/make_old_configs.py
"""

import json
import pathlib
import subprocess

import keras

import hyperstep as hs


def optimizers() -> dict[str, keras.optimizers.Optimizer]:
    groups = [hs.Group("head", match="*bias", learning_rate="10 * learning_rate")]
    return {
        "step_optimizer": hs.StepOptimizer(
            "adamw",
            learning_rate="cosine(0.1, steps=100)",
            beta_1=0.8,
            weight_decay="0.5 * learning_rate",
            groups=[*groups, hs.Group("emb", match="*embedding*", beta_2=0.95)],
            advance=True,
            clipnorm=1.0,
        ),
        "scheduled": hs.scheduled(
            keras.optimizers.AdamW(weight_decay=0.01),
            learning_rate="cosine(0.01, steps=50)",
            beta_1=0.85,
            groups=groups,
            advance=True,
        ),
    }


if __name__ == "__main__":
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    configs = {name: keras.optimizers.serialize(opt) for name, opt in optimizers().items()}
    path = pathlib.Path(__file__).with_name("old_configs.json")
    path.write_text(json.dumps({"commit": commit, **configs}, indent=1, sort_keys=True) + "\n")
