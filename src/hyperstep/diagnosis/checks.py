"""One function per doctor code; each reads the facts of :mod:`hyperstep.diagnosis.probe`.

Each check returns ``(key, Finding)`` pairs, where ``key`` identifies the variable, so
that :func:`prune` can drop findings that a root cause already explains (a raw
``tf.Variable`` is ``untracked``; saying also that it is ``not-in-optimizer`` adds noise).

Each code's rule is what :func:`hyperstep.diagnosis.diagnose.doctor` says of it, read from
the evidence; besides: ``not-in-optimizer`` is a variable missing from the custom loop's
``var_list`` or from a built optimizer, and ``zero-gradient`` is not reported where every
path passes the centred input of a BatchNormalization in training mode (a shift's gradient
is zero there by design).

The op names of ``blocked`` are the backend's own: TensorFlow's graph ops (``StopGradient``,
``Round``, ``Cast``), JAX's primitives (``stop_gradient``, ``round``,
``convert_element_type``), torch's functions (``detach``, ``round``, ``to``).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import keras
import numpy as np

from hyperstep.backends.doctor import tracer
from hyperstep.backends.traces import TracedOp
from hyperstep.diagnosis.paths import PathFact
from hyperstep.diagnosis.probe import (
    Facts,
    VariableFact,
    describe_owner,
    is_keras_class,
    key,
    layer_path,
)
from hyperstep.diagnosis.report import Finding
from hyperstep.optim.optimizer import StepOptimizer
from hyperstep.optim.scheduled import ScheduledOptimizer

_STRAIGHT = "use a straight-through estimator: y = x + keras.ops.stop_gradient({}(x) - x)"
_ARGMAX = (
    "argmax has no gradient: use a soft version, e.g. keras.ops.softmax(logits / t), or a "
    "straight-through estimator: y = soft + keras.ops.stop_gradient(hard - soft)"
)
_PY_FUNCTION = (
    "compute it with TensorFlow ops inside tf.py_function (numpy code has no gradient), or "
    "give it one with @tf.custom_gradient"
)
#: the fix for each op that stops a gradient, by the name the user calls it (:func:`_name`:
#: TensorFlow's ``Round``, JAX's ``round`` and torch's ``round`` are all ``round``)
_BLOCK_FIXES = {
    "stop_gradient": "remove keras.ops.stop_gradient around it (or, if it is fixed on "
    "purpose, make it trainable=False)",
    "detach": "remove keras.ops.stop_gradient (or .detach()) around it (or, if it is fixed "
    "on purpose, make it trainable=False)",
    "argmax": _ARGMAX,
    "argmin": _ARGMAX,
    "cast": "keep the value floating (a cast to an integer type has no gradient), or "
    + _STRAIGHT.format("hard"),
    "py_function": _PY_FUNCTION,
    "numpy_function": "tf.numpy_function has no gradient: " + _PY_FUNCTION,
    "pure_callback": "compute it with keras.ops (a callback into Python has no gradient), "
    "or give it one with jax.custom_vjp",
    "numpy": "compute it with keras.ops (a value taken to NumPy has no gradient), or give "
    "it one with a torch.autograd.Function",
    **{name: _STRAIGHT.format(f"keras.ops.{name}") for name in ("round", "floor", "ceil",
                                                                 "sign", "trunc")},
    **dict.fromkeys(
        ("greater", "greater_equal", "less", "less_equal", "equal", "not_equal"),
        "a comparison has no gradient: compare softly, e.g. keras.ops.sigmoid((a - b) / t)",
    ),
}  # fmt: skip

#: a function a fix names: its module (``tf.``, ``tf.math.``, ``keras.ops.``) and its name
_CALL = re.compile(r"\b(tf\.math\.|tf\.|keras\.ops\.)(\w+)")
#: the name a user calls for a backend's op, where the two differ
_CALLED = {
    "arg_max": "argmax",
    "arg_min": "argmin",
    "convert_element_type": "cast",
    "to": "cast",
    "eager_py_func": "py_function",
    "py_func": "numpy_function",
    "py_func_stateless": "numpy_function",
    "rint": "round",
    **dict.fromkeys(("item", "tolist", "array", "float"), "numpy"),
    **{short: name for short, name in (("gt", "greater"), ("ge", "greater_equal"),
       ("lt", "less"), ("le", "less_equal"), ("eq", "equal"), ("ne", "not_equal"))},
}  # fmt: skip
_OPERATORS = {"greater": ">", "greater_equal": ">=", "less": "<", "less_equal": "<=",
              "equal": "==", "not_equal": "!="}  # fmt: skip


def _name(op: TracedOp) -> str:
    """The name the user calls the op by (``StopGradient``: ``stop_gradient``, ``gt``:
    ``greater``, ``__float__``: ``numpy``)."""
    own = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", op.type).lower().strip("_")
    return _CALLED.get(own, own)


def _line(op: TracedOp) -> str:
    """The code of the op's source line (``""`` when unknown)."""
    code = re.search(r"`(.*)`$", op.source or "")
    return code[1] if code else ""


