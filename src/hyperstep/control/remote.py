"""Steering a running job from outside: :class:`Remote` applies the commands written into a
directory (:mod:`hyperstep.control.directory`, the protocol) with the verbs of
:mod:`hyperstep.control.verbs`, and journals them for :func:`~hyperstep.control.verbs.replay`.
"""

from __future__ import annotations

import collections
import math
import os
import time
import warnings
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
from hyperstep.control import verbs
from hyperstep.control.cooldown import Cooldown
from hyperstep.control.directory import (
    JOURNAL,
    WORKER_JOURNAL,
    append_journal,
    check_directory,
    command_after,
    command_path,
    hold,
    next_sequence,
    read_command,
    read_journal,
    write_status,
)
from hyperstep.control.reading import collect
from hyperstep.control.value_forms import read_clock
from hyperstep.control.verbs import Track, check_command, cooled, names_of, pieces_of, replay
from hyperstep.control.wrapped import every_optimizer, hyperstep_optimizer
from hyperstep.errors import HyperstepError, InvalidArgumentError
from hyperstep.schedules.base import Schedule
from hyperstep.schedules.wsd import DECAY_TYPES

__all__ = ["Remote"]

#: the state variable (on the first hyperparameter by name) holding the last command applied
APPLIED = "remote_applied"
#: the state variable (beside it) holding this run's id, which its journal's `begin` names
RUN = "remote_run"
#: how many recent journal entries the status file shows
RECENT = 10
#: steps per table of a replaced schedule's values (one compiled call each)
TABLE_STEPS = 256


