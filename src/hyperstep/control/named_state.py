"""An optimizer's hyperstep state saved by the hyperparameter's name, never by position.

A ``.keras`` file or ``save_weights`` keeps an optimizer's own variables as ``"0"``, ``"1"``,
... (the count Keras checks on load) and each hyperparameter's state under
``"<key>/<state>"`` with ``/`` written ``:`` (HDF5 reads ``/`` as a folder), so reordered
or added groups and hyperparameters restore by name (docs/backends.md, "Saving").
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "hyperstep_variables",
    "load_by_name",
    "load_numbered",
    "save_by_name",
]

_SEPARATOR = ":"


def _entry(key: str, state: str) -> str:
    return f"{key}/{state}".replace("/", _SEPARATOR)


def hyperstep_variables(clock: Any, hyperparameters: Iterable[Any]) -> set[int]:
    """The ids of the clock's and the hyperparameters' variables (their clocks' too)."""
    found = {id(v) for v in getattr(clock, "variables", [])}
    for hyperparameter in hyperparameters:
        found.update(id(v) for v in hyperparameter.variables)
        found.update(id(v) for v in hyperparameter.clock.variables)
    return found


def save_by_name(store: Any, hyperparameters: Mapping[str, Any]) -> None:
    """Write every hyperparameter's own state under ``"<key>:<state>"``."""
    for key, hyperparameter in hyperparameters.items():
        for variable in hyperparameter._own_variables():
            store[_entry(key, variable.name)] = variable.numpy()


def load_numbered(store: Any, own: list[Any], owner: str) -> None:
    """Assign the numbered entries (``"0"``, ``"1"``, ...) to the optimizer's own variables
    ``own``; for another count, Keras's warning, and nothing assigned."""
    numbered = [key for key in store.keys() if key.isdigit()]
    if len(numbered) != len(own):
        message = (
            f"Skipping variable loading for optimizer '{owner}', because it has {len(own)} "
            f"variables whereas the saved optimizer has {len(numbered)} variables. "
        )
        if not own:
            message += "This is likely because the optimizer has not been called/built yet."
        warnings.warn(message, stacklevel=3)
        return
    for index, variable in enumerate(own):
        variable.assign(store[str(index)])


def load_by_name(store: Any, hyperparameters: Mapping[str, Any], owner: str) -> None:
    """Restore each ``"<key>:<state>"`` entry into the hyperparameter ``key``.

    A state the hyperparameter does not have yet (a controller built after the load) waits
    in it and is assigned when the controller adds it (:meth:`Hyperparameter.add_state`).
    Entries whose hyperparameter is gone are named in one warning.
    """
    entries: dict[str, list[str]] = {}
    for name in store.keys():
        if _SEPARATOR in name:
            key, _, state = name.rpartition(_SEPARATOR)
            entries.setdefault(key, []).append(state)
    by_entry = {key.replace("/", _SEPARATOR): hp for key, hp in hyperparameters.items()}
    orphans: list[str] = []
    for key, states in entries.items():
        hyperparameter = by_entry.get(key)
        if hyperparameter is None:
            orphans += [f"{key}/{state}".replace(_SEPARATOR, "/") for state in states]
            continue
        hyperparameter._load_named({state: store[f"{key}:{state}"] for state in states})
    if orphans:
        warnings.warn(
            f"Optimizer {owner!r}: the saved state {sorted(orphans)} belongs to no "
            f"hyperparameter of this optimizer (its hyperparameters: {sorted(hyperparameters)}); "
            "it was not restored. Add the group or hyperparameter it names, or ignore it.",
            UserWarning,
            stacklevel=3,
        )


class SavedByName:
    """Mixin of a hyperstep optimizer: ``save_own_variables``/``load_own_variables`` with its
    own variables numbered (as Keras's) and its hyperparameters' state by name; the
    attributes in ``_hs_walked_by_name`` are hidden from Keras's saving walk (``dir``), so no
    container saves them again by position. Needs ``clock``, ``variables``, ``name`` and
    ``_hs_named()`` (``{key: hyperparameter}``)."""

    _hs_walked_by_name: frozenset[str] = frozenset({"hyperparameters", "groups"})
    clock: Any
    variables: Any
    name: str

    def _hs_named(self) -> Mapping[str, Any]:
        raise NotImplementedError

    def __dir__(self) -> list[str]:
        return [n for n in super().__dir__() if n not in self._hs_walked_by_name]

    def _hs_keras_variables(self) -> list[Any]:
        """The optimizer's own variables: ``variables`` without hyperstep's (the clock's and
        the hyperparameters', which a JAX step carries among them)."""
        theirs = hyperstep_variables(self.clock, self._hs_named().values())
        return [v for v in self.variables if id(v) not in theirs]

    def save_own_variables(self, store: Any) -> None:
        for index, variable in enumerate(self._hs_keras_variables()):
            store[str(index)] = variable.numpy()
        save_by_name(store, self._hs_named())

    def load_own_variables(self, store: Any) -> None:
        load_numbered(store, self._hs_keras_variables(), self.name)
        load_by_name(store, self._hs_named(), self.name)
