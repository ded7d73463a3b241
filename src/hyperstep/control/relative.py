"""Values relative to other hyperparameters: ``learning_rate="10 * learning_rate"`` in a group.

An optimizer parses the expression strings it is given with its own hyperparameters' names
(:func:`hyperstep.parse` ``names=``): each name becomes a :class:`Ref`, a schedule node whose
value at ``step`` is the referenced :class:`~hyperstep.Hyperparameter`'s effective value
``at(step)``: its schedule, ``scale``, override and a started cooldown. They are variables,
so a traced step follows every change (a ``ReduceOnPlateau`` reduction of the optimizer's
learning rate reaches ``"10 * learning_rate"`` of a group) without retracing.

A group's expressions name the optimizer's own hyperparameters; the optimizer's own may name
each other. A cycle (``weight_decay="learning_rate"``, ``learning_rate="weight_decay"``, or a
name used in its own expression) is refused when the optimizer is built. ``repr`` writes a
reference as its name, and an optimizer's config stores such a value as its expression text,
so ``get_config``/``from_config`` and ``.keras`` files round-trip.
"""

from __future__ import annotations

import graphlib
from collections.abc import Callable, Mapping
from typing import Any

from keras import ops

from hyperstep.errors import InvalidArgumentError
from hyperstep.schedules.base import Schedule
from hyperstep.schedules.language import parse


class Ref(Schedule):
    """The effective value of another hyperparameter: ``target.at(step)``.

    Built by :func:`relative` when an optimizer parses its expressions; ``repr`` is the
    name, so the text reads back. Not registered for serialization: an optimizer saves the
    expression text instead.

    Example:
        >>> import hyperstep as hs
        >>> lr = hs.Hyperparameter("0.1 * (1 - step / 100)", name="learning_rate")
        >>> head = relative("10 * learning_rate", {"learning_rate": lr})
        >>> head
        10.0 * learning_rate
        >>> _ = lr.scale.assign(0.5)
        >>> [round(float(v), 4) for v in head([0, 50])]
        [0.5, 0.25]
    """

    keyword = "ref"

    def __init__(self, name: str, target: Any = None) -> None:
        self.name = name
        self.target = target

    def value(self, step: Any) -> Any:
        if self.target is None:
            raise InvalidArgumentError(
                f"The reference to {self.name!r} is not bound to a hyperparameter: only an "
                "optimizer's own expressions may name its hyperparameters. "
                f"Received: name={self.name!r}"
            )
        return ops.cast(self.target.at(step), "float32")

    def arguments(self) -> dict[str, Any]:
        return {"name": self.name}

    def get_config(self) -> dict[str, Any]:
        raise InvalidArgumentError(
            f"A schedule naming the hyperparameter {self.name!r} is saved as its expression "
            "text by the optimizer that owns it, not on its own. Save the optimizer, or "
            f"write the value as text. Received: the schedule node {self.name}"
        )

    def __repr__(self) -> str:
        return self.name


def references(schedule: Schedule) -> list[Ref]:
    """Return the :class:`Ref` nodes of ``schedule``, in tree order."""
    if isinstance(schedule, Ref):
        return [schedule]
    return [ref for child in schedule.children() for ref in references(child)]


def relative(text: str, targets: Mapping[str, Any]) -> Schedule:
    """Parse ``text`` with the names of ``targets`` bound to :class:`Ref` nodes.

    ``targets`` maps a name to a Hyperparameter (or to ``None``, to be bound later with
    :func:`resolve`).

    Raises:
        ScheduleSyntaxError: For bad text or an unknown name (listing the known names).
    """
    return parse(text, names={name: Ref(name, target) for name, target in targets.items()})


def resolve(
    values: Mapping[str, Any], make: Callable[[str, Any], Any], where: str
) -> dict[str, Any]:
    """Build an optimizer's own hyperparameters, whose expressions may name each other.

    ``values`` maps each name to its given value; strings are parsed with every name of
    ``values`` known, ``make(name, value)`` builds each Hyperparameter, then every
    reference is bound to the one it names.

    Raises:
        InvalidArgumentError: For a cycle of references, naming it
            (``learning_rate -> weight_decay -> learning_rate``).
    """
    parsed: dict[str, Any] = dict(values)
    edges: dict[str, list[str]] = {}
    for name, value in values.items():
        if isinstance(value, str):
            parsed[name] = schedule = relative(value, dict.fromkeys(values))
            edges[name] = [ref.name for ref in references(schedule)]
    cycle = _cycle(edges)
    if cycle:
        raise InvalidArgumentError(
            f"`{where}`: hyperparameters written in terms of each other form a cycle: "
            f"{' -> '.join(cycle)}. A value may name the optimizer's other hyperparameters, "
            f"but not itself, directly or through others. Received: "
            + ", ".join(f"{name}={values[name]!r}" for name in dict.fromkeys(cycle))
        )
    built = {name: make(name, value) for name, value in parsed.items()}
    for name in edges:
        for ref in references(parsed[name]):
            ref.target = built[ref.name]
    return built


def _cycle(edges: Mapping[str, list[str]]) -> list[str]:
    """Return a cycle of ``edges`` as ``[a, b, ..., a]`` (each naming the next), or ``[]``."""
    try:  # graphlib lists a cycle along predecessors: reversed, each node names the next
        graphlib.TopologicalSorter(edges).prepare()
    except graphlib.CycleError as error:
        return list(reversed(error.args[1]))
    return []


__all__ = ["Ref", "references", "relative", "resolve"]
