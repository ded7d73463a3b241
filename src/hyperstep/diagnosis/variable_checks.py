"""The doctor's checks of each variable's own facts: tracked, in the optimizer, floating, trainable.

Each ``check_*(facts) -> [(key, Finding)]`` reads :mod:`hyperstep.diagnosis.probe`'s facts; the
rules are listed in :mod:`hyperstep.diagnosis.checks`, which runs them with the gradient checks.
"""

from __future__ import annotations

import keras
import numpy as np

from hyperstep.backends.doctor import tracer
from hyperstep.diagnosis.bindings import describe_owner, dtype_name, is_keras_class, key
from hyperstep.diagnosis.probe import Facts, VariableFact
from hyperstep.diagnosis.report import Finding

Found = list[tuple[int | None, Finding]]


def weight_call(fact: VariableFact, name: str) -> str:
    value = np.asarray(tracer().to_numpy(fact.variable))
    dtype = dtype_name(fact.variable)
    shape = tuple(int(d) for d in value.shape)
    if value.size and np.all(value == 0):
        init = '"zeros"'
    elif value.size and np.all(value == 1):
        init = '"ones"'
    elif value.size and np.all(value == value.flat[0]):
        init = f"keras.initializers.Constant({value.flat[0].item()!r})"
    else:
        init = '"glorot_uniform"'
    extra = "" if dtype == "float32" else f', dtype="{dtype}"'
    extra += "" if fact.trainable else ", trainable=False"
    return f'self.add_weight(shape={shape}, initializer={init}{extra}, name="{name}")'


def check_untracked(facts: Facts) -> Found:
    found: Found = []
    rebound_paths = {b.path for b in facts.rebound.values()}
    for fact in facts.variables:
        if fact.origin != "attribute" or fact.binding is None:
            continue
        binding = fact.binding
        first, *rest = binding.attribute.split("/")
        kind = (
            "keras.Variable"
            if isinstance(fact.variable, keras.Variable)
            else tracer().raw_kind(fact.variable)
        )
        made = {"tf.Variable": "tf.Variable", "jax.Array": "jnp.asarray"}.get(
            kind, "torch.nn.Parameter"
        )
        owner = describe_owner(binding)
        inside = type(getattr(binding.owner, first, None)).__name__
        what = {
            "attribute": f"{kind} in attribute `{first}` of {owner} is not tracked",
            "list": f"{kind} in list attribute `{first}` (item {'/'.join(rest)}) of {owner} is "
            "not tracked",
            "dict": f"{kind} in dict attribute `{first}` (key {'/'.join(rest)}) of {owner} is "
            "not tracked",
            "module": f"{kind} `{binding.attribute}` of {owner} is not tracked: attribute "
            f"`{first}` holds a {inside}, an object Keras does not look inside",
        }[binding.container]
        reads = {
            "nonzero": "The loss reads it (its gradient is non-zero), so it should be training.",
            "zero": "The loss reads it (its gradient exists).",
            "none": "The loss on this batch does not depend on it either.",
        }.get(fact.gradient, "")
        name = (
            "_".join([first, *rest])
            if binding.container in ("list", "dict")
            else (rest or [first])[-1]
        )
        call = weight_call(fact, name)
        if binding.path in rebound_paths:
            fix = (
                f"assign instead of rebinding: self.{first}.assign(new_value) "
                f"(not self.{first} = {made}(new_value))"
            )
        elif binding.container == "attribute":
            fix = f"in {type(binding.owner).__name__}.__init__ or build(): self.{first} = {call}"
        elif binding.container in ("list", "dict"):
            held = (
                f"[{call}, ...]" if binding.container == "list" else f'{{"{rest[0]}": {call}, ...}}'
            )
            fix = (
                f"hold keras variables instead: self.{first} = {held} "
                f"(Keras 3 tracks lists and dicts of keras.Variable, not of {kind})"
            )
        else:
            fix = (
                f"create it on the layer: self.{name} = {call}, or make its container "
                "a keras.layers.Layer so that Keras tracks it"
            )
        found.append(
            (
                fact.key,
                Finding(
                    fact.path,
                    "untracked",
                    what,
                    "Keras 3 tracks only variables made with add_weight() or keras.Variable and "
                    "held directly or in lists/dicts: this one is missing from "
                    "model.trainable_variables, so fit() and a tape over "
                    "model.trainable_variables never train it and save_weights() drops it. "
                    + reads,
                    fix + ".",
                ),
            )
        )
    return found


