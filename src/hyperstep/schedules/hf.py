"""Hugging Face schedules by name, in the hyperstep vocabulary: :func:`from_hf`."""

from __future__ import annotations

import numbers
from typing import Any

from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received
from hyperstep.schedules.base import Schedule, check_number
from hyperstep.schedules.checks import check_choice, check_positive
from hyperstep.schedules.combinators import join, warmup
from hyperstep.schedules.expressions import BinaryOp, Constant, Function, Step, Total
from hyperstep.schedules.families import cosine, cosine_restarts, linear, polynomial
from hyperstep.schedules.wsd import inverse_sqrt, wsd

#: Hugging Face scheduler name -> its scheduler-specific keyword arguments and defaults
NAMES: dict[str, dict[str, Any]] = {
    "constant": {},
    "constant_with_warmup": {},
    "cosine": {"num_cycles": 0.5},
    "cosine_warmup_with_min_lr": {
        "num_cycles": 0.5,
        "min_lr": None,
        "min_lr_rate": None,
        "warmup_lr_rate": None,
    },
    "cosine_with_min_lr": {"num_cycles": 0.5, "min_lr": None, "min_lr_rate": None},
    "cosine_with_restarts": {"num_cycles": 1},
    "inverse_sqrt": {"timescale": None},
    "linear": {},
    "polynomial": {"lr_end": 1e-7, "power": 1.0},
    "warmup_stable_decay": {
        "num_decay_steps": None,
        "num_stable_steps": None,
        "warmup_type": "linear",
        "decay_type": "cosine",
        "min_lr_ratio": 0.0,
        "num_cycles": 0.5,
    },
}
_NOT_PURE = {"reduce_lr_on_plateau": "hs.ReduceOnPlateau", "greedy": "hs.ReduceOnPlateau"}


