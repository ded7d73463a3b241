"""Combinators (PLACEHOLDER: being written; see issue 2)."""

from hyperstep.schedules.families import _Todo

Warmup = Join = warmup = join = _Todo
