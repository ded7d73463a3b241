"""Population-based training (PBT, PB2) on Ray Tune: :func:`trainable` runs it,
:func:`replay` turns a member's policy log into schedules to retrain it alone.

Every hyperparameter of an ``hs.scheduled`` optimizer or an ``hs.StepOptimizer`` lives in
variables, so PBT needs no rebuild: an exploit loads the source member's checkpoint into
the running model (weights, optimizer slots, clock, each hyperparameter's scale, override
and controller state, bitwise) and an explore assigns the new values to the hyperparameters'
variables; the compiled train step is not traced again. Ray is imported when
:func:`trainable` is called (the ``hyperstep[tune]`` extra); :func:`replay` needs no Ray.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping
from typing import Any

import keras

from hyperstep.control.reading import read_all
from hyperstep.control.wrapped import hyperstep_optimizer
from hyperstep.errors import BackendError, InvalidArgumentError, InvalidTypeError, received
from hyperstep.schedules import Schedule, piecewise
from hyperstep.schedules.base import FLOAT32_MAX, check_positive_int, is_number
from hyperstep.schedules.checks import check_choice

#: what the config value of a hyperparameter writes: its override or its scale
APPLY_MODES = ("override", "scale")
_WEIGHTS = "hyperstep.weights.h5"
_META = "hyperstep.json"
_RESERVED = ("epochs", "initial_epoch")


def trainable(
    build: Callable[[dict[str, Any]], Any],
    data: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
    *,
    epochs_per_report: int = 1,
    metric: str = "val_loss",
    apply: str = "override",
) -> type:
    """Return a Ray Tune ``Trainable`` class that trains ``build(config)`` with ``data``.

    Each report period runs ``model.fit`` for ``epochs_per_report`` epochs (``epoch``
    continues across periods, as in one long ``fit``) and reports ``fit``'s last logs
    (``metric`` among them), ``step`` (the clock), ``epoch`` and ``hyperparameters``: each
    hyperparameter's value at the period's first step, the config applied. Each ``config``
    key that names a hyperparameter of ``model.optimizer.hyperparameters``
    (``"learning_rate"``, ``"weight_decay"``, ``"head/learning_rate"`` for a Group's, or
    nested: ``{"head": {"learning_rate": ...}}``, as Ray's PB2 needs) is applied to it:

    - ``apply="override"``: ``value = config[key]`` (``hp.set``): the schedule is replaced.
    - ``apply="scale"``: ``value = schedule(step) * config[key]`` (``hp.scale``): the
      schedule keeps running and PBT tunes a multiplier (a controller writing the same
      scale is overruled at each explore).

    Checkpoints, exploits and exact resume: docs/tune.md. Use the class with
    ``ray.tune.Tuner(..., tune_config=TuneConfig(reuse_actors=True))`` so that PBT reuses
    the running model (``reset_config``).

    Args:
        build: ``build(config)`` returns a compiled Keras model whose optimizer is
            ``hs.scheduled(...)`` or ``hs.StepOptimizer``, or ``(model, callbacks)`` with
            Keras callbacks (controllers such as ``hs.ReduceOnPlateau``) passed to ``fit``.
        data: Keyword arguments of ``model.fit`` (``x``, ``y``, ``batch_size``,
            ``validation_data``, ``shuffle``, ...), or a function of no arguments returning
            them (called once per Ray actor, e.g. to build a ``tf.data`` pipeline). Exact
            resume needs an order that depends only on the epoch (``shuffle=False``).
        epochs_per_report: Epochs per report period (Ray training iteration).
        metric: A key of ``fit``'s logs that must be reported (PBT's ``metric``).
        apply: ``"override"`` or ``"scale"`` (see above).

    Returns:
        A subclass of ``ray.tune.Trainable``.

    Raises:
        BackendError: If Ray Tune is not installed (``pip install "hyperstep[tune]"``).

    Example:
        >>> import numpy as np, keras, hyperstep as hs
        >>> def build(config):
        ...     keras.utils.set_random_seed(0)
        ...     model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        ...     model.compile(hs.scheduled(keras.optimizers.SGD()), "mse")
        ...     return model
        >>> x = np.ones((8, 3), "float32")
        >>> Member = hs.tune.trainable(build, {"x": x, "y": x[:, :1], "batch_size": 4},
        ...                            metric="loss")
        >>> member = Member({"learning_rate": 0.05})
        >>> result = member.train()
        >>> result["step"], result["hyperparameters"]["learning_rate"]
        (2, 0.05000000074505806)
    """
    try:
        from ray import tune
    except ImportError as error:
        raise BackendError(
            "`hs.tune.trainable` needs Ray Tune. Install it with `pip install "
            f'"hyperstep[tune]"` (or `pip install "ray[tune]"`). ({error})'
        ) from error
    epochs_per_report = check_positive_int("trainable", "epochs_per_report", epochs_per_report)
    check_choice("trainable", "apply", apply, APPLY_MODES)
    if not callable(build):
        raise InvalidTypeError(
            f"`trainable(build=...)` must be a function of the config returning a compiled "
            f"Keras model. {received('build', build)}"
        )
    if not (callable(data) or isinstance(data, Mapping)):
        raise InvalidTypeError(
            f"`trainable(data=...)` must be a dict of `model.fit` arguments or a function "
            f"returning one. {received('data', data)}"
        )

    class HyperstepTrainable(tune.Trainable):  # type: ignore[misc, name-defined]
        """A PBT member: one compiled model, restored and perturbed in place."""

        def setup(self, config: dict[str, Any]) -> None:
            self.member = Member(
                build, data, epochs_per_report=epochs_per_report, metric=metric, apply=apply
            )
            self.member.build(config)
            self.fresh = False

        def step(self) -> dict[str, Any]:
            if self.fresh:  # a new trial on a reused actor, no checkpoint to start from
                self.member.build(self.config)
                self.fresh = False
            return self.member.train(self.config)

        def save_checkpoint(self, checkpoint_dir: str) -> None:
            self.member.save(checkpoint_dir)

        def load_checkpoint(self, checkpoint: Any) -> None:
            self.member.load(str(checkpoint), self.config)
            self.fresh = False

        def reset_config(self, new_config: dict[str, Any]) -> bool:
            self.config = new_config
            self.fresh = True  # until a checkpoint is restored
            return True

    HyperstepTrainable.__qualname__ = HyperstepTrainable.__name__
    return HyperstepTrainable


class Member:
    """One model trained in report periods; saves, loads and applies config values."""

    def __init__(
        self,
        build: Callable[[dict[str, Any]], Any],
        data: Mapping[str, Any] | Callable[[], Mapping[str, Any]],
        *,
        epochs_per_report: int,
        metric: str,
        apply: str,
    ) -> None:
        self.builder, self.data = build, data
        self.epochs_per_report, self.metric, self.mode = epochs_per_report, metric, apply
        self.model: Any = None
        self.callbacks: list[Any] = []
        self.structure: dict[str, Any] | None = None
        self.fit_arguments: dict[str, Any] | None = None
        self.epoch = 0
        self.applied: dict[str, float] = {}

    # ---- the model and its hyperparameters ----------------------------------------------
    def build(self, config: Mapping[str, Any]) -> None:
        built = self.builder(dict(config))
        model, callbacks = built if isinstance(built, tuple) else (built, [])
        optimizer = hyperstep_optimizer(getattr(model, "optimizer", None))
        hyperparameters = getattr(optimizer, "hyperparameters", None)
        if not isinstance(model, keras.Model) or not isinstance(hyperparameters, dict):
            raise InvalidTypeError(
                f"`trainable(build=...)` must return a Keras model compiled with an "
                f"`hs.scheduled(...)` or `hs.StepOptimizer` optimizer (or `(model, "
                f"callbacks)`). {received('build(config)', built)}"
            )
        self.model, self.callbacks = model, list(callbacks)
        self.structure = self._structure(config)
        self.epoch, self.applied = 0, {}

    @property
    def hyperparameters(self) -> dict[str, Any]:
        return dict(hyperstep_optimizer(self.model.optimizer).hyperparameters)

    def _structure(self, config: Mapping[str, Any]) -> dict[str, Any]:
        names = self.hyperparameters  # (called once the model is built)
        return {k: v for k, v in flatten(config).items() if k not in names}

    def apply(self, config: Mapping[str, Any]) -> None:
        """Write each config value that names a hyperparameter (a finite number) into its
        variables, where it differs from the value applied last."""
        config = flatten(config)
        hyperparameters = self.hyperparameters
        for key in sorted(set(config) & set(hyperparameters)):
            value = config[key]
            if not is_number(value):  # a 0-d array or tensor: its number
                value = getattr(value, "item", lambda v=value: v)()
            if not is_number(value) or not math.isfinite(value):
                raise InvalidArgumentError(
                    f"`config[{key!r}]` names a hyperparameter and must be a finite number. "
                    f"{received(f'config[{key!r}]', config[key])}"
                )
            if self.applied.get(key) == float(value):
                continue
            if self.mode == "override":
                hyperparameters[key].set(float(value))
            else:
                hyperparameters[key].scale.assign(float(value))
            self.applied[key] = float(value)

    # ---- training -----------------------------------------------------------------------
    def train(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Apply ``config``, fit one report period and return the report."""
        self.apply(config)
        values = read_all(self.hyperparameters)
        arguments = dict(self._fit_arguments())
        callbacks = [*self.callbacks, *arguments.pop("callbacks", [])]
        arguments.setdefault("verbose", 0)
        history = self.model.fit(
            **arguments,
            initial_epoch=self.epoch,
            epochs=self.epoch + self.epochs_per_report,
            callbacks=callbacks,
        )
        self.epoch += self.epochs_per_report
        logs = {k: float(v[-1]) for k, v in history.history.items() if v}
        if self.metric not in logs:
            raise InvalidArgumentError(
                f"`trainable(metric=...)` must be a key of `fit`'s logs: {sorted(logs)} (add "
                f"`validation_data` for 'val_...' keys). {received('metric', self.metric)}"
            )
        step = int(keras.ops.convert_to_numpy(hyperstep_optimizer(self.model.optimizer).clock.step))
        return {**logs, "step": step, "epoch": self.epoch, "hyperparameters": values}

    def _fit_arguments(self) -> Mapping[str, Any]:
        if self.fit_arguments is None:
            arguments = self.data() if callable(self.data) else self.data
            reserved = sorted(set(arguments) & set(_RESERVED))
            if reserved:
                raise InvalidArgumentError(
                    f"`trainable(data=...)` must not set {reserved}: each report period fits "
                    f"`epochs_per_report` epochs. {received('data', sorted(arguments))}"
                )
            self.fit_arguments = dict(arguments)
        return self.fit_arguments

    # ---- checkpoints --------------------------------------------------------------------
    def save(self, directory: str) -> None:
        """Write the model's and optimizer's state, the epoch and the applied values."""
        self.model.save_weights(os.path.join(directory, _WEIGHTS))
        with open(os.path.join(directory, _META), "w") as f:
            json.dump({"epoch": self.epoch, "applied": self.applied, "apply": self.mode}, f)

    def load(self, directory: str, config: Mapping[str, Any]) -> None:
        """Load a checkpoint into the running model (rebuilt only if a config key that is no
        hyperparameter changed); ``config`` applies from the next period where it differs."""
        if self.model is None or self._structure(config) != self.structure:
            self.build(config)
        # a fresh model's optimizer is not built yet: Keras would skip all its variables
        # (slots, iterations, the clock) and the member would not continue bitwise
        optimizer = self.model.optimizer
        if self.model.built and not optimizer.built:
            optimizer.build(self.model.trainable_variables)
        self.model.load_weights(os.path.join(directory, _WEIGHTS))
        self.epoch, self.applied = _read_meta(os.path.join(directory, _META))


