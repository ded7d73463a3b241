"""``hs.tune.replay``: a PBT member's hyperparameter trajectory as one schedule per key.

Ray Tune's ``PopulationBasedTraining`` writes one line per exploit into
``pbt_policy_<trial_id>.txt``: ``[target tag, clone tag, target iteration, clone iteration,
clone config, new config]``. Ray's ``PopulationBasedTrainingReplay`` reads the chain of
lines that leads to the file's member (from the last line back while each line's target
is the previous line's clone) and trains one trial whose config changes to ``new config``
after report ``clone iteration``. :func:`replay` reads the same chain and returns, for each
numeric config key, the piecewise-constant schedule of the clock's step that those config
changes describe, so the member is retrained alone with ``hs.scheduled`` and no Ray.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

from hyperstep.errors import InvalidArgumentError, received
from hyperstep.schedules import Schedule, piecewise
from hyperstep.schedules.base import FLOAT32_MAX, check_positive_int, is_number


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
    of exploits that led to the file's member, read as Ray's replay reads it (the module's)."""
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