def from_hf(
    name: str,
    peak: float,
    *,
    num_warmup_steps: int | None = None,
    num_training_steps: int | None = None,
    **scheduler_specific_kwargs: Any,
) -> Schedule:
    """Return the hyperstep schedule of a Hugging Face ``get_scheduler`` name.

    ``from_hf(name, peak, ...)(step) = peak * lr_lambda(step)``, where ``lr_lambda`` is the
    ``LambdaLR`` factor of ``transformers.get_scheduler(name, ...)`` (with ``W`` warmup and
    ``N`` training steps, ``D = N - W`` decay steps):

    ================================  ======================================================
    name                              hyperstep schedule
    ================================  ======================================================
    ``constant``                      ``constant(peak)``
    ``constant_with_warmup``          ``warmup(peak, steps=W)``
    ``linear``                        ``warmup(linear(peak, 0, steps=D), steps=W)``
    ``cosine``                        ``warmup(cosine(peak, steps=D / (2 * num_cycles),
                                      past_end="periodic"), steps=W)``
    ``cosine_with_restarts``          ``warmup(join([cosine_restarts(peak, steps=D /
                                      num_cycles, t_mul=1), 0], [D]), steps=W)``
    ``polynomial``                    ``warmup(polynomial(peak, lr_end, steps=D, power),
                                      steps=W)``
    ``inverse_sqrt``                  ``inverse_sqrt(peak, W, timescale)``
    ``cosine_with_min_lr``            ``cosine`` with ``end=min_lr`` (or
                                      ``min_lr_rate * peak``)
    ``cosine_warmup_with_min_lr``     a linear ramp reaching ``peak`` at ``W - 1``, then the
                                      cosine one step ahead (Hugging Face's rule)
    ``warmup_stable_decay``           ``wsd(peak, W, S, num_decay_steps, ...)`` with
                                      ``S = num_stable_steps`` or ``N - W - num_decay_steps``
    ================================  ======================================================

    Hugging Face's ``cosine`` keeps going past ``N`` (the learning rate rises again); so does
    this schedule. ``reduce_lr_on_plateau`` and ``greedy`` depend on a metric: use
    :class:`hyperstep.ReduceOnPlateau`.

    Args:
        name: A ``transformers.SchedulerType`` value such as ``"cosine"``.
        peak: The optimizer's learning rate (``lr`` of the torch optimizer).
        num_warmup_steps: ``W`` (not needed for ``constant``).
        num_training_steps: ``N``, warmup included; left out, the run's length ``total``
            (``clock.total``, which ``fit`` binds), as Hugging Face's ``Trainer`` computes
            it (``cosine_with_restarts``, whose last restart is a boundary, needs it).
        **scheduler_specific_kwargs: Hugging Face's ``scheduler_specific_kwargs`` (e.g.
            ``num_cycles``, ``min_lr_rate``, ``lr_end``, ``power``, ``num_decay_steps``).

    Raises:
        InvalidArgumentError: On an unknown name or argument, a missing step count, or
            counts that make Hugging Face's schedule degenerate (``N <= W``).

    Example:
        >>> s = from_hf("linear", 1e-3, num_warmup_steps=10, num_training_steps=110)
        >>> s
        warmup(linear(0.001, 0.0, steps=100), steps=10)
        >>> [round(float(v), 6) for v in s([0, 5, 10, 60, 110, 200])]
        [0.0, 0.0005, 0.001, 0.0005, 0.0, 0.0]
        >>> from_hf("cosine", 1e-3, num_warmup_steps=10)  # in the run's length
        warmup(cosine(0.001, steps=(total - 10.0) / 1.0, past_end='periodic'), steps=10)
    """
    if name in _NOT_PURE:
        raise InvalidArgumentError(
            f"`from_hf(name={name!r})` depends on a metric, not only on the step; use "
            f"{_NOT_PURE[name]}(...) instead. {received('name', name)}"
        )
    check_choice("from_hf", "name", name, tuple(NAMES))
    peak = check_number("from_hf", "peak", peak)
    unknown = sorted(set(scheduler_specific_kwargs) - set(NAMES[name]))
    if unknown:
        allowed = ", ".join(NAMES[name]) or "none"
        raise InvalidArgumentError(
            f"`from_hf({name!r}, ...)` got unknown arguments {unknown}; its "
            f"scheduler_specific_kwargs are: {allowed}. "
            f"Received: {', '.join(f'{k}={scheduler_specific_kwargs[k]!r}' for k in unknown)}"
        )
    kw = {**NAMES[name], **scheduler_specific_kwargs}
    if name == "constant":
        return Constant(peak)
    w = _count("num_warmup_steps", num_warmup_steps, name)
    if name == "constant_with_warmup":
        return _warm(Constant(peak), w)
    if name == "inverse_sqrt":
        return inverse_sqrt(peak, w, timescale=kw["timescale"])
    if name == "warmup_stable_decay":
        return _wsd(peak, w, num_training_steps, kw)
    if num_training_steps is None and name != "cosine_with_restarts":
        n: Any = Total()  # the run's length, as Hugging Face's Trainer computes it
    else:
        n = _count("num_training_steps", num_training_steps, name)
    if isinstance(n, int) and n <= w:
        raise InvalidArgumentError(
            f"`from_hf({name!r}, num_training_steps=...)` must be more than num_warmup_steps="
            f"{w} (it counts the warmup). {received('num_training_steps', num_training_steps)}"
        )
    d = n - w
    if name == "linear":
        return _warm(linear(peak, 0.0, steps=d), w)
    if name == "polynomial":
        lr_end = check_number("from_hf", "lr_end", kw["lr_end"])
        if not peak > lr_end:  # Hugging Face's own check
            raise InvalidArgumentError(
                f"`from_hf('polynomial', peak=...)` must be above lr_end={lr_end}, as in "
                f"Hugging Face. {received('peak', peak)}"
            )
        return _warm(polynomial(peak, lr_end, steps=d, power=kw["power"]), w)
    cycles = check_positive("from_hf", "num_cycles", kw["num_cycles"])
    if name == "cosine_with_restarts":
        restarts = cosine_restarts(peak, steps=d / cycles, t_mul=1.0)
        return _warm(join([restarts, 0.0], [d]), w)
    end = 0.0 if name == "cosine" else _min_lr(name, peak, kw)
    wave = cosine(peak, steps=d / (2 * cycles), end=end, past_end="periodic")
    if name != "cosine_warmup_with_min_lr":
        return _warm(wave, w)
    return _warmup_with_min_lr(peak, w, wave, kw["warmup_lr_rate"])


