"""The steering verbs, one row each: what the CLI says of it, what it takes (checked by
:func:`check_command`), and what it does to a hyperparameter's state.

``state' = fold(state, command, name, entry)`` is the new :class:`Track` of hyperparameter
``name`` once ``command`` (journaled as ``entry``) took effect. :func:`replay` folds the
journal's applied commands through this table into one schedule per hyperparameter, and
:class:`hyperstep.Remote` applies the same folds live; what a command means in a run beyond
its text (the schedule in effect, the cooldown it starts) is :func:`meaning`, journaled with
it. The table imports no Keras (the CLI reads its help and checks commands with it).
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from hyperstep.control.directory import read_journal
from hyperstep.errors import HyperstepError, InvalidArgumentError

__all__ = ["VERBS", "Track", "Verb", "check_command", "parse_number", "parse_schedule", "replay"]


#: the largest finite float32
FLOAT32_MAX = 3.4028235677973362e38
#: the largest step (``--at``, a cooldown's ``steps``): 2**53, exact in float64
MAX_STEP = 2**53
#: the flags a command may carry (see :func:`check_command`)
FLAGS = ("queued", "force", "from_now")


class Track(NamedTuple):
    """One hyperparameter's steered state: ``override if set else cooled(base)(step) *
    scale`` (``driven``: a replaced schedule reached the step through the float32
    override)."""

    base: Any
    scale: float
    override: float | None
    cooldown: dict[str, Any] | None
    driven: bool


class Verb(NamedTuple):
    """A row of :data:`VERBS`: its help line, its operands (``"numbers"``: NAME=VALUE,
    ``"schedules"``: NAME=EXPR, ``"names"``: NAME, None) with their example, and its fold."""

    help: str
    takes: str | None
    example: str | None
    fold: Callable[[Track, dict[str, Any], str, dict[str, Any]], Track]


def _parse(text: str) -> Any:
    """A schedule's ``repr`` as the run journaled it, read back (with no length limit)."""
    from hyperstep.schedules.language import parse

    return parse(text, max_length=None)


def _set(state: Track, command: dict[str, Any], name: str, entry: dict[str, Any]) -> Track:
    return state._replace(override=float(np.float32(command["values"][name])))


def _scale(state: Track, command: dict[str, Any], name: str, entry: dict[str, Any]) -> Track:
    return state._replace(scale=float(np.float32(command["values"][name])))


def _clear(state: Track, command: dict[str, Any], name: str, entry: dict[str, Any]) -> Track:
    return state._replace(override=None)


def _schedule(state: Track, command: dict[str, Any], name: str, entry: dict[str, Any]) -> Track:
    # the schedule in effect, as journaled (its `epoch` bound, `step` shifted by --from-now)
    driven = name in entry.get("driven", [])  # the float32 override held it
    return state._replace(base=_parse(entry["schedules"][name]), driven=driven)


def _cooldown(state: Track, command: dict[str, Any], name: str, entry: dict[str, Any]) -> Track:
    if name in entry.get("schedules", {}):  # cooled from an override: a schedule now
        state = _schedule(state, command, name, entry)._replace(override=None)
    return state._replace(cooldown=entry["cooldown"][name])


def _stop(state: Track, command: dict[str, Any], name: str, entry: dict[str, Any]) -> Track:
    return state


#: verb -> its row, in the order ``hyperstep --help`` lists them
VERBS: dict[str, Verb] = {
    "set": Verb("override hyperparameters of a running job", "numbers", "learning_rate=1e-4", _set),
    "scale": Verb(
        "set the factor that multiplies a schedule", "numbers", "learning_rate=0.5", _scale
    ),
    "clear": Verb("remove overrides (back to the schedule)", "names", "learning_rate", _clear),
    "schedule": Verb(
        "replace schedules (hs.parse expressions)",
        "schedules",
        'learning_rate="cosine(1e-3, steps=5000)"',
        _schedule,
    ),
    "cooldown": Verb("start hyperparameters' cooldowns", "names", None, _cooldown),
    "stop": Verb("end fit cleanly after the current step", None, None, _stop),
}