def _written(op: TracedOp) -> dict[str, str]:
    """The functions the op's source line calls, ``name -> module`` (``ops.round(x)``:
    ``{"round": "ops."}``)."""
    return {name: module for module, name in re.findall(r"([\w.]*\.)(\w+)\(", _line(op))}


def called(op: TracedOp) -> str | None:
    """The op as the user's source line writes it (``keras.ops.stop_gradient`` where
    TensorFlow's graph says ``StopGradient``, ``self.w.detach()``, ``>``), or ``None`` when
    the line shows no call that makes it.

    Example:
        >>> called(TracedOp("StopGradient", "m/StopGradient", "m.py:3: `y = ops.stop_gradient(w)`"))
        'ops.stop_gradient'
        >>> called(TracedOp("gt", "eqn 4", "m.py:3: `y = ops.where(s > 0.5, 2.0, 1.0)`"))
        '>'
    """
    name, written = _name(op), _written(op)
    for call in (name, op.type.lower(), "stop_gradient" if name == "detach" else None):
        if call in written:
            return written[call] + call + ("()" if call == "detach" else "")
    symbol = _OPERATORS.get(name)
    return symbol if symbol and f" {symbol} " in _line(op) else None


def as_written(fix: str, op: TracedOp) -> str:
    """``fix`` with its functions spelled as the user's source line spells them: those the
    line calls as written (``keras.ops.stop_gradient`` where TensorFlow's graph says
    ``StopGradient``, ``x.detach()``), the others from the module the blocking op came from.

    Example:
        >>> op = TracedOp("Round", "model/Round", "m.py:3: `return ops.round(x @ self.w)`")
        >>> as_written("y = x + tf.stop_gradient(tf.round(x) - x)", op)
        'y = x + ops.stop_gradient(ops.round(x) - x)'
    """
    written = _written(op)
    if "detach" in written and "stop_gradient" not in written:
        return fix.replace("keras.ops.stop_gradient (or .detach())", ".detach()")
    fix = fix.replace(" (or .detach())", "") if "stop_gradient" in written else fix
    style = written.get(_name(op)) or written.get(op.type.lower())
    style = None if style is None or style.startswith("tf.") else style  # tf's: as in the fix
    alias = next((module for module in written.values() if module.endswith("ops.")), None)
    for module, name in set(_CALL.findall(fix)):
        spelled = written.get(name, style or (alias if module == "keras.ops." else None))
        if spelled is not None and spelled != module:
            fix = re.sub(rf"\b{re.escape(module + name)}\b", spelled + name, fix)
    return fix


def _describe(op: TracedOp) -> str:
    """The op as the user wrote it (:func:`called`) or its type, and where it was made: the
    user's line, or else the op's name in the trace."""
    if op.source is None:
        return f"{op.type} (op '{op.name}')"
    return f"{called(op) or op.type} (created at {op.source})"


Found = list[tuple[int | None, Finding]]


def _about(fact: VariableFact, code: str, what: str, why: str, fix: str) -> tuple[int, Finding]:
    """A finding about ``fact``'s variable, keyed by it (for :func:`prune`)."""
    return fact.key, Finding(fact.path, code, what, why, fix)


def _blocked(fact: VariableFact, path: PathFact) -> tuple[int, Finding]:
    if path.blockers:
        # the call the user wrote first; the backend's own ops on its line say no more
        first, *rest = sorted(path.blockers, key=lambda op: called(op) is None)
        name = called(first) or first.type
        named = _describe(first)
        others = [_describe(op) for op in rest if op.source != first.source][:3]
        fix = as_written(
            _BLOCK_FIXES.get(
                _name(first),
                f"route the variable to the loss through differentiable ops, not {name}",
            ),
            first,
        )
    else:
        name = named = "an op inside a nested function (no gradient came out of it)"
        others = []
        fix = (
            "check the custom gradients, conditionals, loops and nested functions between "
            "it and the loss: one of them gives no gradient for it"
        )
    why = f"every path from `{fact.path}` to the loss goes through {name}, where the gradient stops"
    if others:
        why += "; also through " + ", ".join(others)
    return _about(fact, "blocked", f"gradient blocked by {named}", why + ".", fix + ".")


