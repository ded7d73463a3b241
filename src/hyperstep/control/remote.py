"""Steering a running job from outside: :class:`Remote` applies commands from a directory.

``hyperstep set runs/exp1 learning_rate=1e-4`` (and ``scale``, ``clear``, ``schedule``,
``cooldown``, ``stop``) writes a numbered command file into ``runs/exp1/commands/``; the
run's :class:`Remote` applies it at the next step boundary with the hyperparameter's own
``set``/``clear``/``scale.assign``/``Cooldown.start`` (an ``assign``: nothing retraces) and
journals it in ``runs/exp1/journal.jsonl``. :func:`replay` turns the journal back into one
schedule per hyperparameter that reproduces the controlled run's values exactly. The
protocol (files, numbering, safety checks) is :mod:`hyperstep.control.directory`.
"""

from __future__ import annotations

import collections
import math
import os
import time
from typing import Any

import keras
import numpy as np
from keras import ops

from hyperstep.backends.fit import write_through
from hyperstep.backends.steering import (
    MAX_AGREED,
    Workers,
    agreement,
    exact_form,
    state_grew,
    traced_values,
    untraced,
    workers,
)
from hyperstep.control.directory import (
    JOURNAL,
    WORKER_JOURNAL,
    append_journal,
    check_command,
    check_directory,
    command_path,
    read_command,
    read_journal,
    write_status,
)
from hyperstep.control.reading import collect
from hyperstep.errors import HyperstepError, InvalidArgumentError
from hyperstep.schedules.base import Schedule
from hyperstep.schedules.expressions import BinaryOp, Constant, Function, Step
from hyperstep.schedules.wsd import Cooldown as CooldownWord

__all__ = ["Remote", "replay"]

#: the state variable (on the first hyperparameter by name) holding the last command applied
APPLIED = "remote_applied"
#: how many recent journal entries the status file shows
RECENT = 10
#: steps per table of a replaced schedule's values (one compiled call each)
TABLE_STEPS = 256