def check_stale_in_optimizer(facts: Facts) -> Found:
    found: Found = []
    for stale in facts.stale:
        holders = " and ".join(stale.holders)
        found.append(
            (
                key(stale.old),
                Finding(
                    stale.path,
                    "stale-in-optimizer",
                    f"{holders} still {'hold' if len(stale.holders) > 1 else 'holds'} the old "
                    f"variable `{stale.path}`; the model now "
                    "reads a different object under that path",
                    "the variable was rebound (a new object assigned to the attribute) after "
                    "the optimizer was built or fit() traced its step: every update goes to "
                    "the old object, which the model no longer reads, and nothing says so.",
                    "assign new values instead of rebinding: variable.assign(new_value). If the "
                    "variable really must be replaced, make a new optimizer and compile again "
                    "(model.compile(optimizer=..., loss=...)) so the step is traced anew.",
                ),
            )
        )
    return found


def check_non_float_dtype(facts: Facts) -> Found:
    found: Found = []
    for fact in facts.variables:
        if not fact.trainable or fact.is_float:
            continue
        dtype = dtype_name(fact.variable)
        found.append(
            (
                fact.key,
                Finding(
                    fact.path,
                    "non-float-dtype",
                    f"trainable variable of dtype {dtype}",
                    "gradients exist only for floating dtypes, so the optimizer can never "
                    "update it (Keras warns 'Gradients do not exist', which hides the cause).",
                    f'make it non-trainable: self.add_weight(..., dtype="{dtype}", '
                    f'trainable=False) or keras.Variable(value, dtype="{dtype}", '
                    'trainable=False); if it should learn, make it float: dtype="float32".',
                ),
            )
        )
    return found


def check_not_trainable(facts: Facts) -> Found:
    found: Found = []
    for fact in facts.variables:
        if fact.trainable or not fact.is_float or fact.gradient not in ("nonzero", "zero"):
            continue
        owner = fact.owner
        if owner is None or not getattr(owner, "trainable", True) or is_keras_class(owner):
            continue
        found.append(
            (
                fact.key,
                Finding(
                    fact.path,
                    "not-trainable",
                    f"non-trainable variable on the loss's gradient path, created by "
                    f"{type(owner).__name__}",
                    "the loss has a gradient for it, but it is marked trainable=False, so it "
                    "is left out of model.trainable_variables and never updated. If it is a "
                    "constant on purpose, ignore this or freeze its layer (layer.trainable = "
                    "False).",
                    "create it trainable: self.add_weight(..., trainable=True), or set "
                    f"variable.trainable = True for `{fact.path}` before compile() (then "
                    "compile again so the optimizer includes it).",
                ),
            )
        )
    return found


def expected_to_train(fact: VariableFact, facts: Facts) -> bool:
    if not fact.trainable or not fact.is_float:
        return False
    if fact.origin == "model" and facts.var_list_keys is not None:
        return fact.key in facts.var_list_keys
    return True


def check_not_in_optimizer(facts: Facts) -> Found:
    found: Found = []
    for fact in facts.variables:
        if not fact.trainable or not fact.is_float or fact.gradient not in ("nonzero", "zero"):
            continue
        if facts.var_list_keys is not None and fact.key not in facts.var_list_keys:
            what = "has a gradient but is not in the var_list the loop passes to the optimizer"
            why = "the optimizer updates only the variables it is given, so this one stays put."
            fix = (
                "pass it: grads = tape.gradient(loss, model.trainable_variables); "
                "optimizer.apply_gradients(zip(grads, model.trainable_variables)); or, if it "
                "is frozen on purpose, set its layer's trainable = False."
            )
        elif facts.optimizer_keys is not None and fact.key not in facts.optimizer_keys:
            what = "has a gradient but the optimizer was built without it"
            why = (
                "the optimizer was built (optimizer.build or the first step) before this "
                "variable existed or became trainable; it keeps no state for it and never "
                "updates it."
            )
            fix = (
                "make a new optimizer and compile again: model.compile(optimizer=..., "
                "loss=...); in a custom loop build it after the last change: "
                "optimizer.build(model.trainable_variables)."
            )
        else:
            continue
        found.append((fact.key, Finding(fact.path, "not-in-optimizer", what, why, fix)))
    return found