def _use(fact: VariableFact) -> str:
    """How to make the loss read an unused variable, in its owner's words."""
    owner = fact.owner
    if owner is None:
        return "use it in the model's call() or in the loss, or delete it"
    if is_keras_class(owner):
        return (
            f"call {type(owner).__name__} `{layer_path(owner)}` in the model's call() "
            "and use its output, or delete the layer"
        )
    attribute = next((k for k, v in vars(owner).items() if v is fact.variable), None)
    example = f" (e.g. return x * self.{attribute})" if attribute else ""
    return f"use it in {type(owner).__name__}.call(){example} or in the loss, or delete it"


# ---- each variable's own facts: tracked, in the optimizer, floating, trainable ---------


def weight_call(fact: VariableFact, name: str) -> str:
    value = np.asarray(tracer().to_numpy(fact.variable))
    dtype = tracer().dtype_name(fact.variable)
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
            _about(
                fact,
                "untracked",
                what,
                "Keras 3 tracks only variables made with add_weight() or keras.Variable and "
                "held directly or in lists/dicts: this one is missing from "
                "model.trainable_variables, so fit() and a tape over "
                "model.trainable_variables never train it and save_weights() drops it. " + reads,
                fix + ".",
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
        dtype = tracer().dtype_name(fact.variable)
        found.append(
            _about(
                fact,
                "non-float-dtype",
                f"trainable variable of dtype {dtype}",
                "gradients exist only for floating dtypes, so the optimizer can never "
                "update it (Keras warns 'Gradients do not exist', which hides the cause).",
                f'make it non-trainable: self.add_weight(..., dtype="{dtype}", '
                f'trainable=False) or keras.Variable(value, dtype="{dtype}", '
                'trainable=False); if it should learn, make it float: dtype="float32".',
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
            _about(
                fact,
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
        found.append(_about(fact, "not-in-optimizer", what, why, fix))
    return found


# ---- the gradient and the learning rate -------------------------------------------------


def check_unused(facts: Facts) -> Found:
    found: Found = []
    for fact in facts.variables:
        if fact.gradient != "none" or not expected_to_train(fact, facts):
            continue
        path = facts.path(fact.variable)
        if path is not None and path.kind != "unused":
            continue
        evidence = (
            "the traced loss has no path from it to the loss"
            if path is not None
            else f"the loss has no gradient for it (tracing failed: {facts.trace_error})"
        )
        found.append(
            _about(
                fact,
                "unused",
                "the loss does not depend on it",
                f"{evidence}, so it gets no gradient and the optimizer skips it (Keras "
                "says only 'Gradients do not exist').",
                f"{_use(fact)}; if another loss trains it, diagnose that loss.",
            )
        )
    return found


def check_blocked(facts: Facts) -> Found:
    found: Found = []
    for fact in facts.variables:
        if fact.gradient not in ("none", "zero") or not expected_to_train(fact, facts):
            continue
        path = facts.path(fact.variable)
        if path is None or path.kind == "unused":
            continue
        if path.kind == "open":
            if fact.gradient == "zero":
                continue
            path = facts.path(fact.variable, opaque=True)
            if path is None or path.kind == "unused":
                continue
            if path.kind == "open":
                path = PathFact("blocked")
        found.append(_blocked(fact, path))
    return found


def check_zero_gradient(facts: Facts) -> Found:
    found: Found = []
    for fact in facts.variables:
        if fact.gradient != "zero" or not expected_to_train(fact, facts):
            continue
        path = facts.path(fact.variable)
        if path is not None and path.kind != "open":
            continue
        graph = facts.graph()
        if graph is not None and graph.normalized(fact.variable):
            continue
        found.append(
            _about(
                fact,
                "zero-gradient",
                "the gradient is exactly 0 on this batch",
                "a differentiable path to the loss exists, but every element of the "
                "gradient is 0: e.g. every unit after it is an inactive ReLU (dead ReLU), "
                "or it is multiplied by 0, so this step does not move it.",
                "check what multiplies it and the activations after it: for dead ReLUs use "
                "keras.activations.leaky_relu or a He initializer and a smaller learning "
                "rate; check factors that are 0.",
            )
        )
    return found


def made_as(optimizer: object) -> tuple[str, str]:
    """The optimizer's class as the user named it, and the call that makes one with a rate:
    ``keras.optimizers.SGD(...)``, ``hs.scheduled(keras.optimizers.SGD(), ...)``,
    ``hs.StepOptimizer(...)`` or the user's own class (inside a ``LossScaleOptimizer``:
    the optimizer it wraps).

    Example:
        >>> import keras
        >>> made_as(keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD()))
        ('SGD', 'keras.optimizers.SGD(learning_rate=1e-3)')
    """
    inner = getattr(optimizer, "inner_optimizer", None) or optimizer
    cls = type(inner)
    if isinstance(inner, StepOptimizer):
        return "StepOptimizer", "hs.StepOptimizer(..., learning_rate=1e-3)"
    if isinstance(inner, ScheduledOptimizer):
        wrapped = inner._hs_base
        prefix = "keras.optimizers." if wrapped.__module__.startswith("keras") else ""
        return wrapped.__name__, f"hs.scheduled({prefix}{wrapped.__name__}(), learning_rate=1e-3)"
    prefix = "keras.optimizers." if cls.__module__.startswith("keras") else ""
    return cls.__name__, f"{prefix}{cls.__name__}(learning_rate=1e-3)"


def check_zero_learning_rate(facts: Facts) -> Found:
    found: Found = []
    name, call = made_as(facts.optimizer)
    for rate in facts.learning_rates:
        if rate.current != 0 or (rate.following not in (None, 0.0)):
            continue
        group = rate.path.split("/")[-2] if rate.path.count("/") >= 2 else None
        whose = f"group {group!r} of {name}" if group else name
        moves = "in this group" if group else "this optimizer updates"
        ahead = " (the schedule is 0 at the next step too)" if rate.following == 0 else ""
        found.append(
            (
                None,
                Finding(
                    rate.path,
                    "zero-learning-rate",
                    f"the learning rate of {whose} is 0 at step {rate.step}",
                    "every update is multiplied by the learning rate, so no variable "
                    f"{moves} moves{ahead}.",
                    (
                        f"give the group a positive rate: hs.Group({group!r}, ..., "
                        "learning_rate=1e-3), or a schedule that is positive at this step."
                        if group
                        else f"pass a positive rate, e.g. {call}, or a schedule that is "
                        "positive at this step."
                    ),
                ),
            )
        )
    return found


def check_batch(facts: Facts) -> Found:
    """``empty-batch`` or ``nan-loss``: the batch itself gives no evidence about gradients."""
    if facts.problem == "empty-batch":
        shape = facts.empty_shape
        return [
            (
                None,
                Finding(
                    "data",
                    "empty-batch",
                    f"the batch has no rows (an array of shape {shape})",
                    "a loss over no examples is NaN or 0 and every gradient 0 or NaN, so "
                    "nothing about the variables can be read from it, and a training step "
                    "on it does nothing or writes NaN into the weights.",
                    "pass a batch with at least one example: check the slicing, filtering "
                    "or batch_size that produced it (a dataset's last batch may be empty "
                    "after a filter).",
                ),
            )
        ]
    if facts.problem == "nan-loss":
        return [
            (
                None,
                Finding(
                    "loss",
                    "nan-loss",
                    f"the loss on this batch is {facts.loss}",
                    "every gradient of a NaN or infinite loss is NaN (or meaningless), so "
                    "a step with it writes NaN into the weights; no gradient-based finding "
                    "can be read from it.",
                    "find the first non-finite value: NaN or inf in the data, log or sqrt "
                    "of 0 or a negative number, a division by 0, a learning rate that "
                    "already diverged (check the weights), float16 overflow (use "
                    "mixed_float16's loss scaling); keras.callbacks.TerminateOnNaN stops fit().",
                ),
            )
        ]
    return []


CHECKS: tuple[Callable[[Facts], Found], ...] = (
    check_batch,
    check_untracked,
    check_stale_in_optimizer,
    check_non_float_dtype,
    check_not_trainable,
    check_not_in_optimizer,
    check_unused,
    check_blocked,
    check_zero_gradient,
    check_zero_learning_rate,
)

# A finding of the key's code makes these codes for the same variable redundant.
_EXPLAINS = {
    "non-float-dtype": {"not-trainable", "not-in-optimizer", "unused", "blocked", "zero-gradient"},
    "untracked": {"not-in-optimizer", "unused"},
    "stale-in-optimizer": {"unused", "not-in-optimizer"},
}


def prune(found: Found, facts: Facts) -> list[Finding]:
    """Drop findings that a root cause for the same variable already explains."""
    codes: dict[int, set[str]] = {}
    for k, finding in found:
        if k is not None:
            codes.setdefault(k, set()).add(finding.code)
    for k in facts.rebound:
        codes.setdefault(k, set()).add("stale-in-optimizer")
    stale_paths = {f.path for _, f in found if f.code == "stale-in-optimizer"}
    kept = []
    for k, finding in found:
        if finding.code == "not-in-optimizer" and finding.path in stale_paths:
            continue  # the new object under a stale path: the stale finding says it all
        redundant: set[str] = set()
        for code in codes.get(k, set()) if k is not None else ():
            redundant |= _EXPLAINS.get(code, set())
        if finding.code not in redundant:
            kept.append(finding)
    return kept


def run_checks(facts: Facts) -> list[Finding]:
    """Run every check and return the pruned findings."""
    found: Found = []
    for check in CHECKS:
        found.extend(check(facts))
    return prune(found, facts)