def _read_meta(path: str) -> tuple[int, dict[str, float]]:
    """The epoch and the applied values a checkpoint's ``hyperstep.json`` holds; a damaged
    one is refused in one line naming the file and the field."""

    def damaged(problem: str) -> InvalidArgumentError:
        return InvalidArgumentError(f"{path} is damaged: {problem}. Restore another checkpoint.")

    try:
        with open(path) as f:
            meta = json.load(f)
    except (OSError, ValueError) as error:
        raise damaged(f"not readable as JSON ({error})") from None
    epoch = meta.get("epoch") if isinstance(meta, dict) else None
    if isinstance(epoch, bool) or not isinstance(epoch, int) or not 0 <= epoch < 2**63:
        raise damaged(f"'epoch' is {epoch!r}, not an integer >= 0 below 2**63")
    applied = meta.get("applied")
    if not isinstance(applied, dict):
        raise damaged(f"'applied' is {applied!r}, not a dict")
    for key, value in applied.items():
        if not is_number(value) or not abs(value) <= FLOAT32_MAX:
            raise damaged(f"'applied/{key}' is {value!r}, not a finite float32 number")
    return epoch, {key: float(value) for key, value in applied.items()}


# ---- replay: the lineage's configs as schedules of the step ------------------------------
def replay(
    policy_file: str | os.PathLike[str], *, steps_per_report: int = 1, synch: bool = False
) -> dict[str, Schedule]:
    """Return ``{config key: piecewise schedule}`` replaying a PBT member's policy log.

    ``value(step) = c_k[key], k = #{i : n_i * steps_per_report <= step}``

    where ``c_0`` is the config the member's lineage started from and ``c_i`` the config
    chosen at the ``i``-th exploit of the chain, applied after report ``n_i``. By default
    ``n_i`` is what Ray's ``PopulationBasedTrainingReplay`` uses: the first report at or
    after the logged clone iteration, at most one change per report. With
    ``PopulationBasedTraining(synch=True)`` pass ``synch=True``: every member is at the same
    iteration when the population is perturbed, but Ray logs the iteration of the member
    whose report completed the round one round late (its last result is not recorded yet),
    so ``n_i`` is the larger of the logged target and clone iterations. With
    :func:`hyperstep.tune.trainable`, a report period is ``epochs_per_report`` epochs, so
    ``steps_per_report = epochs_per_report * steps_per_epoch``. Every numeric (not bool)
    key of the configs gets a schedule (nested dicts as ``"outer/inner"``); in
    ``apply="override"`` mode it is the hyperparameter's value, in ``apply="scale"`` mode
    its multiplier (retrain with ``learning_rate=base * replay(...)["learning_rate"]``).

    Args:
        policy_file: A ``pbt_policy_<trial_id>.txt`` written by Ray Tune's PBT scheduler
            (a leading ``~`` is expanded).
        steps_per_report: Training steps per Ray report (training iteration).
        synch: Whether the policy comes from ``PopulationBasedTraining(synch=True)``.

    Returns:
        One :func:`~hyperstep.schedules.piecewise` schedule per numeric config key, its
        boundaries at the steps where the lineage's config changed.

    Raises:
        InvalidArgumentError: If the file is missing, empty or not a PBT policy log.

    Example:
        >>> import json, os, tempfile
        >>> rows = [["1", "0", 2, 2, {"learning_rate": 0.1}, {"learning_rate": 0.12}],
        ...         ["0", "1", 4, 4, {"learning_rate": 0.12}, {"learning_rate": 0.04}]]
        >>> path = os.path.join(tempfile.mkdtemp(), "pbt_policy_1.txt")
        >>> with open(path, "w") as f:
        ...     f.writelines(json.dumps(r) + "\\n" for r in rows)
        >>> lr = replay(path, steps_per_report=10)["learning_rate"]
        >>> [round(float(v), 4) for v in lr([0, 19, 20, 39, 40])]
        [0.1, 0.1, 0.12, 0.12, 0.04]
    """
    steps_per_report = check_positive_int("replay", "steps_per_report", steps_per_report)
    initial, rows = load_policy(policy_file)
    boundaries: list[int] = []
    configs: list[dict[str, Any]] = [initial]
    for target_report, clone_report, config in rows:
        report = max(target_report, clone_report) if synch else clone_report
        report = max(report, boundaries[-1] + 1 if boundaries else 1)  # as Ray's replay
        boundaries.append(report)
        configs.append(config)
    boundaries = [b * steps_per_report for b in boundaries]
    configs = [flatten(c) for c in configs]  # the first is the lineage's initial config
    return {
        key: piecewise(boundaries, [float(c[key]) for c in configs])
        for key in configs[0]
        if all(key in c and is_number(c[key]) for c in configs)  # finite: checked by _row
    }


