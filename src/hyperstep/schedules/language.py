"""The expression language: ``hs.parse("warmup(cosine(1e-3, steps=10000), steps=500) * 0.5")``.

The text is read with :func:`ast.parse` (``mode="eval"``) and the syntax tree is walked
against a strict whitelist; no user code is ever compiled to run (no ``eval``/``exec``).
Allowed:

- numbers, ``inf``, ``pi``, ``e``, ``True``/``False``/``None`` and strings as call arguments
  (``mode="triangular"``), lists as call arguments (``boundaries=[100, 200]``);
- the names ``step`` and ``epoch`` (``floor(step / steps_per_epoch)``), and the numbers
  ``pi`` and ``e``;
- ``+ - * / // % **`` (``//`` and ``%`` as in Python, also for negative operands), unary
  ``-``/``+``, parentheses and comparisons
  ``< <= > >= == !=`` (1.0 where true, 0.0 where false; chains mean "and");
- the functions ``min, max, floor, ceil, exp, log, sqrt, cos, sin, abs, where, clip``;
- the schedule vocabulary (``constant, linear, exponential, inverse_time, polynomial, wsd,
  inverse_sqrt, cosine, cosine_restarts, piecewise, cyclic, one_cycle, warmup, join``) with
  positional and keyword arguments as in Python. The vocabulary is collected from the
  ``keyword`` of every schedule class, and arguments are matched against the class's
  signature.

Arithmetic on plain numbers inside a schedule's arguments is folded into a number
(``linear(0, 1, 10 * 1000)``); everywhere else it builds schedule nodes, whose constant
sub-expressions (``(0.001 - 1e-05) / (15 - 1) * epoch``) are computed in float64 and
rounded to float32 once, as Python computes them.

Everything else (attributes, subscripts, lambdas, comprehensions, f-strings, ``:=``,
``and``/``or``, other names) raises :class:`~hyperstep.errors.ScheduleSyntaxError`
quoting the text with a caret under the offending column.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from hyperstep.errors import ScheduleSyntaxError
from hyperstep.schedules.base import (
    FLOAT32_MAX,
    MAX_DEPTH,
    READERS,
    Schedule,
    check_positive_int,
)
from hyperstep.schedules.expressions import bind_epochs, folded, uses_epoch
from hyperstep.schedules.parse_names import MAX_LENGTH
from hyperstep.schedules.parse_names import vocabulary as vocabulary
from hyperstep.schedules.parse_reader import Reader


def parse(
    text: str,
    steps_per_epoch: int | None = None,
    *,
    names: Mapping[str, Schedule] | None = None,
    max_length: int | None = MAX_LENGTH,
) -> Schedule:
    """Read a schedule from an expression.

    ``parse(repr(s))`` evaluates equal to ``s`` for every schedule ``s``.

    Args:
        text: The expression, e.g. ``"warmup(cosine(1e-3, steps=10000), steps=500) * 0.5"``
            or ``"0.1 * 0.9 ** floor(epoch / 5)"``. Line breaks count as spaces.
        steps_per_epoch: Updates per epoch, binding every ``epoch`` in the text; ``None``
            leaves ``epoch`` unbound (a :class:`hyperstep.Clock` binds it later).
        names: Extra names the text may use, each standing for the schedule-like node it
            maps to (an optimizer passes its own hyperparameters, so that a group can write
            ``"10 * learning_rate"``); ``None`` allows only the built-in names.
        max_length: The longest text accepted (10,000 characters, for what people type);
            ``None`` for none, for a schedule's own ``repr`` read back (a journal's: a
            3,000-piece ``piecewise`` is longer).

    Returns:
        The :class:`~hyperstep.schedules.Schedule` the text describes.

    Raises:
        ScheduleSyntaxError: A ``ValueError`` quoting the text with a caret under the
            offending column: bad syntax, a name or function outside the vocabulary, wrong
            arguments, a construct outside the whitelist, or a schedule's own validation.

    Example:
        >>> s = parse("step / 1000 + 0.01")
        >>> s
        step / 1000.0 + 0.01
        >>> [round(float(v), 4) for v in s([0, 500, 1000])]
        [0.01, 0.51, 1.01]
        >>> [round(float(v), 4) for v in parse("0.1 * 0.5 ** floor(epoch / 2)", 10)([0, 25, 45])]
        [0.1, 0.05, 0.025]
        >>> parse("stpe / 1000")
        Traceback (most recent call last):
        ...
        hyperstep.errors.ScheduleSyntaxError: unknown name 'stpe'; did you mean 'step'? ...
          stpe / 1000
          ^
    """
    if not isinstance(text, str):
        raise ScheduleSyntaxError(
            f"an expression must be a string. Received: text={text!r} of type {type(text).__name__}"
        )
    if steps_per_epoch is not None:
        steps_per_epoch = check_positive_int("parse", "steps_per_epoch", steps_per_epoch)
    if max_length is not None and len(text) > max_length:
        raise ScheduleSyntaxError(
            f"the expression is {len(text)} characters long; at most {max_length} are accepted"
        )
    # one line, so that the caret lines up and columns count characters
    line = text.replace("\r\n", "  ").replace("\r", " ").replace("\n", " ").replace("\t", " ")
    if not line.strip():
        raise ScheduleSyntaxError(
            "the expression is empty; write e.g. 'cosine(1e-3, steps=10000)' or 'step / 1000'",
            line,
            0,
        )
    try:
        tree = ast.parse(line, mode="eval")
    except SyntaxError as error:
        offset = error.offset if error.offset and error.offset > 0 else len(line) + 1
        raise ScheduleSyntaxError(
            f"syntax error: {error.msg}", line, min(offset - 1, len(line))
        ) from None
    except (RecursionError, MemoryError):
        raise ScheduleSyntaxError(
            f"the expression is nested too deeply (at most {MAX_DEPTH} levels)", line, 0
        ) from None
    except ValueError as error:  # e.g. integer literals longer than 4300 digits
        raise ScheduleSyntaxError(f"syntax error: {error}", line, 0) from None
    schedule = Reader(line, steps_per_epoch, names or {}).schedule(tree.body)
    number = folded(schedule)
    if number is not None and not abs(number) <= FLOAT32_MAX:
        raise ScheduleSyntaxError(
            f"the expression is {number!r} at every step, beyond float32's range "
            "(|x| <= 3.4028235e38) in which values are computed: it would be inf",
            line,
            0,
        )
    if steps_per_epoch is not None and uses_epoch(schedule):  # e.g. unit="epoch"
        schedule = bind_epochs(schedule, steps_per_epoch)
    return schedule


#: ``as_schedule("step / 1000")`` parses the text
READERS.append((str, parse))
