"""Parameter groups: a set of variables with its own hyperparameters, on the optimizer's clock.

:func:`assign_groups` resolves :class:`Group` objects against an optimizer's variables at
build time: every variable belongs to exactly one group (unmatched ones to the default
group, whose hyperparameters are the optimizer's own); a group that matches nothing, or a
variable matched by two groups, is an error naming the groups, the patterns and the paths.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import keras

from hyperstep.errors import InvalidArgumentError, InvalidTypeError, received

Match = Any  # str | keras.Variable | Sequence[str | keras.Variable] | Callable[[Variable], bool]


def _is_variable(value: Any) -> bool:
    return isinstance(value, keras.Variable) or (
        hasattr(value, "assign") and hasattr(value, "shape") and hasattr(value, "dtype")
    )


def _path(variable: Any) -> str:
    return str(getattr(variable, "path", None) or getattr(variable, "name", repr(variable)))


def _escape(path: str) -> str:
    """Return a glob that matches exactly ``path``."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)


class Group:
    """A set of variables trained with its own hyperparameters.

    A group's hyperparameters are the ones it sets; every other hyperparameter of the rule
    is the optimizer's own (shared, not copied). Each value may be a number, a schedule, an
    expression string or an :class:`hyperstep.Hyperparameter`; the optimizer turns them into
    Hyperparameters on its one clock, reachable as
    ``opt.groups[name].hyperparameters[key]`` and as ``opt.hyperparameters[f"{name}/{key}"]``.

    Args:
        name: The group's name: letters, digits, ``_``, ``-`` or ``.``; unique per optimizer.
        match: A glob on ``variable.path`` (``"*/temperature"``), a variable, a list of
            variables and/or globs, or a predicate ``variable -> bool``.
        **hyperparameters: The group's own hyperparameters.

    Raises:
        ValueError: For an empty or malformed name.
        TypeError: For a ``match`` of another type.

    Example:
        >>> g = Group("temperature", match="*/temperature", learning_rate=0.01)
        >>> g
        Group('temperature', match='*/temperature', learning_rate=0.01)
    """

    def __init__(self, name: str, match: Match, **hyperparameters: Any) -> None:
        if (
            not isinstance(name, str)
            or not name
            or not all(c.isalnum() or c in "_-." for c in name)
        ):
            raise InvalidArgumentError(
                "`Group(name=...)` must be a non-empty string of letters, digits, '_', '-' or "
                f"'.'. {received('name', name)}"
            )
        self.name = name
        self.match = _check_match(name, match)
        self.hyperparameters: dict[str, Any] = dict(hyperparameters)

    def select(self, variables: Sequence[Any]) -> list[int]:
        """Return the indices of ``variables`` this group matches.

        Raises:
            ValueError: If a glob, a listed variable or the predicate matches nothing.
        """
        paths = [_path(v) for v in variables]
        chosen: set[int] = set()
        for item in self.match if isinstance(self.match, list) else [self.match]:
            if isinstance(item, str):
                found = [i for i, p in enumerate(paths) if fnmatch.fnmatchcase(p, item)]
                what = f"the pattern {item!r}"
            elif _is_variable(item):
                found = [i for i, v in enumerate(variables) if v is item]
                what = f"the listed variable {_path(item)!r}"
            else:
                found = [i for i, v in enumerate(variables) if bool(item(v))]
                what = f"the predicate {item!r}"
            if not found:
                raise InvalidArgumentError(
                    f"Group {self.name!r}: {what} matched no variable of the optimizer. "
                    f"The optimizer's variables: {_listing(paths)}."
                )
            chosen.update(found)
        return sorted(chosen)

    def get_config(self, variables: Sequence[Any] | None = None) -> dict[str, Any]:
        """Return the config; lists of variables and predicates become exact path globs.

        Args:
            variables: The optimizer's variables, needed to serialize a predicate.

        Raises:
            ValueError: For a predicate when ``variables`` is not given.
        """
        if isinstance(self.match, str):
            match: Any = self.match
        elif isinstance(self.match, list):
            match = [m if isinstance(m, str) else _escape(_path(m)) for m in self.match]
        elif variables is not None:
            match = [_escape(_path(variables[i])) for i in self.select(variables)]
        else:
            raise InvalidArgumentError(
                f"Group {self.name!r} selects variables with a predicate, which is saved as the "
                "paths it matched: build the optimizer (train one step or call "
                "`optimizer.build(model.trainable_variables)`) before saving it. "
                f"{received('match', self.match)}"
            )
        return {"name": self.name, "match": match, "hyperparameters": dict(self.hyperparameters)}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Group:
        return cls(config["name"], config["match"], **config.get("hyperparameters", {}))

    def __repr__(self) -> str:
        match = self.match
        if isinstance(match, list):
            match = [m if isinstance(m, str) else f"<{_path(m)}>" for m in match]
        parts = [repr(self.name), f"match={match!r}"]
        parts += [f"{key}={value!r}" for key, value in self.hyperparameters.items()]
        return f"Group({', '.join(parts)})"


def assign_groups(groups: Iterable[Group], variables: Sequence[Any]) -> list[Group | None]:
    """Return, for each of ``variables``, the group it belongs to (``None``: the default).

    This is the one resolver behind every optimizer that takes groups (their names checked
    unique when it was constructed); call it when the optimizer is built.

    Raises:
        ValueError: If a group matches nothing (naming its patterns and listing the variable
            paths), or if a variable is matched by two groups (naming the variable and both
            groups).

    Example:
        >>> import keras
        >>> a = keras.Variable(1.0, name="a"); b = keras.Variable(2.0, name="b")
        >>> [g and g.name for g in assign_groups([Group("fast", match=[b])], [a, b])]
        [None, 'fast']
    """
    owner: list[Group | None] = [None] * len(variables)
    for group in groups:
        for index in group.select(variables):
            other = owner[index]
            if other is not None:
                raise InvalidArgumentError(
                    f"The variable {_path(variables[index])!r} is matched by two groups: "
                    f"{other.name!r} (match={other.match!r}) and {group.name!r} "
                    f"(match={group.match!r}). A variable belongs to exactly one group: "
                    "narrow one of the patterns."
                )
            owner[index] = group
    return owner


def _check_match(name: str, match: Any) -> Any:
    if isinstance(match, str):
        if not match:
            raise InvalidArgumentError(
                f"Group {name!r}: `match` is an empty pattern. Received: match=''."
            )
        return match
    if _is_variable(match):
        return [match]
    if isinstance(match, (list, tuple)):
        bad = [m for m in match if not (isinstance(m, str) or _is_variable(m))]
        if bad or not match:
            raise InvalidTypeError(
                f"Group {name!r}: a `match` list holds variables and/or glob strings, and is not "
                f"empty. {received('match', match)}"
            )
        return list(match)
    if callable(match):
        return match
    raise InvalidTypeError(
        f"Group {name!r}: `match` must be a glob on `variable.path`, a variable, a list of "
        f"variables, or a predicate `variable -> bool`. {received('match', match)}"
    )


def _listing(paths: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(repr(p) for p in paths[:limit])
    more = f", ... ({len(paths) - limit} more)" if len(paths) > limit else ""
    return f"[{shown}{more}]"


__all__ = ["Group", "Match", "assign_groups"]