def load_policy(
    policy_file: str | os.PathLike[str],
) -> tuple[dict[str, Any], list[tuple[int, int, dict[str, Any]]]]:
    """Return ``(initial config, [(target, clone iteration, new config), ...])``: the chain
    of exploits that led to the file's member, as Ray's ``PopulationBasedTrainingReplay``
    reads it. Ray's PBT writes one row (``_ROW``) per exploit; the chain runs from the last
    row back while each row's target is the previous row's clone."""
    path = os.path.expanduser(os.fspath(policy_file))
    if not os.path.isfile(path):
        raise InvalidArgumentError(
            f"`replay(policy_file=...)` must be a PBT policy log (pbt_policy_<trial>.txt in "
            f"the experiment's directory). No such file. {received('policy_file', path)}"
        )
    rows = []
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise InvalidArgumentError(
                    f"`replay(policy_file=...)`: line {number} is not UTF-8 text ({error}), "
                    f"so not a PBT policy row. {received('policy_file', path)}"
                ) from None
            if not line.strip():
                continue
            rows.append(_row(line, number, path))
    if not rows:
        raise InvalidArgumentError(
            f"`replay(policy_file=...)` is empty: the member never exploited another one, so "
            f"its config never changed. {received('policy_file', path)}"
        )
    changes: list[tuple[int, int, dict[str, Any]]] = []
    last_clone = None
    initial: dict[str, Any] = {}
    for target, clone, target_report, clone_report, old, new in reversed(rows):
        if last_clone is not None and target != last_clone:
            break  # the chain ended: earlier changes were overwritten
        last_clone, initial = clone, old
        changes.append((target_report, clone_report, new))
    return initial, changes[::-1]


