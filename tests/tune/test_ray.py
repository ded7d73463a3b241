"""hs.tune.trainable without Ray processes: the Trainable class run in this process.

Ray's own ``Trainable.save``/``restore``/``reset`` drive the class exactly as a Ray actor
does (PBT's exploit is ``reset(new_config)`` then ``restore(source checkpoint)`` on a reused
actor). The Ray-instance runs are in test_ray_pbt.py (slow).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.errors import BackendError, InvalidArgumentError

sys.path.insert(0, str(Path(__file__).parent))
import members
from members import CONFIG, DATA, STEPS_PER_EPOCH, assert_same_state, build, state

#: Ray's Tune is imported by the code under test: collecting the file costs no Tune import
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="the `tune` extra (Ray) is not installed"
)


def _member(config=CONFIG, **options):
    cls = hs.tune.trainable(build, DATA, **options)
    return cls(dict(config))


def test_import_without_ray_and_the_error_names_the_extra() -> None:
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'ray' or name.startswith('ray.'):\n"
        "            raise ImportError('No module named ' + repr(name))\n"
        "sys.meta_path.insert(0, Block())\n"
        "import hyperstep, hyperstep.tune\n"
        "assert 'ray' not in sys.modules\n"
        "try:\n"
        "    hyperstep.tune.trainable(lambda c: None, {})\n"
        "except hyperstep.errors.BackendError as e:\n"
        "    print(e)\n"
    )
    # JAX, the backend a process imports fastest: the check is the same on each
    env = {**os.environ, "PYTHONPATH": str(Path(hs.__file__).parents[1]), "KERAS_BACKEND": "jax"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert "hyperstep[tune]" in done.stdout
    assert issubclass(BackendError, ImportError)


def test_config_values_are_applied_and_reported_every_period() -> None:
    member = _member()
    first, second = member.train(), member.train()
    model = member.member.model
    assert (first["step"], second["step"]) == (STEPS_PER_EPOCH, 2 * STEPS_PER_EPOCH)
    hps = model.optimizer.hyperparameters
    for key in ("learning_rate", "head/learning_rate", "weight_decay"):
        assert second["hyperparameters"][key] == float(np.float32(CONFIG[key]))
        assert float(hps[key].override.numpy()) == np.float32(CONFIG[key])
    # not in the config: follows its schedule (beta_1's default) and is reported too
    assert second["hyperparameters"]["beta_1"] == float(np.float32(0.9))
    assert second["val_loss"] == pytest.approx(model.evaluate(*DATA["validation_data"], 0))


def test_a_nested_config_names_a_groups_hyperparameter() -> None:
    config = {k: v for k, v in CONFIG.items() if k != "head/learning_rate"}
    member = _member({**config, "head": {"learning_rate": 0.03}})
    result = member.train()
    assert result["hyperparameters"]["head/learning_rate"] == float(np.float32(0.03))


def test_scale_mode_multiplies_the_schedule() -> None:
    member = _member({**CONFIG, "learning_rate": 3.0}, apply="scale")
    first, second = member.train(), member.train()
    lr = member.member.model.optimizer.hyperparameters["learning_rate"]
    schedule = hs.schedules.exponential(0.01, 0.5, every=8)
    assert not bool(lr.is_set)
    assert first["hyperparameters"]["learning_rate"] == float(np.float32(3.0) * schedule(0))
    step = second["step"] - STEPS_PER_EPOCH  # the period's first step
    assert second["hyperparameters"]["learning_rate"] == float(np.float32(3.0) * schedule(step))
    # the plateau (no improvement after its first update) halved the scale at epoch 2's end
    assert float(lr.scale.numpy()) == np.float32(1.5)


def test_checkpoint_restores_the_complete_state_and_continues_exactly(tmp_path) -> None:
    member = _member()
    member.train(), member.train()
    saved = member.save(str(tmp_path / "ckpt"))
    before = state(member.member.model)
    expected = member.train()
    after = state(member.member.model)

    restored = _member()  # a new actor: built from the config, then restored
    fresh = state(restored.member.model)
    restored.restore(saved)
    assert_same_state(state(restored.member.model), before)
    assert any(not np.array_equal(a, b) for (_, a), (_, b) in zip(fresh, before, strict=True))
    plateau = dict(before)["learning_rate/plateau_reductions"]
    assert plateau == 1  # the controller's state is part of what was restored
    result = restored.train()
    assert result["training_iteration"] == 3 and result["epoch"] == 3
    assert_same_state(state(restored.member.model), after)
    for key in ("loss", "val_loss", "step", "hyperparameters"):
        assert result[key] == expected[key]


@pytest.mark.parametrize(  # scale in `make test-slow`
    "apply", ["override", pytest.param("scale", marks=pytest.mark.slow)]
)
def test_exploit_restores_the_source_and_explore_needs_no_rebuild_or_retrace(
    tmp_path, apply
) -> None:
    source = _member(apply=apply)
    source.train()
    checkpoint = source.save(str(tmp_path / "source"))
    source_state = state(source.member.model)

    target = _member({**CONFIG, "weight_decay": 0.01}, apply=apply)
    target.train(), target.train()
    model = target.member.model
    assert model.traces == [1]
    new_config = {**CONFIG, "learning_rate": 0.012, "head/learning_rate": 0.016}
    assert target.reset(new_config)  # Ray's PBT on a reused actor: reset, then restore
    target.restore(checkpoint)
    assert target.member.model is model
    assert_same_state(state(model), source_state)  # bitwise, before the explore applies

    result = target.train()
    assert target.member.model is model and model.traces == [1]  # not retraced
    hps = model.optimizer.hyperparameters
    for key in ("learning_rate", "head/learning_rate"):
        written = hps[key].override if apply == "override" else hps[key].scale
        expected = new_config[key] * (0.5 if key == "learning_rate" and apply == "scale" else 1)
        assert float(written.numpy()) == np.float32(expected)  # the plateau halved lr's scale
    if apply == "override":
        assert result["hyperparameters"]["learning_rate"] == float(np.float32(0.012))
    assert result["step"] == 2 * STEPS_PER_EPOCH and result["training_iteration"] == 2


@pytest.mark.slow
def test_a_new_trial_on_a_reused_actor_starts_from_a_fresh_build() -> None:
    member = _member()
    member.train()
    assert member.reset({**CONFIG, "learning_rate": 0.02})  # no checkpoint follows
    result = member.train()
    reference = _member({**CONFIG, "learning_rate": 0.02}).train()
    assert result["step"] == STEPS_PER_EPOCH and result["loss"] == reference["loss"]


@pytest.fixture(scope="module")
def trained_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, Path]:
    """A member's checkpoint after one period, and its folder (trained once for the module)."""
    member = _member()
    member.train()
    folder = tmp_path_factory.mktemp("trained") / "ckpt"
    return member.save(str(folder)), folder


