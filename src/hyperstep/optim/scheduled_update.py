"""Keras's update hooks of an ``hs.scheduled`` optimizer: each runs Keras's own code.

``update_step(g, w, lr)`` runs Keras's code on ``w``'s group's view of the optimizer
(:func:`~hyperstep.optim.scheduled_base.group_view`), whose reads look the group's entries
up first in the update's one dict of values;
``build`` binds groups to variables; clipping is Keras's formulas with each bound rounded
once to the gradient's dtype (``g * c / max(norm(g), c)``, ``g * c * min(1 / norm(all), 1 / c)``,
``clip(g, -c, c)``); weight decay and torch's all-variables update run once per group.
``fused=True`` hands Adam, SGD and RMSprop to the backend's fused kernels
(:func:`hyperstep.backends.fused_updates`).
"""

from __future__ import annotations

from typing import Any

from keras import ops

from hyperstep import backends
from hyperstep.backends import native_variable
from hyperstep.optim.groups import assign_groups
from hyperstep.optim.scheduled_base import ScheduledBase, group_view, scheduled_state


class ScheduledUpdate(ScheduledBase):
    """The Keras optimizer methods a scheduled optimizer overrides to run an update."""

    def _hs_update(self) -> Any:
        """The step fixed for an update (kept if one is in progress: ``build`` and
        ``_clip_gradients`` called from ``apply``; :meth:`Update.fixed`)."""
        return scheduled_state(self).update.fixed(self.clock, host=True, values=self._hs_values)

    def build(self, variables: Any) -> Any:
        # Keras decides which slots to create from Python checks on hyperparameters
        # (`if self.momentum != 0`): they see the same values as inside `apply`.
        state = scheduled_state(self)
        if state.groups:
            owners = assign_groups(state.groups, list(variables))
            state.owner = {}
            for variable, group in zip(variables, owners, strict=True):
                if group is not None:
                    # TF's update path passes the backing tf.Variable, not the Keras one
                    inner = native_variable(variable)
                    state.owner[id(variable)] = state.owner[id(inner)] = group.name
        self._hs_track_state()
        # values read on demand here, not all at once: `build` may run before `fit` has told
        # the clock its epoch (torch), and it reads only the names its checks use
        with state.update.fixed(self.clock, host=True):
            return super().build(variables)  # type: ignore[misc]

    def _clip_gradients(self, grads: Any) -> Any:
        """Keras's clipping (``BaseOptimizer._clip_gradients`` and its helpers, formula for
        formula), with each bound rounded once to the gradient's dtype, as Keras's Python
        floats are: ``clipnorm``: ``g * c / max(norm(g), c)``; ``global_clipnorm``:
        ``g * c * min(1 / norm(all), 1 / c)``; ``clipvalue``: ``clip(g, -c, c)``."""
        with self._hs_update():
            clipnorm, global_clipnorm, clipvalue = (
                self.clipnorm,  # type: ignore[attr-defined]
                self.global_clipnorm,  # type: ignore[attr-defined]
                self.clipvalue,  # type: ignore[attr-defined]
            )
            if clipnorm is not None and clipnorm and clipnorm > 0:
                return [_clip_by_norm(g, clipnorm) if g is not None else g for g in grads]
            if global_clipnorm is not None and global_clipnorm and global_clipnorm > 0:
                return _clip_by_global_norm(grads, global_clipnorm)
            if clipvalue is not None and clipvalue and clipvalue > 0:
                return [_clip_by_value(g, clipvalue) if g is not None else g for g in grads]
            return grads

    def _apply_weight_decay(self, variables: Any) -> Any:
        state = scheduled_state(self)
        if state.fused_decay:
            return  # in `update_step`, just before each variable's update
        if not state.owner:
            return super()._apply_weight_decay(variables)  # type: ignore[misc]
        for variable in variables:  # each variable with its own group's values
            if not self._use_weight_decay(variable):  # type: ignore[attr-defined]
                continue  # (Keras's torch decay fails on an empty list)
            view = group_view(self, state.owner.get(id(variable)))
            super(ScheduledUpdate, view)._apply_weight_decay([variable])  # type: ignore[misc]

    def _backend_update_step(self, grads: Any, trainable_variables: Any, learning_rate: Any) -> Any:
        """Keras's torch optimizers update every variable at once with one learning rate
        (``_parallel_update_step``, ``torch._foreach_*``): with groups, once per group, each
        with its own values."""
        state = scheduled_state(self)
        if not state.owner or not hasattr(self, "_parallel_update_step"):
            return self._hs_update_group(grads, trainable_variables, learning_rate)
        by_group: dict[str | None, tuple[list[Any], list[Any]]] = {}
        for gradient, variable in zip(grads, trainable_variables, strict=True):
            pair = by_group.setdefault(state.owner.get(id(variable)), ([], []))
            pair[0].append(gradient)
            pair[1].append(variable)
        for group, (group_grads, variables) in by_group.items():
            if "learning_rate" in state.hyperparameters:
                learning_rate = state.update.read("learning_rate", group)
            view = group_view(self, group)  # its reads look this group's entries up first
            view._hs_update_group(group_grads, variables, learning_rate)

    def _hs_update_group(self, grads: Any, variables: Any, learning_rate: Any) -> Any:
        """One group's update: with ``fused=True`` on torch, PyTorch's fused kernel
        (:func:`hyperstep.backends.torch.group_update`), else Keras's own code (decaying the
        weights first where the fused path took the decay over and cannot run)."""
        state = scheduled_state(self)
        if state.fused:
            fused = backends.fused_updates()
            if fused.group_update(self, grads, variables, learning_rate):
                return None
            decayed = [v for v in variables if self._use_weight_decay(v)]  # type: ignore[attr-defined]
            if state.fused_decay and decayed and hasattr(self, "_parallel_update_step"):
                super()._apply_weight_decay(decayed)  # type: ignore[misc]
        return super()._backend_update_step(  # type: ignore[misc]
            grads, variables, learning_rate
        )

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> Any:
        if not self._hs_updating():
            # called directly, outside `apply` (Keras's own tests do): the learning rate
            # given, the other values at the clock's step
            with self._hs_update():
                return self._hs_update_step(gradient, variable, learning_rate, given=True)
        return self._hs_update_step(gradient, variable, learning_rate, given=False)

    def _hs_update_step(self, gradient: Any, variable: Any, learning_rate: Any, given: bool) -> Any:
        state = scheduled_state(self)
        group = state.owner.get(id(variable)) if state.owner else None
        if "learning_rate" in state.hyperparameters and not given:
            learning_rate = state.update.read("learning_rate", group)
        view = group_view(self, group)  # its reads look the group's entries up first
        fused = backends.fused_updates() if state.fused else None
        if fused is not None and state.fused_decay:
            fused.decay(view, variable, learning_rate)
        if fused is not None and fused.adam_applies(view, gradient, variable):
            return fused.adam(view, gradient, variable, learning_rate)
        if fused is not None and fused.sgd_applies(view, gradient, variable):
            return fused.sgd(view, gradient, variable, learning_rate)
        if fused is not None and fused.rmsprop_applies(view, gradient, variable):
            return fused.rmsprop(view, gradient, variable, learning_rate)
        return super(ScheduledUpdate, view).update_step(gradient, variable, learning_rate)  # type: ignore[misc]