_ROW = "[target tag, clone tag, target iteration, clone iteration, old config, new config]"


def _row(line: str, number: int, path: str) -> list[Any]:
    """Line ``number`` of a policy file as a checked row (iterations as ints); raise naming
    the line and what is wrong with it otherwise."""

    def bad(why: str) -> InvalidArgumentError:
        return InvalidArgumentError(
            f"`replay(policy_file=...)`: line {number} is not a PBT policy row {_ROW}: "
            f"{why}: {line.strip()[:200]!r}. {received('policy_file', path)}"
        )

    try:
        row = json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        raise bad("not JSON") from None
    if not (isinstance(row, list) and len(row) == 6):
        raise bad("not a list of 6 items")
    for index, name in ((2, "target iteration"), (3, "clone iteration")):
        value = row[index]
        whole = isinstance(value, float) and math.isfinite(value) and value.is_integer()
        if isinstance(value, bool) or not (isinstance(value, int) or whole) or value < 0:
            raise bad(f"the {name} must be a whole number >= 0, not {value!r}")
        if value >= 2**63:
            raise bad(f"the {name} is {_shown(value)}, above 2**63 - 1")
        row[index] = int(value)
    for index, name in ((4, "old config"), (5, "new config")):
        if not isinstance(row[index], dict):
            raise bad(f"the {name} must be a dict, not {type(row[index]).__name__}")
        for key, value in flatten(row[index]).items():
            if isinstance(value, float) and not math.isfinite(value):
                raise bad(f"the {name}'s {key!r} is {value!r}, not a finite number")
            if is_number(value) and abs(value) > FLOAT32_MAX:
                raise bad(
                    f"the {name}'s {key!r} is {_shown(value)}, beyond float32's range "
                    "(|x| <= 3.4028235e38), in which schedules compute"
                )
    return row


def _shown(value: float) -> str:
    """``value``, or how many digits it has when it is a long integer."""
    return f"a {len(str(abs(value)))}-digit number" if isinstance(value, int) else repr(value)


def flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Return ``config`` with nested dicts flattened to ``"outer/inner"`` keys.

    ``{"head": {"learning_rate": 0.1}}`` names the Group hyperparameter
    ``"head/learning_rate"`` (Ray's PB2 rejects ``/`` in its bounds' keys).
    """
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{prefix}{key}/"))
        else:
            flat[f"{prefix}{key}"] = value
    return flat