@pytest.mark.parametrize(
    ("field", "value", "what"),
    [
        ("epoch", 10**30, "'epoch' is 1000000000000000000000000000000, not an integer >= 0"),
        ("epoch", -1, "'epoch' is -1, not an integer >= 0 below 2**63"),
        ("epoch", float("nan"), "'epoch' is nan, not an integer"),
        ("epoch", "2", "'epoch' is '2', not an integer"),
        ("applied", {"learning_rate": float("inf")}, "'applied/learning_rate' is inf, not a"),
        ("applied", {"learning_rate": 10**400}, "'applied/learning_rate' is 1000"),
        ("applied", {"learning_rate": 1e39}, "'applied/learning_rate' is 1e+39, not a finite"),
        ("applied", [0.1], "'applied' is [0.1], not a dict"),
    ],
)
def test_a_damaged_checkpoint_number_is_one_line_naming_the_file_and_field(
    trained_checkpoint: tuple[object, Path], field: str, value: object, what: str
) -> None:
    import json

    saved, folder = trained_checkpoint
    path = folder / "hyperstep.json"
    intact = path.read_text()
    path.write_text(json.dumps({**json.loads(intact), field: value}))
    try:
        with pytest.raises(InvalidArgumentError) as raised:
            _member().restore(saved)
    finally:
        path.write_text(intact)  # the next case damages the intact checkpoint
    (line,) = str(raised.value).splitlines()
    assert line.startswith(f"{path} is damaged: ") and what in line