# ---- what a command may hold ------------------------------------------------------------
def parse_number(name: str, value: Any) -> float:
    """``value`` (a number, or its text) as a float that float32 holds: finite, at most
    ``FLOAT32_MAX`` in magnitude.

    Raises:
        InvalidArgumentError: Otherwise, naming ``name`` and the value.
    """
    number: float | None = None
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):
            number = float(value.strip())
    except (ValueError, OverflowError):
        number = None
    if number is None or not math.isfinite(number) or abs(number) > FLOAT32_MAX:
        shown = repr(value) if len(repr(value)) < 60 else f"{repr(value)[:40]}..."
        raise InvalidArgumentError(
            f"{name} needs a finite number within float32's range (|x| <= 3.4e38), e.g. "
            f"{name}=1e-4. Received: {name}={shown}"
        )
    return number


def parse_schedule(name: str, text: Any) -> Any:
    """Check that ``text`` is an ``hs.parse`` expression; return the schedule.

    The expression is parsed from its syntax tree with a whitelist (never evaluated as
    Python). Without Keras in the process the schedule is built on NumPy.

    Raises:
        InvalidArgumentError: If ``text`` is not a string or does not parse.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(
            f'{name} needs a schedule expression, e.g. {name}="cosine(1e-3, steps=1000)". '
            f"Received: {name}={text!r}"
        )
    from hyperstep.backends import numpy_ops

    numpy_ops.request()  # no Keras in a process that has not imported it
    from hyperstep.schedules.language import parse

    try:
        return parse(text)
    except (HyperstepError, ArithmeticError, ValueError, TypeError, RecursionError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise InvalidArgumentError(f"{name}: {reason}. Received: {name}={text!r}") from None


def check_command(command: Any, names: Any = None, step: int | None = None) -> dict[str, Any]:
    """Check a command object; return it normalized (numbers as floats, schedules as reprs).

    A command is ``{"verb": ..., ...}`` with what its row of :data:`VERBS` takes:
    ``"values": {name: value}`` (numbers, schedules), ``"names": [...]`` (``cooldown``'s
    default ``["learning_rate"]``, and its optional ``"steps"`` and ``"shape"``) or nothing;
    any of them ``"at": step``.
    Flags: ``"queued"`` (sent for the next run of ``DIR``), ``"force"`` (a ``learning_rate``
    set or scaled to zero or below), ``"from_now"`` (``schedule``: its ``step`` counts from
    the step the command takes effect).

    Args:
        command: The decoded JSON object.
        names: The hyperparameter names that exist, or None to skip that check.
        step: The run's step, if known: a ``schedule`` of a learning rate is checked at
            the step it takes effect (:func:`check_rate`) where it can be evaluated there.

    Raises:
        InvalidArgumentError: One line naming what is wrong.
    """
    if not isinstance(command, dict):
        raise InvalidArgumentError(f"command must be an object. Received: {command!r}")
    verb = command.get("verb")
    if verb not in VERBS:
        raise InvalidArgumentError(f"unknown verb; one of {list(VERBS)}. Received: verb={verb!r}")
    out: dict[str, Any] = {"verb": verb}
    takes = VERBS[verb].takes
    if command.get("at") is not None:
        out["at"] = _step_number("at", command["at"], 0)
    for flag in FLAGS:
        given_flag = command.get(flag, False)
        if not isinstance(given_flag, bool) or (
            given_flag and flag == "from_now" and takes != "schedules"
        ):
            raise InvalidArgumentError(
                f"{flag} must be true or false (from_now: on schedule only). "
                f"Received: {flag}={given_flag!r}"
            )
        if given_flag:
            out[flag] = True
    if takes in ("numbers", "schedules"):
        values = command.get("values")
        if not isinstance(values, dict) or not values:
            raise InvalidArgumentError(
                f"{verb} needs at least one NAME=VALUE. Received: values={values!r}"
            )
        checked: dict[str, Any] = {}
        for name, value in values.items():
            _check_name(name, names)
            if takes == "schedules":
                schedule = parse_schedule(name, value)
                checked[name] = repr(schedule)
                when = out.get("at", step)
                if when is not None and is_rate(name):
                    found = schedule_value(schedule, 0 if out.get("from_now") else when)
                    if found is not None:
                        check_rate(out, name, found, value, when)
            else:
                checked[name] = parse_number(name, value)
                check_rate(out, name, checked[name], value)
        out["values"] = checked
    elif takes == "names":
        given = command.get("names", ["learning_rate"] if verb == "cooldown" else None)
        if not isinstance(given, list) or not given:
            raise InvalidArgumentError(f"{verb} needs at least one NAME. Received: names={given!r}")
        for name in given:
            _check_name(name, names)
        out["names"] = list(given)
        if verb == "cooldown":
            steps, shape = command.get("steps"), command.get("shape")
            if steps is not None:
                out["steps"] = _step_number("steps", steps, 1)
            if shape is not None:
                from hyperstep.backends import numpy_ops

                numpy_ops.request()  # no Keras in a process that has not imported it
                from hyperstep.schedules.checks import check_choice
                from hyperstep.schedules.wsd import DECAY_TYPES

                out["shape"] = check_choice("cooldown", "shape", shape, DECAY_TYPES)
    return out


def check_rate(
    command: dict[str, Any], name: str, value: float, given: Any, step: int | None = None
) -> None:
    """Refuse ``command`` if it would make learning rate ``name`` ``value`` (a ``set``'s or
    ``scale``'s number, a ``schedule``'s value where it takes effect): zero, negative or not
    finite, unless it is forced.

    Raises:
        InvalidArgumentError: Naming the value and ``--force``.
    """
    if command.get("force") or not is_rate(name) or (math.isfinite(value) and value > 0):
        return
    what = "zero" if value == 0 else "negative" if math.isfinite(value) else f"{value}"
    where = "" if step is None else f" at step {step}"
    raise InvalidArgumentError(
        f"{command['verb']} would make {name} {what}{where}: refused unless forced "
        f"(`--force`). Received: {name}={given!r}"
    )


def schedule_value(schedule: Any, step: int) -> float | None:
    """The value of ``schedule`` (:func:`parse_schedule`'s) at ``step``; None where it cannot
    be evaluated here (it reads ``epoch`` or the run's ``total``, which only the run knows)."""
    from hyperstep.schedules.expressions import uses_epoch, uses_total

    if uses_epoch(schedule) or uses_total(schedule):
        return None
    try:
        with warnings.catch_warnings():  # log(0), 1 / 0: their value, refused as such
            warnings.simplefilter("ignore")
            return float(schedule(float(step)))
    except (HyperstepError, ArithmeticError, ValueError, TypeError, RecursionError):
        return None


def is_rate(name: str) -> bool:
    """Whether ``name`` is a learning rate (``learning_rate``, a group's ``g/learning_rate``):
    zero, negative and non-finite values are refused without ``force``."""
    return name.rsplit("/", 1)[-1] == "learning_rate"


def _step_number(name: str, value: Any, low: int) -> int:
    """``value`` if it is an integer from ``low`` (0 or 1) to ``MAX_STEP``, else raise naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= MAX_STEP:
        what = "a step, an integer >= 0" if low == 0 else "a positive integer"
        raise InvalidArgumentError(
            f"{name} must be {what}, at most 2**53. Received: {name}={value!r}"
        )
    return value


def _check_name(name: Any, names: Any) -> None:
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"a hyperparameter name must be a string. Received: {name!r}")
    if names is not None and name not in names:
        import difflib

        close = difflib.get_close_matches(name, list(names), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise InvalidArgumentError(
            f"no hyperparameter {name!r} in this run{hint}; it has {sorted(names)}. "
            f"Received: {name!r}"
        )


def names_of(command: dict[str, Any]) -> list[str]:
    """The hyperparameter names a command acts on."""
    return list(command.get("values", command.get("names", [])))


def replay(journal: str | os.PathLike[str]) -> dict[str, Any]:
    """Return, per hyperparameter, the schedule that reproduces a controlled run's values.

    ``value(step)`` of the returned schedule is, bit for bit, the value the controlled run's
    updates used at ``step``: its original schedule times its scale, with every applied
    command from the step it took effect (``where(step < s1, v0, where(step < s2, v1,
    ...))``), each piece rounded as the run rounded it (:func:`expression`;
    docs/steering.md, "Replaying a run exactly"). A fresh run built with these schedules
    (and the same data) ends with the controlled run's weights. The journal's last run that
    began afresh is replayed, with its resumes; a command applied again after a resume
    counts where it took effect last, and an ill-shaped line is skipped with a warning. Only
    the hyperparameters a command changed are returned (and parsed).

    Args:
        journal: The ``journal.jsonl`` of the controlled run (or its directory).

    Raises:
        InvalidArgumentError: If the journal has no ``begin`` entry (not a Remote's journal),
            or no entry for a command number of that run (a line lost or cut short).
    """
    path = os.fspath(journal)
    if os.path.isdir(path):
        path = os.path.join(path, "journal.jsonl")
    entries = read_journal(path)
    with open(path, "rb") as f:
        f.seek(max(0, os.fstat(f.fileno()).st_size - 1))
        if f.read(1) not in (b"", b"\n"):
            raise InvalidArgumentError(
                "the journal's last line is cut short (the run was killed while writing "
                f"it): its command cannot be replayed. Received: journal={path!r}"
            )
    entries = run_entries(entries)
    if not entries:
        raise InvalidArgumentError(
            "the journal has no `begin` entry: not written by hs.Remote. "
            f"Received: journal={path!r}"
        )
    begin = entries[0]
    ordered = in_effect(entries)
    others = [e for e in entries if e.get("status") in ("refused", "pending")]
    _check_numbers([*ordered, *others], begin, path)
    changed = {name for entry in ordered for name in names_of(entry["command"])}
    result: dict[str, Any] = {}
    for name, start in begin["hyperparameters"].items():
        if name not in changed:
            continue
        state = Track(_parse(start["schedule"]), start["scale"], start["override"], None, False)
        exact = bool(start.get("exact", False))
        pieces: list[tuple[int, Any]] = [(0, expression(state, exact))]
        for entry in ordered:
            command = entry["command"]
            if name in names_of(command):
                state = VERBS[command["verb"]].fold(state, command, name, entry)
                piece = (int(entry["step"]), expression(state, exact))
                pieces = [p for p in pieces if p[0] < piece[0]] + [piece]
        result[name] = pieces_of(pieces)
    return result


def run_entries(entries: list[dict[str, Any]], run: Any = None) -> list[dict[str, Any]]:
    """The entries of one run of a journal from its ``begin`` on, its resumes' too: run
    ``run``'s, or the last run that began afresh where ``run`` is None; [] where none began."""
    begins = [
        i
        for i, e in enumerate(entries)
        if e.get("event") == "begin"
        and isinstance(e.get("hyperparameters"), dict)
        and (run is None or e.get("run") == run)
    ]
    if not begins:
        return []
    first = max((i for i in begins if entries[i].get("resumed") is not True), default=begins[0])
    return entries[first:]


def in_effect(
    entries: list[dict[str, Any]], statuses: tuple[str, ...] = ("applied",)
) -> list[dict[str, Any]]:
    """The commands journaled with one of ``statuses``, each as journaled last, in the order
    they took effect: by step (a pending one's ``at``), then number; an ill-shaped entry is
    skipped with a warning."""
    last: dict[int, dict[str, Any]] = {}
    for entry in entries:
        seq = entry.get("seq")
        if type(seq) is not int or entry.get("status") not in statuses:
            continue
        if not _well_shaped(entry):
            warnings.warn(
                f"skipped the ill-shaped journal entry of command {seq}", RuntimeWarning, 3
            )
        else:
            last[seq] = entry
    return sorted(
        last.values(),
        key=lambda e: (e["command"]["at"] if e["status"] == "pending" else e["step"], e["seq"]),
    )


def _well_shaped(entry: dict[str, Any]) -> bool:
    """Whether a journaled command has what replay and a resume read."""
    command, step = entry.get("command"), entry.get("step")
    if entry.get("status") == "pending":
        return isinstance(command, dict) and type(command.get("at")) is int
    if type(step) is not int or not isinstance(command, dict):
        return False
    try:
        check_command(command)
    except InvalidArgumentError:
        return False
    verb = command["verb"]
    if verb == "schedule" or "schedules" in entry:
        found = entry.get("schedules")
        if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
            return False
    if verb == "cooldown":
        found = entry.get("cooldown")
        return isinstance(found, dict) and all(isinstance(v, dict) for v in found.values())
    return True


def _check_numbers(entries: list[dict[str, Any]], begin: dict[str, Any], path: str) -> None:
    """Refuse a journal whose commands after the ``begin``'s last applied skip a number."""
    after = begin.get("applied")
    expected = (after if type(after) is int else 0) + 1
    for entry in sorted((e for e in entries if type(e.get("seq")) is int), key=lambda e: e["seq"]):
        if entry["seq"] > expected:
            raise InvalidArgumentError(
                f"the journal has no entry for command {expected} (a line lost or cut "
                f"short): the run it describes cannot be replayed exactly. "
                f"Received: journal={path!r}"
            )
        through = entry.get("through")
        expected = max(expected, (through if type(through) is int else entry["seq"]) + 1)


def expression(state: Track, exact: bool) -> Any:
    """``override if set else cooled(base)(step) * scale`` as a schedule, rounded as the run
    rounds (in float64 where ``exact``: see
    :func:`hyperstep.control.value_forms.exact_value`)."""
    from hyperstep.schedules.expressions import BinaryOp, Constant

    if state.override is not None:
        return Constant(state.override)
    base = state.base
    if state.cooldown is not None:
        base = cooled(base, state.cooldown)
    scale = float(np.float32(state.scale))
    if isinstance(base, Constant):
        if state.driven or (not exact and scale != 1.0):
            # float32(base * scale), as the override (driven) or a float32 product holds
            # it (a product of constants would fold in float64)
            return Constant(float(np.float32(np.float32(base.value_) * np.float32(scale))))
        # float64(c) * scale, as exact_at computes it
        return base if scale == 1.0 else Constant(float(base.value_) * scale)
    if state.driven and exact:  # the float32 override: a float32 product, constant left
        return BinaryOp("*", Constant(scale), base)
    if scale == 1.0:
        return base
    return BinaryOp("*", base, Constant(scale))


def cooled(base: Any, cooldown: dict[str, Any]) -> Any:
    """:class:`hyperstep.Cooldown`'s values from its start ``s0`` (steps after it only): the
    word ``cooldown(base(s0), s0, steps, shape, end)``, which computes them as the run did."""
    from keras import ops

    from hyperstep.schedules.wsd import Cooldown as CooldownWord

    s0 = float(cooldown["start"])
    v0 = float(np.float32(ops.convert_to_numpy(base(s0))))
    end = float(np.float32(cooldown["end"]))  # as the run's float32 `cooldown_form` holds it
    return CooldownWord(v0, s0, float(cooldown["steps"]), cooldown["shape"], end)


def pieces_of(pieces: list[tuple[int, Any]]) -> Any:
    """``where(step < s1, p0, where(step < s2, p1, ...))`` of ``[(0, p0), (s1, p1), ...]``."""
    from hyperstep.schedules.expressions import BinaryOp, Function, Step

    expression = pieces[-1][1]
    for index in range(len(pieces) - 2, -1, -1):
        boundary = float(pieces[index + 1][0])
        less = BinaryOp("<", Step(), boundary)
        expression = Function("where", [less, pieces[index][1], expression])
    return expression


# ---- what a command means in a run: what it journals beside its text ---------------------
def meaning(
    command: dict[str, Any], hyperparameters: dict[str, Any], held: Any, step: int, traced: bool
) -> dict[str, Any]:
    """What ``command`` means at ``step`` of a run, journaled with it for the folds: the
    schedules in effect (``schedules``: ``epoch`` bound, ``--from-now`` counted; a cooldown's
    from an override ``held`` by a ``set``), the names driven through the float32 override
    (``driven``, where the step is ``traced``), and the cooldowns (``cooldown``: start,
    steps, shape, end).

    Raises:
        InvalidArgumentError: If the run cannot do it (a schedule making a learning rate
            zero, negative or not finite; a cooldown it cannot start).
    """
    verb, found = command["verb"], {}
    if verb == "schedule":
        found = {
            name: effective(hyperparameters[name], text, step, command.get("from_now", False))
            for name, text in command["values"].items()
        }
        from hyperstep.control.value_forms import read_clock
        from hyperstep.schedules.expressions import bind_total, uses_total

        for name, schedule in found.items():  # a length its word refuses at the live length
            if uses_total(schedule) and hyperparameters[name].clock.total is not None:
                bind_total(schedule, hyperparameters[name].clock.total)
        for name in filter(is_rate, found):  # a learning rate's value checked first
            hp = hyperparameters[name]  # its `total`: the live run's
            value = _number(read_clock(found[name], hp.clock)(step)) * _number(hp.scale)
            check_rate(command, name, float(value), command["values"][name], step)
    elif verb == "cooldown":
        cooldowns = {n: cooldown_at(hyperparameters[n], command) for n in command["names"]}
        found = {n: from_override(hyperparameters[n], step) for n in cooldowns if n in held}
    out: dict[str, Any] = {}
    if found:
        out["schedules"] = {name: repr(schedule) for name, schedule in found.items()}
        out["driven"] = sorted(found) if traced else []
    if verb == "cooldown":
        out["cooldown"] = cooldowns
    return out


def effective(hp: Any, text: str, since: int, from_now: bool) -> Any:
    """The schedule ``text`` replacing ``hp``'s from step ``since``: its ``step`` counting
    from ``since`` with ``from_now``, its ``epoch`` bound to the clock's ``steps_per_epoch``.

    Raises:
        InvalidArgumentError: If it reads ``epoch`` and the clock does not know its epochs'
            length.
    """
    from hyperstep.schedules.expressions import BinaryOp, Constant, Step, bind_epochs, uses_epoch

    new = _parse(text)
    if from_now:
        counted = BinaryOp("-", Step(), Constant(float(since)))
        new = new.replace(lambda node: counted if isinstance(node, Step) else None)
    if uses_epoch(new):
        steps = hp.clock.steps_per_epoch
        if steps is None:
            raise InvalidArgumentError(
                f"{hp.name}: the schedule reads `epoch`, but the run's clock does not know how "
                "many steps an epoch has (a custom loop: `hs.Clock(steps_per_epoch=...)`). "
                f"Received: {hp.name}={text!r}"
            )
        new = bind_epochs(new, steps)
    return new


def from_override(hp: Any, step: int) -> Any:
    """The constant schedule that, times ``scale``, gives ``hp``'s override: a cooldown
    started on an overridden value cools from it.

    Raises:
        InvalidArgumentError: If ``scale`` is 0 (no schedule gives the override then).
    """
    from hyperstep.schedules.expressions import Constant

    scale = _number(hp.scale)
    if scale == 0:
        raise InvalidArgumentError(
            f"{hp.name} is overridden while its scale is 0: no cooldown can start from the "
            f"override; `scale {hp.name}=...` first. Received: cooldown {hp.name} at step {step}"
        )
    return Constant(float(_number(hp.override) / scale))


def cooldown_at(hp: Any, command: dict[str, Any]) -> dict[str, Any]:
    """The cooldown a ``cooldown`` command starts on ``hp``: its ``hs.Cooldown``'s (kept
    where it started already), else one of the command's ``steps`` and ``shape``.

    Raises:
        InvalidArgumentError: If ``hp`` cools from a restored cooldown, has no
            ``hs.Cooldown`` and the command no ``steps``, or the command's ``steps`` or
            ``shape`` are not its cooldown's.
    """
    name, cooldown = hp.name, hp.cooldown
    if cooldown is None:
        if int(_number(hp.cooldown_start)) >= 0:
            raise InvalidArgumentError(
                f"{name!r} is cooling down since step {int(_number(hp.cooldown_start))} (a "
                f"restored cooldown). Received: cooldown {name}"
            )
        if "steps" not in command:
            raise InvalidArgumentError(
                f"{name!r} has no hs.Cooldown yet: give its length to create one, "
                f"`hyperstep cooldown DIR {name} --steps N [--shape 1-sqrt]`. "
                f"Received: cooldown {name}"
            )
        start = int(_number(hp.clock.step))
        return {
            "start": start,
            "steps": command["steps"],
            "shape": command.get("shape", "1-sqrt"),
            "end": 0.0,
        }
    for key in ("steps", "shape"):
        if key in command and command[key] != getattr(cooldown, key):
            raise InvalidArgumentError(
                f"{name!r}'s cooldown has {key}={getattr(cooldown, key)!r}, fixed when it "
                f"was created. Received: {key}={command[key]!r}"
            )
    start = cooldown.start_step if cooldown.started else int(_number(hp.clock.step))
    return {"start": start, "steps": cooldown.steps, "shape": cooldown.shape, "end": cooldown.end}


def _number(value: Any) -> Any:
    """A variable's or tensor's value as a NumPy float32 (or integer) scalar."""
    from keras import ops

    return np.asarray(ops.convert_to_numpy(value))[()]