class Remote(keras.callbacks.Callback):
    """Apply commands written into ``directory`` by other processes, at step boundaries.

    In ``fit`` the commands that arrived are applied at the start of the next batch (the
    update of that step is the first to use them); in a custom loop call :meth:`poll` once
    per iteration, before the update. Between commands a poll costs one ``os.stat``; every
    ``status_every`` seconds it also writes ``directory/status.json`` (the step, every
    hyperparameter's value, schedule, scale and override, the last commands), which
    ``hyperstep show`` prints.

    The commands (each a ``hyperstep`` verb, see docs/steering.md):
    ``set NAME=V`` (``hp.set``), ``scale NAME=F`` (``hp.scale.assign(F)``),
    ``clear NAME`` (``hp.clear``), ``schedule NAME=EXPR`` (replace the schedule from this
    step on, with no retrace: see below), ``cooldown NAME [--steps N --shape S]`` (starts
    the hyperparameter's :class:`hyperstep.Cooldown`, created with ``steps`` and ``shape``
    if it has none), ``stop`` (``model.stop_training``: fit ends cleanly after this step,
    its callbacks' checkpoints written); any with ``--at STEP``.

    A traced step (TensorFlow, JAX) keeps the schedule it was traced with, so a replaced
    schedule is computed here, for each step at the step boundary: the new schedule at that
    scalar step (by a ``tf.function``/``jax.jit`` of it alone, the same kernels as in the
    step; a table of 256 steps per call), times ``scale``, written into the override the
    step reads. The values are those of a
    fresh run with the new schedule from that step, and nothing retraces. On eager torch
    the schedule itself is replaced (nothing is traced there). Under ``fit`` with
    ``steps_per_execution = k > 1`` (callbacks between executions only) the Remote arms
    each hyperparameter at ``on_train_begin``, before the step is traced
    (:meth:`hyperstep.Hyperparameter.arm`): the step then reads the override from a table
    of ``k`` values, which the Remote writes at each execution boundary with the next
    ``k`` values it would have written one by one (:mod:`hyperstep.control.value_forms`).
    Names are the optimizer's hyperparameter keys (a group's as ``group/name``) and those
    given as ``hyperparameters``. Every command, applied or refused, is a line of
    ``directory/journal.jsonl``; a malformed one is refused there and never stops training.

    The number of the last command applied is a state variable of the first hyperparameter
    by name (``remote_applied``), saved with it: a run resumed from its checkpoint applies
    each command once, those after the checkpoint again.

    Several workers (``MultiWorkerMirroredStrategy``, multi-process JAX): each worker's
    Remote counts the commands it can read at a step boundary and all take the smallest
    count (one collective per step), so every worker applies the same commands at the same
    step; call :meth:`poll` on every worker. The chief writes ``journal.jsonl`` and
    ``status.json``, worker ``k`` its own ``journal.worker<k>.jsonl``.

    Args:
        directory: The control directory (created with mode 0700 if missing). One directory
            per run.
        hyperparameters: Free :class:`hyperstep.Hyperparameter` objects to control (one, a
            list or a dict), besides the model's optimizer's. Needed in a custom loop.
        status_every: Seconds between status writes (each also after a command).

    Raises:
        InvalidArgumentError: If ``directory`` is writable by its group or everyone, or
            owned by another user.

    Example:
        >>> import os, tempfile, hyperstep as hs
        >>> from hyperstep.control.directory import submit
        >>> lr = hs.Hyperparameter(0.1, name="learning_rate")
        >>> remote = Remote(os.path.join(tempfile.mkdtemp(), "run"), lr)
        >>> _ = remote.poll()
        >>> submit(remote.directory, {"verb": "set", "values": {"learning_rate": 0.01}})
        1
        >>> [(e["status"], e["step"]) for e in remote.poll()]
        [('applied', 0)]
        >>> round(float(lr.value), 6)
        0.01
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        hyperparameters: Any = None,
        *,
        status_every: float = 5.0,
    ) -> None:
        super().__init__()
        self.directory = check_directory(directory, create=True)
        self._given = {} if hyperparameters is None else collect(hyperparameters, owner="Remote")
        self.hyperparameters: dict[str, Any] = {}
        self.status_every = float(status_every)
        #: set by a ``stop`` command (``fit`` stops by itself; a custom loop reads this)
        self.stop_requested = False
        self._applied: Any = None
        self._next: int | None = None
        self._next_path = ""
        self._pending: list[tuple[int, dict[str, Any]]] = []
        self._recent: collections.deque[dict[str, Any]] = collections.deque(maxlen=RECENT)
        self._last_status = -math.inf
        self._state = "running"
        self._place = Workers()
        self._agree: Any = None
        self._journal_name = JOURNAL
        #: replaced schedules driven through the override: name -> Replacement
        self._replaced: dict[str, Replacement] = {}
        #: names whose override a ``set`` command holds (a replacement waits under it)
        self._held: set[str] = set()
        #: names whose value reaches Keras in float64 (``exact_at``), as the journal says
        self._exact: set[str] = set()
        #: names armed with a table of values (fit with steps_per_execution > 1): name -> k
        self._armed: dict[str, int] = {}
        if self._given:
            self._bind({})

    # ---- binding --------------------------------------------------------------------------
    def set_model(self, model: Any) -> None:
        super().set_model(model)
        optimizer, found = _optimizer_hyperparameters(model)
        self._exact = {name for name in found if exact_form(name, optimizer)}
        self._bind(found)

    def _bind(self, found: dict[str, Any]) -> None:
        self.hyperparameters = {**found, **self._given}
        if not self.hyperparameters:
            raise InvalidArgumentError(
                "`Remote` found no hyperparameter to control: the model's optimizer is not "
                "hs.scheduled or hs.StepOptimizer, and none were given. Pass "
                "`hs.Remote(directory, hyperparameters=...)`. Received: hyperparameters=None"
            )
        owner = self.hyperparameters[min(self.hyperparameters)]
        if APPLIED in owner.state:
            self._applied = owner.state[APPLIED]
        else:
            self._applied = owner.add_state(APPLIED, 0, "int64")

    def _sync(self) -> None:
        """On JAX, put fit's training state back into the variables (a write then reaches
        the next step); nothing elsewhere."""
        if getattr(self, "_model", None) is not None:
            _ = self.model

    # ---- polling --------------------------------------------------------------------------
    def poll(self) -> list[dict[str, Any]]:
        """Apply the commands that arrived (and those whose ``--at`` step came); return the
        journal entries written. Call it once per iteration, before the update (on every
        worker, when there are several)."""
        if self._next is None:
            self._begin()
        assert self._next is not None
        now = time.monotonic()
        ready: int | None = None  # one worker: every command that is there
        if self._agree is not None:  # several: the commands every worker can read
            ready = self._agree(self._readable())
        elif (  # between commands: one stat (and a clock read)
            not self._pending
            and not self._replaced
            and not os.path.exists(self._next_path)
            and now - self._last_status < self.status_every
        ):
            return []
        entries: list[dict[str, Any]] = []
        if self._pending:
            self._sync()
            entries += self._due()
        taken = 0
        if ready or (ready is None and os.path.exists(self._next_path)):
            self._sync()
            while (ready is None and os.path.exists(self._next_path)) or taken < (ready or 0):
                entries.append(self._take(self._next))
                taken += 1
                self._next += 1
                self._next_path = os.fspath(command_path(self.directory, self._next))
        if self._replaced:
            self._sync()
            self._drive()
        if entries or now - self._last_status >= self.status_every:
            self._sync()
            self._last_status = now
            self.write_status()
        return entries

    def _readable(self) -> int:
        """How many consecutive commands from the next one this worker can read now."""
        assert self._next is not None
        count = 0
        while count < MAX_AGREED and os.path.exists(
            command_path(self.directory, self._next + count)
        ):
            count += 1
        return count

    def _begin(self) -> None:
        """First poll (after fit's callbacks restored a checkpoint): continue after the
        last command applied; re-apply what is not in variables (replaced schedules) and
        re-queue ``--at`` commands whose step is still ahead."""
        self._sync()
        owner = self.hyperparameters[min(self.hyperparameters)]
        self._place = workers(owner.scale)
        self._agree = agreement(self._place)
        if not self._place.chief:
            self._journal_name = WORKER_JOURNAL.format(index=self._place.index)
        applied = _int(self._applied)
        self._next = applied + 1
        self._next_path = os.fspath(command_path(self.directory, self._next))
        append_journal(
            self.directory,
            {
                "event": "begin",
                "worker": self._place.index,
                "step": self._step(),
                "applied": applied,
                "pid": os.getpid(),
                "hyperparameters": {
                    n: {**_describe(hp), "exact": n in self._exact}
                    for n, hp in self.hyperparameters.items()
                },
            },
            self._journal_name,
        )
        if applied == 0:
            return
        taken = {}
        for entry in _journal(self.directory, self._journal_name):
            seq = entry.get("seq")
            if (
                isinstance(seq, int)
                and seq <= applied
                and entry.get("status") in ("applied", "pending")
            ):
                taken[seq] = entry
        step = self._step()
        for seq in sorted(taken):  # replacements and holds are not in variables: again
            entry, command = taken[seq], taken[seq]["command"]
            if "at" in command and command["at"] > step:
                self._pending.append((seq, command))
                continue
            if entry.get("status") != "applied":
                continue
            for name in _names(command):
                if name not in self.hyperparameters:
                    continue
                if command["verb"] == "schedule":
                    self._replace(name, command["values"][name], int(entry["step"]))
                elif command["verb"] == "cooldown" and name in self._replaced:
                    self._replaced[name].cool(entry["cooldown"][name])
                elif command["verb"] == "set":
                    self._held.add(name)
                elif command["verb"] == "clear":
                    self._held.discard(name)

    def _due(self) -> list[dict[str, Any]]:
        entries, waiting = [], []
        for seq, command in self._pending:
            if command["at"] <= self._step(command):
                entries.append(self._apply(seq, command, resumed=False))
            else:
                waiting.append((seq, command))
        self._pending = waiting
        return entries

    def _take(self, seq: int) -> dict[str, Any]:
        raw: Any = None
        try:
            raw = read_command(command_path(self.directory, seq))
            command = check_command(raw, self.hyperparameters)
            if command["verb"] == "cooldown":
                self._check_cooldowns(command)
            at = command.get("at")
            if at is not None:
                now = self._step(command)
                if at < now:
                    raise InvalidArgumentError(
                        f"step {at} has passed: the run is at step {now}. Received: at={at}"
                    )
                if at > now:
                    self._pending.append((seq, command))
                    self._applied.assign(seq)
                    return self._journal(
                        seq, command, "pending", now, reason=f"waits for step {at}"
                    )
            return self._apply(seq, command, resumed=False)
        except (HyperstepError, OSError, ValueError, TypeError, KeyError) as error:
            self._applied.assign(seq)
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            return self._journal(seq, raw, "refused", None, reason=reason)

    def _check_cooldowns(self, command: dict[str, Any]) -> None:
        for name in command["names"]:
            hp = self.hyperparameters[name]
            cooldown = hp.cooldown
            if cooldown is None:
                if _int(hp.cooldown_start) >= 0:
                    raise InvalidArgumentError(
                        f"{name!r} is cooling down since step {_int(hp.cooldown_start)} (a "
                        f"restored cooldown). Received: cooldown {name}"
                    )
                if "steps" not in command:
                    raise InvalidArgumentError(
                        f"{name!r} has no hs.Cooldown yet: give its length to create one, "
                        f"`hyperstep cooldown DIR {name} --steps N [--shape 1-sqrt]`. "
                        f"Received: cooldown {name}"
                    )
                continue
            for key in ("steps", "shape"):
                if key in command and command[key] != getattr(cooldown, key):
                    raise InvalidArgumentError(
                        f"{name!r}'s cooldown has {key}={getattr(cooldown, key)!r}, fixed "
                        f"when it was created. Received: {key}={command[key]!r}"
                    )

    def _apply(self, seq: int, command: dict[str, Any], resumed: bool) -> dict[str, Any]:
        verb = command["verb"]
        names = list(command.get("values", command.get("names", [])))
        targets = {n: self.hyperparameters[n] for n in names}
        step = self._step(command)
        before = {n: _value(hp) for n, hp in targets.items()}
        extra: dict[str, Any] = {}
        if verb == "set":
            for name, value in command["values"].items():
                targets[name].set(value)
                self._held.add(name)
        elif verb == "scale":
            for name, value in command["values"].items():
                targets[name].scale.assign(np.float32(value))
        elif verb == "clear":
            for name, hp in targets.items():
                hp.clear()
                self._held.discard(name)
        elif verb == "schedule":
            for name, text in command["values"].items():
                self._replace(name, text, step)
            extra["retraced"] = False  # never (kept for journals read by older code)
            extra["driven"] = sorted(  # through the float32 override (not eager torch's)
                n for n in command["values"] if n in self._replaced
            )
        elif verb == "cooldown":
            from hyperstep.control.cooldown import Cooldown

            cooldowns = {}
            for name, hp in targets.items():
                cooldown = hp.cooldown
                if cooldown is None:  # the hyperparameter's dormant cooldown, formed now
                    shape = command.get("shape", "1-sqrt")
                    cooldown = Cooldown(hp, steps=command["steps"], shape=shape)
                cooldown.start()
                cooldowns[name] = {
                    "start": cooldown.start_step,
                    "steps": cooldown.steps,
                    "shape": cooldown.shape,
                    "end": cooldown.end,
                }
            extra["cooldown"] = cooldowns
            for name in cooldowns:
                if name in self._replaced:
                    self._replaced[name].cool(cooldowns[name])
        elif verb == "stop":
            self.stop_requested = True
            model = getattr(self, "_model", None)
            if model is not None:
                model.stop_training = True
        self._applied.assign(max(seq, _int(self._applied)))
        self._drive(names)
        after = {n: _value(hp) for n, hp in targets.items()}
        return self._journal(seq, command, "applied", step, before=before, after=after, **extra)

    def _replace(self, name: str, text: str, step: int) -> None:
        """Replace ``name``'s schedule by ``text`` from ``step`` on (see the class docstring)."""
        from hyperstep.schedules.language import parse

        hp = self.hyperparameters[name]
        new = parse(text)
        mode = self._mode()
        old = hp.value_state.schedule
        found = self._replaced.get(name)
        if found is not None and found.since <= step:  # the pieces of the earlier one
            old = found.whole
        whole = new if step == 0 else _pieces([(0, old), (step, new)])
        hp.schedule = whole  # what eager reads, plots and a later trace see
        if mode == "schedule":  # eager torch: nothing traced, the schedule is enough
            return
        dtype = str(ops.dtype(hp.clock.step))  # the clock's: the step's own cast
        replacement = Replacement(new, step, whole, dtype)
        if _int(hp.cooldown_start) >= 0:  # cooling already: the new schedule cools from there
            replacement.cool(_cooldown_of(hp))
        self._replaced[name] = replacement

    def _mode(self) -> str:
        """How a replaced schedule reaches the step: ``"override"`` (driven at every
        boundary: the override, or an armed table of values) or ``"schedule"`` (eager
        torch)."""
        if untraced(getattr(self, "_model", None)):
            return "schedule"
        return "override"

    def _drive(self, names: Any = None) -> None:
        """Write each replaced schedule's value at this step, times ``scale``, into the
        override the traced step reads (not where a ``set`` holds it, nor before its step)."""
        for name, replacement in self._replaced.items():
            if name in self._held or (names and name not in names):
                continue
            hp = self.hyperparameters[name]
            step = _int(hp.clock.step)
            if step < replacement.since:
                continue
            scale = np.float32(_float(hp.scale))
            span = self._armed.get(name)
            if span is not None:  # the next `span` values, for the steps of one execution
                found = (step, scale)
                if replacement.written != found:
                    table, start = hp.arm(span)
                    values = [replacement.value(s) * scale for s in range(step, step + span)]
                    write_through(table, np.asarray(values, dtype="float32"))
                    write_through(start, step)
                    replacement.written = found
                continue
            value = np.float32(replacement.value(step) * scale)
            if replacement.written != value:
                write_through(hp.override, value)
                replacement.written = value

    def _journal(
        self, seq: int, command: Any, status: str, step: int | None, **fields: Any
    ) -> dict[str, Any]:
        entry = {"seq": seq, "command": command, "status": status, "step": step, **fields}
        append_journal(self.directory, entry, self._journal_name)
        self._recent.append(entry)
        return entry

    def _step(self, command: dict[str, Any] | None = None) -> int:
        names = list((command or {}).get("values", (command or {}).get("names", [])))
        hp = self.hyperparameters[names[0] if names else min(self.hyperparameters)]
        return _int(hp.clock.step)

    def _arm(self) -> None:
        """Under ``fit(steps_per_execution=k > 1)`` on a traced backend, arm every
        hyperparameter with a table of ``k`` values (before the step is traced: a train
        function made earlier, by an earlier ``fit``, is made again here, traced at its
        first call as it would be anyway)."""
        model: Any = getattr(self, "_model", None)
        span = int(getattr(model, "steps_per_execution", 1) or 1) if model is not None else 1
        if span <= 1 or untraced(model):
            return
        fresh = False
        for name, hp in self.hyperparameters.items():
            if self._armed.get(name, 0) >= span:
                continue
            before = hp.value_state.table
            variables = hp.arm(span)
            fresh = fresh or variables[0] is not before
            self._armed[name] = span
            _track(model, hp, variables)
        if fresh:
            state_grew(model)
        if fresh and getattr(model, "train_function", None) is not None:
            model.make_train_function(force=True)

    # ---- status ---------------------------------------------------------------------------
    def write_status(self) -> None:
        """Write ``directory/status.json`` now (read eagerly; on JAX after a state sync).

        Values are read on the host (:meth:`hyperstep.Hyperparameter.host_float`: a table
        of the schedule's values, the state as Python numbers), a few microseconds each.
        """
        if not self._place.chief:
            return
        hyperparameters = {}
        step = self._step()
        for name, hp in self.hyperparameters.items():
            found = {**_describe(hp), "value": _host_value(hp, step)}
            if name in self._replaced and name not in self._held:
                found["override"] = None  # the replaced schedule's value, not a set
            hyperparameters[name] = found
        write_status(
            self.directory,
            {
                "pid": os.getpid(),
                "time": time.time(),
                "state": self._state,
                "step": step,
                "applied": _int(self._applied),
                "pending": [seq for seq, _ in self._pending],
                "hyperparameters": hyperparameters,
                "recent": list(self._recent),
            },
        )

    # ---- Keras callback -------------------------------------------------------------------
    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._arm()

    def on_train_batch_begin(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        self.poll()

    def on_train_end(self, logs: dict[str, Any] | None = None) -> None:
        self._sync()
        for name, replacement in self._replaced.items():  # the schedule holds it now
            if name in self._armed:
                write_through(self.hyperparameters[name].arm(self._armed[name])[1], -1)
                replacement.written = None
            elif name not in self._held:
                self.hyperparameters[name].clear()
                replacement.written = None
        self._state = "stopped" if self.stop_requested else "ended"
        self.write_status()

    @staticmethod
    def replay(journal: str | os.PathLike[str]) -> dict[str, Schedule]:
        """The schedules that reproduce the run journaled in ``journal`` (see :func:`replay`)."""
        return replay(journal)

    def __repr__(self) -> str:
        return f"Remote({str(self.directory)!r}, hyperparameters={list(self.hyperparameters)})"


class Replacement:
    """A schedule replaced from step ``since`` on, driven through the override: ``value``
    gives ``schedule(step)`` (with a cooldown started later, :meth:`cool`) as the traced
    step would, from a table of ``TABLE_STEPS`` values computed in one compiled call;
    ``whole`` is the schedule with the old one before ``since``."""

    def __init__(self, schedule: Schedule, since: int, whole: Schedule, dtype: str) -> None:
        self.schedule, self.since, self.whole, self.dtype = schedule, since, whole, dtype
        self.written: Any = None
        self._values = traced_values(schedule, dtype)
        self._table: tuple[int, np.ndarray] | None = None

    def value(self, step: int) -> np.float32:
        """``schedule(step)`` in float32, as the step computes it."""
        table = self._table
        if table is None or not 0 <= step - table[0] < len(table[1]):
            table = self._table = (step, self._values(step, TABLE_STEPS))
        return np.float32(table[1][step - table[0]])

    def cool(self, cooldown: dict[str, Any]) -> None:
        """Follow ``cooldown`` (as journaled: start, steps, shape, end) from its start."""
        self._values = traced_values(_cooled(self.schedule, cooldown), self.dtype)
        self._table = self.written = None


def _cooldown_of(hp: Any) -> dict[str, Any]:
    """A started cooldown as journaled (start, steps, shape, end), read from its state."""
    from hyperstep.schedules.wsd import DECAY_TYPES

    steps, end, shape = (float(v) for v in ops.convert_to_numpy(hp.cooldown_form))
    return {
        "start": _int(hp.cooldown_start),
        "steps": steps,
        "shape": DECAY_TYPES[int(shape)],
        "end": end,
    }


def _track(model: Any, hp: Any, variables: Any) -> None:
    """Put ``variables`` (``hp``'s table) among the variables of each optimizer that carries
    ``hp``'s state (JAX trains on ``optimizer.variables``: what the step reads must be
    there; a hyperparameter read in the model is in its non-trainable variables already)."""
    optimizer: Any = getattr(model, "optimizer", None)
    for _ in range(4):  # LossScaleOptimizer, SkipNonFinite: each one's list
        tracker = getattr(optimizer, "_tracker", None)
        if tracker is not None and tracker.is_in_store("variables", hp.scale):
            for variable in variables:
                if not tracker.is_in_store("variables", variable):
                    optimizer._track_variable(variable)
        optimizer = getattr(optimizer, "inner_optimizer", None)


def _names(command: dict[str, Any]) -> list[str]:
    return list(command.get("values", command.get("names", [])))


def _optimizer_hyperparameters(model: Any) -> tuple[Any, dict[str, Any]]:
    """The optimizer holding the hyperparameters (inside Keras's and our wrappers) and them."""
    optimizer = getattr(model, "optimizer", None)
    for _ in range(4):  # LossScaleOptimizer, SkipNonFinite: the inner one's
        found = getattr(optimizer, "hyperparameters", None)
        if isinstance(found, dict):
            return optimizer, dict(found)
        optimizer = getattr(optimizer, "inner_optimizer", None)
    return None, {}


def _value(hp: Any) -> float:
    return float(ops.convert_to_numpy(hp.value))


def _host_value(hp: Any, step: int) -> float:
    try:  # a table of the schedule's values: microseconds, where an eager read takes ms
        found = hp.host_float(step)
    except (TypeError, ValueError, HyperstepError):  # e.g. a mirrored variable's tensor
        found = None
    return _value(hp) if found is None else float(np.float32(found))


def _float(variable: Any) -> float:
    return float(ops.convert_to_numpy(variable))  # float() fails on a mirrored variable


def _int(variable: Any) -> int:
    return int(ops.convert_to_numpy(variable))


def _describe(hp: Any) -> dict[str, Any]:
    override = _float(hp.override)
    start = _int(hp.cooldown_start)  # also a restored one, with no hs.Cooldown built
    return {
        "schedule": _repr(hp.value_state.schedule),
        "scale": _float(hp.scale),
        "override": None if math.isnan(override) else override,
        "cooldown": None if start is None or start < 0 else start,
    }


_REPRS: dict[int, tuple[Any, str]] = {}


def _repr(schedule: Any) -> str:
    """``repr(schedule)``, kept per schedule object (a nested schedule's repr takes a while)."""
    found = _REPRS.get(id(schedule))
    if found is None or found[0] is not schedule:
        found = _REPRS[id(schedule)] = (schedule, repr(schedule))
    return found[1]


def _journal(directory: Any, name: str = JOURNAL) -> list[dict[str, Any]]:
    try:
        return read_journal(directory / name)
    except OSError:
        return []


# ---- replay -------------------------------------------------------------------------------
def replay(journal: str | os.PathLike[str]) -> dict[str, Schedule]:
    """Return, per hyperparameter, the schedule that reproduces a controlled run's values.

    ``value(step)`` of the returned schedule is, bit for bit, the value the controlled run's
    updates used at ``step``: its original schedule times its scale, with every applied
    command from the step it took effect (``where(step < s1, v0, where(step < s2, v1,
    ...))``; an override is a constant, a scale multiplies, a cooldown is its formula, a
    replaced schedule driven through the float32 override is ``scale * new``, rounded to
    float32 as the override held it). Where the run handed Keras a float64 value (the
    journal's ``exact``: TensorFlow's ``hs.scheduled`` names but ``learning_rate``) the
    pieces are those whose float64 form (:func:`hyperstep.control.value_forms.exact_value`)
    is that value. A fresh run built with these schedules (and the same data) ends with
    the controlled run's weights. Only hyperparameters a command changed are returned, and a
    command applied again after a resume counts where it took effect last.

    Args:
        journal: The ``journal.jsonl`` of the controlled run (or its directory).

    Raises:
        InvalidArgumentError: If the journal has no ``begin`` entry (not a Remote's journal).
    """
    from hyperstep.schedules.language import parse

    path = os.fspath(journal)
    if os.path.isdir(path):
        path = os.path.join(path, "journal.jsonl")
    entries = read_journal(path)
    begin = next((e for e in entries if e.get("event") == "begin"), None)
    if begin is None:
        raise InvalidArgumentError(
            "the journal has no `begin` entry: not written by hs.Remote. "
            f"Received: journal={path!r}"
        )
    applied: dict[int, dict[str, Any]] = {}
    for entry in entries:
        if entry.get("status") == "applied" and isinstance(entry.get("seq"), int):
            applied[entry["seq"]] = entry  # the last time it took effect counts
    ordered = sorted(applied.values(), key=lambda e: (e["step"], e["seq"]))
    result: dict[str, Schedule] = {}
    for name, start in begin["hyperparameters"].items():
        state = {
            "base": parse(start["schedule"]),
            "scale": start["scale"],
            "override": start["override"],
            "cooldown": None,
            "driven": False,
        }
        exact = bool(start.get("exact", False))
        pieces: list[tuple[int, Schedule]] = [(0, _expression(state, exact))]
        changed = False
        for entry in ordered:
            if not _changes(entry, name, state, parse):
                continue
            changed = True
            piece = (int(entry["step"]), _expression(state, exact))
            pieces = [p for p in pieces if p[0] < piece[0]] + [piece]
        if changed:
            result[name] = _pieces(pieces)
    return result


def _changes(entry: dict[str, Any], name: str, state: dict[str, Any], parse: Any) -> bool:
    command = entry["command"]
    verb = command["verb"]
    if name not in command.get("values", {}) and name not in command.get("names", []):
        return False
    if verb == "set":
        state["override"] = float(np.float32(command["values"][name]))
    elif verb == "clear":
        state["override"] = None
    elif verb == "scale":
        state["scale"] = float(np.float32(command["values"][name]))
    elif verb == "schedule":
        state["base"] = parse(command["values"][name])
        state["driven"] = name in entry.get("driven", [])  # the float32 override held it
    elif verb == "cooldown":
        state["cooldown"] = entry["cooldown"][name]
    else:
        return False
    return True


def _expression(state: dict[str, Any], exact: bool) -> Schedule:
    """``override if set else base(step) * scale`` as a schedule, rounded as the run rounds
    (in float64 where ``exact``: see :func:`hyperstep.control.value_forms.exact_value`)."""
    if state["override"] is not None:
        return Constant(state["override"])
    base = state["base"]
    if state["cooldown"] is not None:
        base = _cooled(base, state["cooldown"])
    scale = float(np.float32(state["scale"]))
    if isinstance(base, Constant):
        if state["driven"] or (not exact and scale != 1.0):
            # float32(base * scale), as the override (driven) or a float32 product holds
            # it (a product of constants would fold in float64)
            return Constant(float(np.float32(np.float32(base.value_) * np.float32(scale))))
        # float64(c) * scale, as exact_at computes it
        return base if scale == 1.0 else Constant(float(base.value_) * scale)
    if state["driven"] and exact:  # the float32 override: a float32 product, constant left
        return BinaryOp("*", Constant(scale), base)
    if scale == 1.0:
        return base
    return BinaryOp("*", base, Constant(scale))


def _cooled(base: Schedule, cooldown: dict[str, Any]) -> Schedule:
    """:class:`hyperstep.Cooldown`'s values from its start ``s0`` (steps after it only): the
    word ``cooldown(base(s0), s0, steps, shape, end)``, which computes them as the run did."""
    s0 = float(cooldown["start"])
    v0 = float(np.float32(ops.convert_to_numpy(base(s0))))
    end = float(np.float32(cooldown["end"]))  # as the run's float32 `cooldown_form` holds it
    return CooldownWord(v0, s0, float(cooldown["steps"]), cooldown["shape"], end)


def _pieces(pieces: list[tuple[int, Schedule]]) -> Schedule:
    expression = pieces[-1][1]
    for index in range(len(pieces) - 2, -1, -1):
        boundary = float(pieces[index + 1][0])
        less = BinaryOp("<", Step(), boundary)
        expression = Function("where", [less, pieces[index][1], expression])
    return expression