def _count(argument: str, value: Any, name: str) -> int:
    if value is None:
        raise InvalidArgumentError(
            f"`from_hf({name!r}, ...)` needs `{argument}=`, as Hugging Face's get_scheduler "
            f"does. {received(argument, value)}"
        )
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidTypeError(
            f"`from_hf({argument}=...)` must be an integer >= 0. {received(argument, value)}"
        )
    if value < 0:
        raise InvalidArgumentError(
            f"`from_hf({argument}=...)` must be an integer >= 0. {received(argument, value)}"
        )
    return int(value)


def _warm(schedule: Schedule, steps: int) -> Schedule:
    """Hugging Face's warmup ``peak * step / max(1, W)``: none at all when ``W == 0``."""
    return warmup(schedule, steps=steps) if steps > 0 else schedule


def _min_lr(name: str, peak: float, kw: dict[str, Any]) -> float:
    min_lr, rate = kw["min_lr"], kw["min_lr_rate"]
    if (min_lr is None) == (rate is None):
        raise InvalidArgumentError(
            f"`from_hf({name!r}, ...)` needs exactly one of `min_lr=` and `min_lr_rate=`, as "
            f"Hugging Face does. Received: min_lr={min_lr!r}, min_lr_rate={rate!r}"
        )
    if min_lr is not None:
        return check_number("from_hf", "min_lr", min_lr)
    return check_number("from_hf", "min_lr_rate", rate) * peak


def _warmup_with_min_lr(peak: float, w: int, wave: Schedule, rate: Any) -> Schedule:
    """``cosine_warmup_with_min_lr``: ``peak * (step + 1) / W`` (or ``rate`` up to 1 at
    ``W - 1``) during the warmup, then the cosine evaluated at ``step - W + 1``."""
    if w < 1:
        raise InvalidArgumentError(
            "`from_hf('cosine_warmup_with_min_lr', num_warmup_steps=...)` must be >= 1 here: "
            "with no warmup Hugging Face evaluates the cosine one step ahead from step 0, "
            "which no hyperstep schedule shifts to. Received: num_warmup_steps=0"
        )
    first = peak / w if rate is None else check_number("from_hf", "warmup_lr_rate", rate) * peak
    if w == 1 and rate is not None:  # step 0 holds `rate`, then the cosine from its step 1
        return Function("where", [BinaryOp("<", Step(), 1.0), first, wave])
    return join([linear(first, peak, steps=max(1, w - 1)), wave], [w - 1])


def _wsd(peak: float, w: int, total: int | None, kw: dict[str, Any]) -> Schedule:
    """``warmup_stable_decay``: the stable phase is what the warmup and decay leave of
    ``total`` (the run's length when not given)."""
    decay = kw["num_decay_steps"]
    if decay is None:
        raise InvalidArgumentError(
            "`from_hf('warmup_stable_decay', ...)` needs `num_decay_steps=`, as Hugging Face "
            "does. Received: num_decay_steps=None"
        )
    stable = kw["num_stable_steps"]
    if stable is None:
        stable = (Total() if total is None else total) - w - decay
        if isinstance(stable, int) and stable < 0:
            raise InvalidArgumentError(
                f"`from_hf('warmup_stable_decay', num_training_steps=...)` must be at least "
                f"num_warmup_steps + num_decay_steps = {w + decay}. "
                f"{received('num_training_steps', total)}"
            )
    return wsd(
        peak,
        w,
        stable,
        decay,
        warmup_type=kw["warmup_type"],
        decay_type=kw["decay_type"],
        min_ratio=kw["min_lr_ratio"],
        num_cycles=kw["num_cycles"],
    )


__all__ = ["from_hf"]
