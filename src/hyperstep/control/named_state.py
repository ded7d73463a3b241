"""An optimizer's hyperstep state saved by the hyperparameter's name, never by position.

A ``.keras`` file or ``save_weights`` keeps an optimizer's own variables as ``"0"``, ``"1"``,
... (the count Keras checks on load) and each hyperparameter's state under
``"<key>/<state>"`` with ``/`` written ``:`` (HDF5 reads ``/`` as a folder), so reordered
or added groups and hyperparameters restore by name (docs/backends.md, "Saving").
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["SavedByName"]

_SEPARATOR = ":"


def _entry(key: str, state: str) -> str:
    return f"{key}/{state}".replace("/", _SEPARATOR)


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
    _hs_named: Callable[[], Mapping[str, Any]]

    def __dir__(self) -> list[str]:
        return [n for n in super().__dir__() if n not in self._hs_walked_by_name]

    def _hs_keras_variables(self) -> list[Any]:
        """The optimizer's own variables: ``variables`` without hyperstep's (the clock's,
        the hyperparameters' and their clocks', which a JAX step carries among them)."""
        theirs = {id(v) for v in self.clock.variables}
        for hyperparameter in self._hs_named().values():
            theirs.update(id(v) for v in hyperparameter.variables)
            theirs.update(id(v) for v in hyperparameter.clock.variables)
        return [v for v in self.variables if id(v) not in theirs]

    def save_own_variables(self, store: Any) -> None:
        """Write the own variables as ``"0"``, ``"1"``, ... and every hyperparameter's own
        state under ``"<key>:<state>"``."""
        for index, variable in enumerate(self._hs_keras_variables()):
            store[str(index)] = variable.numpy()
        for key, hyperparameter in self._hs_named().items():
            for variable in hyperparameter._own_variables():
                store[_entry(key, variable.name)] = variable.numpy()

    def load_own_variables(self, store: Any) -> None:
        """Assign the numbered entries to the own variables (for another count, Keras's
        warning, and none assigned), then each ``"<key>:<state>"`` entry to the hyperparameter
        ``key``: a state it does not have yet (a controller built after the load) waits in
        it for :meth:`Hyperparameter.add_state`; entries whose hyperparameter is gone are
        named in one warning."""
        own = self._hs_keras_variables()
        numbered = [key for key in store.keys() if key.isdigit()]
        if len(numbered) != len(own):
            message = (
                f"Skipping variable loading for optimizer '{self.name}', because it has "
                f"{len(own)} variables whereas the saved optimizer has {len(numbered)} "
                "variables. "
            )
            if not own:
                message += "This is likely because the optimizer has not been called/built yet."
            warnings.warn(message, stacklevel=2)
        else:
            for index, variable in enumerate(own):
                variable.assign(store[str(index)])
        entries: dict[str, list[str]] = {}
        for name in store.keys():
            if _SEPARATOR in name:
                key, _, state = name.rpartition(_SEPARATOR)
                entries.setdefault(key, []).append(state)
        hyperparameters = self._hs_named()
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
                f"Optimizer {self.name!r}: the saved state {sorted(orphans)} belongs to no "
                "hyperparameter of this optimizer (its hyperparameters: "
                f"{sorted(hyperparameters)}); it was not restored. Add the group or "
                "hyperparameter it names, or ignore it.",
                UserWarning,
                stacklevel=2,
            )
