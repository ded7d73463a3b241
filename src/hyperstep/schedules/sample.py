"""Sampling a schedule on a grid of steps, for plots and reports (the CLI and the doctor)."""

from __future__ import annotations

import numpy as np

from hyperstep.errors import InvalidArgumentError, received
from hyperstep.schedules._ops import ops
from hyperstep.schedules.base import ScheduleLike, check_positive_int
from hyperstep.schedules.expressions import as_schedule

#: the most points sampled in one call
MAX_POINTS = 100_000_000


def sample(
    schedule: ScheduleLike, steps: int, num: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Evaluate a schedule at steps ``0 .. steps - 1`` in one vectorized call.

    ``sample(s, steps)[1][i] = s(i)``; with ``num``, at ``num`` evenly spaced integer steps
    ``round(linspace(0, steps - 1, num))`` instead (duplicates dropped, so at most
    ``steps`` points; the first is 0 and the last ``steps - 1``).

    Args:
        schedule: Anything :func:`~hyperstep.schedules.as_schedule` accepts: a number, a
            hyperstep or Keras schedule, or an expression string.
        steps: How many steps to cover (a positive integer).
        num: How many points to sample (a positive integer), or ``None`` for every step.

    Returns:
        ``(steps, values)``: an int64 array of steps and a float32 array of values.

    Raises:
        ValueError: If ``steps`` or ``num`` is not a positive integer, or if ``num`` is
            ``None`` and ``steps`` is above ``MAX_POINTS`` (100,000,000).

    Example:
        >>> x, y = sample("step / 10", steps=5)
        >>> x.tolist(), [round(float(v), 2) for v in y]
        ([0, 1, 2, 3, 4], [0.0, 0.1, 0.2, 0.3, 0.4])
        >>> sample("step", steps=101, num=3)[0].tolist()
        [0, 50, 100]
    """
    steps = check_positive_int("sample", "steps", steps)
    if num is not None:
        num = check_positive_int("sample", "num", num)
    if num is None and steps > MAX_POINTS:
        raise InvalidArgumentError(
            f"`sample(steps=...)` without `num=` evaluates every step, at most {MAX_POINTS:,}; "
            f"pass e.g. `num=10_000` to sample fewer points. {received('steps', steps)}"
        )
    schedule = as_schedule(schedule, name="schedule")
    if num is None or num >= steps:
        grid = np.arange(steps, dtype=np.int64)
    else:
        grid = np.unique(np.round(np.linspace(0, steps - 1, num)).astype(np.int64))
    values = ops.convert_to_numpy(schedule(grid)).astype(np.float32, copy=False)
    return grid, np.broadcast_to(values, grid.shape).copy()