class Remote(keras.callbacks.Callback):
    """Apply commands written into ``directory`` by other processes, at step boundaries.

    In ``fit`` the commands that arrived are applied at the start of the next batch; in a
    custom loop call :meth:`poll` once per iteration, before the update. Each verb is a row
    of :data:`hyperstep.control.verbs.VERBS`: the Remote applies its fold, what
    :meth:`replay` folds over the journal ``directory/journal.jsonl``, and writes what
    changed by ``assign`` (nothing retraces). Names are the optimizer's hyperparameter keys
    (a group's as ``group/name``) and those given as ``hyperparameters``. docs/steering.md
    has the protocol (the status file, resuming, one live run per directory, several
    workers), the safety promises and costs.

    Args:
        directory: The control directory (created with mode 0700 if missing). One directory
            per run.
        hyperparameters: Free :class:`hyperstep.Hyperparameter` objects to control (one, a
            list or a dict), besides the model's optimizer's. Needed in a custom loop.
        status_every: Seconds between status writes (each also after a command).

    Raises:
        InvalidArgumentError: If ``directory`` is writable by its group or everyone, owned
            by another user, or in a parent others can write without the sticky bit; at the
            start of training, if another live run holds it.

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
        self._run: Any = None
        self._clock: Any = None
        self._owner: Any = None
        self._lock: int | None = None
        self._next: int | None = None
        self._next_path = ""
        #: commands numbered up to this one were sent before this run began
        self._older = 0
        self._pending: list[tuple[int, dict[str, Any]]] = []
        self._recent: collections.deque[dict[str, Any]] = collections.deque(maxlen=RECENT)
        self._last_status = -math.inf
        self._failing = False
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
        try:  # held from here (a live run to the CLI); a second run refuses at its start
            self._lock = hold(self.directory, wait=0.0)
        except InvalidArgumentError:  # another worker of this run, or another run
            self._lock = None

    # ---- binding --------------------------------------------------------------------------
    def set_model(self, model: Any) -> None:
        super().set_model(model)
        optimizer = hyperstep_optimizer(getattr(model, "optimizer", None))
        found = dict(getattr(optimizer, "hyperparameters", None) or {})
        self._exact = {name for name in found if exact_form(name, optimizer)}
        self._bind(found)
        self._own_state()  # before fit reads what a checkpoint restored

    def _bind(self, found: dict[str, Any]) -> None:
        """Control ``found`` (the optimizer's) and the given hyperparameters; the steering
        clock and the state (the last command applied, the run's id) are the first
        optimizer hyperparameter's by name (else the first given one's)."""
        self.hyperparameters = {**found, **self._given}
        if not self.hyperparameters:
            raise InvalidArgumentError(
                "`Remote` found no hyperparameter to control: the model's optimizer is not "
                "hs.scheduled or hs.StepOptimizer, and none were given. Pass "
                "`hs.Remote(directory, hyperparameters=...)`. Received: hyperparameters=None"
            )
        self._owner = (found or self._given)[min(found or self._given)]
        self._clock = self._owner.clock

    def _own_state(self) -> None:
        """The state (the last command applied, the run's id) on the owner, made once the
        model is known (at ``set_model``, else at the first poll; a checkpoint loaded
        earlier fills it)."""
        for name, variable in ((APPLIED, "_applied"), (RUN, "_run")):
            found = self._owner.state.get(name)
            if found is None:
                found = self._owner.add_state(name, 0, "int64")
            setattr(self, variable, found)

    def _sync(self) -> None:
        """On JAX, put fit's training state back into the variables (a write then reaches
        the next step); nothing elsewhere."""
        if getattr(self, "_model", None) is not None:
            _ = self.model

    def _claim(self) -> None:
        """Hold the directory for this run: the chief does, when there are several workers
        (another worker lets go of what its constructor took)."""
        self._place = workers(self._clock.step)
        if not self._place.chief:
            self.close()
        elif self._lock is None:
            self._lock = hold(self.directory, wait=5.0)  # a worker may let go of it first

    def close(self) -> None:
        """Release the directory (``fit`` does at its end; a custom loop when done)."""
        lock = getattr(self, "_lock", None)  # None: never held (or __init__ refused)
        if lock is not None:
            self._lock = None
            os.close(lock)

    def __del__(self) -> None:
        self.close()

    # ---- polling --------------------------------------------------------------------------
    def poll(self) -> list[dict[str, Any]]:
        """Apply the commands that arrived (and those whose ``--at`` step came), at most
        ``MAX_AGREED`` (the rest at the next polls: deterministic, whatever the machine's
        load); return the journal entries written.
        Call it once per iteration, before the update (on every worker, when there are
        several). Nothing in the directory raises here: a bad command is refused in the
        journal, an I/O error is one warning (steering goes on once the directory is back).
        """
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
            and not os.path.lexists(self._next_path)
            and now - self._last_status < self.status_every
        ):
            return []
        entries: list[dict[str, Any]] = []
        if self._pending:
            self._sync()
            entries += self._due()
        if ready is None and now - self._last_status >= self.status_every:
            entries += self._gap()
        limit = MAX_AGREED - len(entries) if ready is None else ready
        if limit > 0 and (ready or os.path.lexists(self._next_path)):
            self._sync()
            for _ in range(limit):
                if ready is None and not os.path.lexists(self._next_path):
                    break
                entries.append(self._take(self._next))
                self._advance(self._next + 1)
        if self._replaced:
            self._sync()
            self._drive()
        if entries or now - self._last_status >= self.status_every:
            self._sync()
            self._last_status = now
            self.write_status()
        return entries

    def _advance(self, sequence: int) -> None:
        self._next = sequence
        self._next_path = os.fspath(command_path(self.directory, sequence))

    def _readable(self) -> int:
        """How many consecutive commands from the next one this worker can read now."""
        assert self._next is not None
        count = 0
        while count < MAX_AGREED and os.path.lexists(
            command_path(self.directory, self._next + count)
        ):
            count += 1
        return count

    def _gap(self) -> list[dict[str, Any]]:
        """Skip missing numbers before a later command (a file deleted), journaled."""
        assert self._next is not None
        if os.path.lexists(self._next_path):
            return []
        try:
            found = command_after(self.directory, self._next)
        except OSError:
            return []
        if found is None:
            return []
        first, last = self._next, found - 1
        self._applied.assign(last)
        self._advance(found)
        reason = f"no command {first}..{last} in commands/ (deleted, or a link): skipped"
        return [self._journal(first, None, "refused", None, through=last, reason=reason)]

    def _begin(self) -> None:
        """First poll (after fit's callbacks restored a checkpoint): hold the directory;
        a run it has seen continues after the last command applied (re-applying what is
        not in variables, replaced schedules, and re-queueing ``--at`` commands whose step
        is not past); a run new to it starts after the commands already there (those sent
        with ``queued`` for the next run excepted)."""
        self._sync()
        if self._applied is None:  # a custom loop: no model
            self._own_state()
        self._claim()
        self._agree = agreement(self._place)
        if not self._place.chief:
            self._journal_name = WORKER_JOURNAL.format(index=self._place.index)
        try:
            entries = read_journal(self.directory / self._journal_name)
        except OSError:
            entries = []
        run = _int(self._run)
        known = run != 0 and any(e.get("event") == "begin" and e.get("run") == run for e in entries)
        if not known:
            if run == 0:  # the directory's n-th fresh run: the same on every worker
                run = 1 + sum(e.get("event") == "begin" and not e.get("resumed") for e in entries)
                self._run.assign(run)
            seen = [e.get("through", e.get("seq")) for e in entries]
            journaled = max([0, *(s for s in seen if type(s) is int)])
            self._applied.assign(journaled)
            try:  # the commands sent before this run began
                older = max(0, next_sequence(self.directory) - 1 - journaled)
            except OSError:
                older = 0
            if self._agree is not None:  # what every worker saw: none obeys what another refuses
                older = self._agree(older)
            self._older = journaled + older
        applied = _int(self._applied)
        self._advance(applied + 1)
        begin = {
            "event": "begin",
            "step": self._step(),
            "run": run,
            "resumed": known,
            "worker": self._place.index,
            "applied": applied,
            "pid": os.getpid(),
            "hyperparameters": {
                n: {**_describe(hp), "exact": n in self._exact}
                for n, hp in self.hyperparameters.items()
            },
        }
        self._write(append_journal, begin, self._journal_name)
        if not known or applied == 0:
            return
        step = self._step()  # replacements, holds: not in variables
        for entry in verbs.in_effect(verbs.run_entries(entries, run), ("applied", "pending")):
            seq, command = entry["seq"], entry["command"]
            if seq > applied:
                continue
            if "at" in command and command["at"] >= step:  # not yet taken effect
                self._pending.append((seq, command))
            elif entry["status"] == "applied":
                try:  # its verb's fold of each name's state, as replay folds it
                    for name in filter(self.hyperparameters.__contains__, names_of(command)):
                        old = self._track(name)
                        new = verbs.VERBS[command["verb"]].fold(old, command, name, entry)
                        self._enact(name, old, new, entry["step"], restoring=True)
                except Exception as error:  # a journal line the run did not write
                    _warn(f"could not re-apply journaled command {seq} ({error})")

    def _due(self) -> list[dict[str, Any]]:
        """Apply the pending commands whose step came, checked again now."""
        entries: list[dict[str, Any]] = []
        waiting = []
        step = self._step()
        for seq, command in self._pending:
            if command["at"] > step or len(entries) >= MAX_AGREED:
                waiting.append((seq, command))
                continue
            try:
                command = check_command(command, self.hyperparameters)
                entries.append(self._apply(seq, command))
            except Exception as error:
                entries.append(self._journal(seq, command, "refused", None, reason=_why(error)))
        self._pending = waiting
        return entries

    def _take(self, seq: int) -> dict[str, Any]:
        raw: Any = None
        try:
            raw = self._read(seq)
            if seq <= self._older and not (isinstance(raw, dict) and raw.get("queued") is True):
                raise InvalidArgumentError(
                    f"command {seq} was sent before this run began (to an earlier run "
                    "of this directory): not applied. Received: a fresh run"
                )
            command = check_command(raw, self.hyperparameters)
            at = command.get("at")
            if at is not None:
                now = self._step()
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
            return self._apply(seq, command)
        except Exception as error:  # anything a command file holds is refused, never raised
            self._applied.assign(max(seq, _int(self._applied)))
            return self._journal(seq, raw, "refused", None, reason=_why(error))

    def _read(self, seq: int) -> Any:
        """Command ``seq``, once the directory is checked again (owner, mode, parent, no
        link in its path)."""
        if os.path.realpath(self.directory) != os.fspath(self.directory):
            raise InvalidArgumentError(
                f"the control directory is no longer the directory this run holds (a link "
                f"in its path now). Received: directory={str(self.directory)!r}"
            )
        check_directory(self.directory)
        return read_command(command_path(self.directory, seq))

    def _apply(self, seq: int, command: dict[str, Any]) -> dict[str, Any]:
        """Apply ``command`` now: each name's steered state becomes the verb's fold of it
        (:data:`hyperstep.control.verbs.VERBS`, what replay folds over the journal), and
        what changed is written into the hyperparameter (:meth:`_enact`)."""
        verb = command["verb"]
        names = names_of(command)
        step = self._step()
        before = {n: _host_value(self.hyperparameters[n], step) for n in names}
        traced = not untraced(getattr(self, "_model", None))  # driven in float32
        meaning = verbs.meaning(command, self.hyperparameters, self._held, step, traced)
        states = {n: self._track(n) for n in names}
        for name in names:
            new = verbs.VERBS[verb].fold(states[name], command, name, meaning)
            self._enact(name, states[name], new, step)
        if verb == "stop":
            self.stop_requested = True
            model = getattr(self, "_model", None)
            if model is not None:
                model.stop_training = True
        self._applied.assign(max(seq, _int(self._applied)))
        self._drive(names)
        after = {n: _host_value(self.hyperparameters[n], step) for n in names}
        return self._journal(seq, command, "applied", step, before=before, after=after, **meaning)

    def _track(self, name: str) -> Track:
        """``name``'s steered state now, read from its public state
        (:attr:`hyperstep.Hyperparameter.value_state`) and what this Remote holds."""
        state = self.hyperparameters[name].value_state
        replacement = self._replaced.get(name)
        started = _int(state.cooldown_start) >= 0  # also a restored one, with no hs.Cooldown
        return Track(
            replacement.schedule if replacement is not None else state.schedule,
            float(np.float32(_float(state.scale))),
            _float(state.override) if name in self._held else None,
            _cooldown_of(state) if started else None,
            replacement is not None,
        )

    def _enact(self, name: str, old: Track, new: Track, step: int, restoring: bool = False) -> None:
        """Make ``name`` follow ``new`` (from ``old``): its replaced schedule, its override
        (a ``set`` holds it), its scale and cooldown; ``restoring`` (a resumed run), only
        what its checkpoint does not hold (the replacement, the hold)."""
        hp = self.hyperparameters[name]
        if new.base is not old.base:
            self._replace(name, new.base, step)
        if new.override != old.override:
            if name in self._replaced:  # the override it drives: written again
                self._replaced[name].written = None
            if new.override is None:
                self._held.discard(name)
                if not restoring:
                    hp.clear()
            else:
                self._held.add(name)
                if not restoring:
                    hp.set(new.override)
        if restoring:
            return
        if new.scale != old.scale:
            hp.scale.assign(np.float32(new.scale))
        if new.cooldown is not None and new.cooldown != old.cooldown:
            cooldown = hp.cooldown
            if cooldown is None:  # the hyperparameter's dormant cooldown, formed now
                cooldown = Cooldown(hp, steps=new.cooldown["steps"], shape=new.cooldown["shape"])
            cooldown.start(at=new.cooldown["start"])
            if name in self._replaced:
                self._replaced[name].cool(new.cooldown)

    def _replace(self, name: str, new: Schedule, step: int) -> None:
        """Replace ``name``'s schedule by ``new`` from ``step`` on (see the class docstring)."""
        hp = self.hyperparameters[name]
        new = read_clock(new, hp.clock)  # its `total`: the live run's (the clock's variable)
        old = hp.value_state.schedule
        found = self._replaced.get(name)
        if found is not None and found.since <= step:  # the pieces of the earlier one
            old = found.whole
        whole = new if step == 0 else pieces_of([(0, old), (step, new)])
        hp.schedule = whole  # what eager reads, plots and a later trace see
        if untraced(getattr(self, "_model", None)):  # eager torch: the schedule is enough
            return
        dtype = str(ops.dtype(hp.clock.step))  # the clock's: the step's own cast
        replacement = Replacement(new, step, whole, dtype)
        if _int(hp.cooldown_start) >= 0:  # cooling already: the new schedule cools from there
            replacement.cool(_cooldown_of(hp.value_state))
        self._replaced[name] = replacement

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
        self, seq: int | None, command: Any, status: str, step: int | None, **fields: Any
    ) -> dict[str, Any]:
        entry = {"seq": seq, "command": command, "status": status, "step": step, **fields}
        self._write(append_journal, entry, self._journal_name)
        self._recent.append(entry)
        return entry

    def _write(self, write: Any, *args: Any) -> None:
        """``write(directory, *args)``; an ``OSError`` (the directory deleted, a full disk)
        is one warning, and steering goes on (the next write tries again)."""
        try:
            write(self.directory, *args)
            self._failing = False
        except OSError as error:
            if not self._failing:
                _warn(
                    f"cannot write into the control directory {str(self.directory)!r} ({error}):"
                    " training goes on; steering resumes once it can be written again"
                )
            self._failing = True

    def _step(self) -> int:
        """The steering clock's step (the optimizer's clock under ``fit``)."""
        return _int(self._clock.step)

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
        try:
            status = self._status()
        except Exception as error:  # the status is for people: never a reason to stop
            self._write(_refuse, error)
            return
        self._write(write_status, status)

    def _status(self) -> dict[str, Any]:
        hyperparameters = {}
        step = self._step()
        for name, hp in self.hyperparameters.items():
            found = {**_describe(hp), "value": _host_value(hp, step)}
            if name in self._replaced and name not in self._held:
                found["override"] = None  # the replaced schedule's value, not a set
            hyperparameters[name] = found
        return {
            "pid": os.getpid(),
            "time": time.time(),
            "state": self._state,
            "step": step,
            "total": next((hp.clock.total for hp in self.hyperparameters.values()), None),
            "applied": _int(self._applied),
            "pending": [seq for seq, _ in self._pending],
            "hyperparameters": hyperparameters,
            "recent": list(self._recent),
        }

    # ---- Keras callback -------------------------------------------------------------------
    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._state = "running"
        self._claim()
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
        self.close()

    replay = staticmethod(replay)

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
        self._values = traced_values(cooled(self.schedule, cooldown), self.dtype)
        self._table = self.written = None


def _cooldown_of(state: Any) -> dict[str, Any]:
    """A started cooldown as journaled (start, steps, shape, end), read from its state (a
    :class:`~hyperstep.control.value_forms.ValueState`)."""
    steps, end, shape = (float(v) for v in ops.convert_to_numpy(state.cooldown_form))
    return {
        "start": _int(state.cooldown_start),
        "steps": steps,
        "shape": DECAY_TYPES[int(shape)],
        "end": end,
    }


def _track(model: Any, hp: Any, variables: Any) -> None:
    """Put ``variables`` (``hp``'s table) among the variables of each optimizer that carries
    ``hp``'s state (JAX trains on ``optimizer.variables``: what the step reads must be
    there; a hyperparameter read in the model is in its non-trainable variables already)."""
    for optimizer in every_optimizer(getattr(model, "optimizer", None)):
        tracker = getattr(optimizer, "_tracker", None)  # a wrapper's list too
        if tracker is not None and tracker.is_in_store("variables", hp.scale):
            for variable in variables:
                if not tracker.is_in_store("variables", variable):
                    optimizer._track_variable(variable)


def _host_value(hp: Any, step: int) -> float:
    try:  # a table of the schedule's values: microseconds, where an eager read takes ms
        found = hp.host_float(step)
    except (TypeError, ValueError, HyperstepError):  # e.g. a mirrored variable's tensor
        found = None
    return _float(hp.value) if found is None else float(np.float32(found))


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
        "cooldown": None if start < 0 else start,
    }


_REPRS: dict[int, tuple[Any, str]] = {}


def _repr(schedule: Any) -> str:
    """``repr(schedule)``, kept per schedule object (a nested schedule's repr takes a while;
    one replaced hundreds of times is too deep to print, and says so)."""
    found = _REPRS.get(id(schedule))
    if found is None or found[0] is not schedule:
        try:
            text = repr(schedule)
        except RecursionError:
            text = "(a schedule nested too deep to print)"
        found = _REPRS[id(schedule)] = (schedule, text)
    return found[1]


def _refuse(directory: Any, error: BaseException) -> None:
    """Raise ``error`` as an ``OSError`` (the status could not be written), for ``_write``."""
    raise OSError(f"the status could not be made: {_why(error)}")


def _why(error: BaseException) -> str:
    """An exception's first line, as a journal's ``reason``."""
    text = str(error).splitlines()[0] if str(error) else ""
    return text[:500] or type(error).__name__


def _warn(message: str) -> None:
    warnings.warn(message, RuntimeWarning, stacklevel=3)