def test_bad_arguments_name_what_was_received() -> None:
    with pytest.raises(InvalidArgumentError, match="apply='add'"):
        hs.tune.trainable(build, DATA, apply="add")
    with pytest.raises(InvalidArgumentError, match="epochs_per_report=0"):
        hs.tune.trainable(build, DATA, epochs_per_report=0)
    with pytest.raises(InvalidArgumentError, match="metric='val_acc'"):
        _member(metric="val_acc").train()
    with pytest.raises(InvalidArgumentError, match=r"config\['learning_rate'\]='fast'"):
        _member({**CONFIG, "learning_rate": "fast"}).train()
    with pytest.raises(InvalidArgumentError, match="epochs"):
        hs.tune.trainable(build, {**DATA, "epochs": 3})({**CONFIG}).train()
    assert members.CONFIG is CONFIG


class Rates(keras.callbacks.Callback):
    """The learning rate each batch trains with (read at the batch's start)."""

    def __init__(self) -> None:
        super().__init__()
        self.rates: list[np.float32] = []

    def on_train_batch_begin(self, batch, logs=None) -> None:
        rate = keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)
        self.rates.append(np.float32(rate))


def _build_reading_total(total):
    def build(config):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        optimizer = hs.scheduled(
            keras.optimizers.SGD(),
            clock=hs.Clock(total=total),
            learning_rate="cosine(0.1, steps=0.9 * total, end=0.01)",
        )
        model.compile(optimizer, "mse")
        return model, [Rates()]

    return build


@pytest.mark.backend("tensorflow", "jax", "torch")
def test_a_member_keeps_the_length_it_was_given_across_periods_and_checkpoints(tmp_path) -> None:
    total = 3 * STEPS_PER_EPOCH  # three report periods of one epoch
    data = {"x": members.X, "y": members.Y, "batch_size": 8, "shuffle": False}
    cls = hs.tune.trainable(_build_reading_total(total), data, metric="loss")
    member = cls({})
    member.train()
    checkpoint = member.save(str(tmp_path / "ckpt"))
    member.train(), member.train()
    by_hand = hs.parse(f"cosine(0.1, steps={0.9 * total!r}, end=0.01)")
    expected = [np.float32(by_hand(step)) for step in range(total)]
    rates = member.member.callbacks[0].rates
    np.testing.assert_array_equal(
        np.array(rates).view(np.uint32), np.array(expected).view(np.uint32)
    )
    assert member.member.model.optimizer.clock.total == total

    restored = cls({})  # an exploit: another actor restores the checkpoint and continues
    restored.restore(checkpoint)
    restored.train(), restored.train()
    assert restored.member.callbacks[0].rates == rates[STEPS_PER_EPOCH:]
    assert restored.member.model.optimizer.clock.total == total


@pytest.mark.backend("tensorflow", "jax", "torch")
def test_a_member_reading_total_without_a_length_refuses_naming_the_fix() -> None:
    # each period's fit is a part of the run, whose length the trial's stop criterion decides
    data = {"x": members.X, "y": members.Y, "batch_size": 8, "shuffle": False}
    member = hs.tune.trainable(_build_reading_total(None), data, metric="loss")({})
    with pytest.raises(ValueError, match=r"reads `total`.*clock.total = n.*total=None"):
        member.train()
