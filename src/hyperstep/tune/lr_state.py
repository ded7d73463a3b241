"""Everything ``hs.find_lr`` puts back: variables, clocks and the global random state.

Copied: the model's variables and metrics, every optimizer's variables (the wrappers' and
each one they wrap, see :mod:`hyperstep.control.wrapped`), each hyperstep optimizer's clock
(``step`` and the epoch counters, which fit binds, and the epoch length it may bind) and
every hyperparameter's variables (``scale``, ``override``, added state), and the global
random generators ``fit`` draws from (:mod:`hyperstep.backends.random_state`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hyperstep.backends import random_state
from hyperstep.control import wrapped


class Snapshot:
    """Copies the random state, the clocks' settings and the variables when made (and the
    variables made since in :meth:`copy_variables`); :meth:`restore` writes them back."""

    def __init__(self, model: Any, setter: Any) -> None:
        self.model, self.setter = model, setter
        self.random = random_state.capture()
        self.clocks = [
            (c, c._steps_per_epoch, c.follows_fit, c.total_given) for c in _clocks(model, setter)
        ]
        for clock, *_ in self.clocks:  # the run's length stays: the test's fit keeps it
            clock.total_given = clock.total_given or clock.total is not None
        self.saved: list[tuple[Any, np.ndarray]] = []
        self.copy_variables()

    def variables(self) -> list[Any]:
        """Every variable the test may change, each once."""
        model = self.model
        found = [*model.variables, *model.metrics_variables, *self.setter.variables]
        for optimizer in wrapped.every_optimizer(model.optimizer):
            found.extend(optimizer.variables)
            if wrapped.is_hyperstep_optimizer(optimizer):
                for hyperparameter in optimizer.hyperparameters.values():
                    found.extend(hyperparameter.variables)
        for clock, *_ in self.clocks:
            found.extend(clock.variables)
        return list({id(variable): variable for variable in found}.values())

    def copy_variables(self) -> None:
        """Copy every variable not copied yet (made, then at the start of ``fit``: before
        hyperstep's fit hook binds the clocks' epochs, and then what fit built)."""
        known = {id(v) for v, _ in self.saved}
        for variable in self.variables():
            if id(variable) not in known:
                self.saved.append((variable, np.array(variable.numpy(), copy=True)))

    def restore(self) -> None:
        """Write every copy back (variables only if they were copied)."""
        for variable, value in self.saved:
            variable.assign(value)
        for clock, steps_per_epoch, follows_fit, total_given in self.clocks:
            clock._steps_per_epoch = steps_per_epoch
            clock.follows_fit = follows_fit
            clock.total_given = total_given
        random_state.restore(self.random)


def _clocks(model: Any, setter: Any) -> list[Any]:
    found: list[Any] = []
    owners: list[Any] = [
        o for o in wrapped.every_optimizer(model.optimizer) if wrapped.is_hyperstep_optimizer(o)
    ]
    for optimizer in owners:
        found.append(optimizer.clock)
        found.extend(h.clock for h in optimizer.hyperparameters.values())
    hyperparameter = getattr(setter, "hyperparameter", None)
    if hyperparameter is not None:
        found.append(hyperparameter.clock)
    return list({id(clock): clock for clock in found}.values())