def _clip_by_norm(values: Any, clipnorm: Any) -> Any:
    values = ops.convert_to_tensor(values)
    c = backends.in_dtype(clipnorm, values.dtype)
    l2sum = ops.sum(ops.square(values), None, keepdims=True)
    pred = l2sum > 0
    l2sum_safe = ops.where(pred, l2sum, ops.ones_like(l2sum))  # no nan gradient
    l2norm = ops.where(pred, ops.sqrt(l2sum_safe), l2sum)
    return ops.convert_to_tensor(ops.multiply(values, c)) / ops.maximum(l2norm, c)


def _clip_by_global_norm(grads: list[Any], clipnorm: Any) -> list[Any]:
    present = [ops.convert_to_tensor(g) for g in grads if g is not None]
    if not present:
        return grads
    c = backends.in_dtype(clipnorm, present[0].dtype)
    norm = ops.sqrt(ops.sum(ops.stack([ops.sum(ops.square(g)) for g in present])))
    finite = c * ops.minimum(1.0 / norm, 1.0 / c)
    scale = finite + (norm - norm)  # nan for an inf or nan norm
    return [g * scale if g is not None else g for g in grads]


def _clip_by_value(values: Any, clipvalue: Any) -> Any:
    values = ops.convert_to_tensor(values)
    c = backends.in_dtype(clipvalue, values.dtype)
    return ops.clip(values, -c, c)
