"""Every private API of Keras, TensorFlow, JAX and torch that hyperstep uses, behind one
version check.

:data:`PRIVATE_APIS` lists each with its package and what hyperstep does with it,
:data:`VERIFIED` the versions each package was verified on (the dev pins and the oldest
supported, ``make test-oldest``). Code reaches an API only through :func:`reach` (or, on a hot
path, turns its ``AttributeError`` into :func:`missing`'s error). See "Private APIs and the
versions they were verified on" in docs/backends.md; ``tests/backends/test_internals.py`` pins
each behaviour relied on.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hyperstep.errors import BackendError

__all__ = [
    "OPTIMIZER_SLOTS",
    "PRIVATE_APIS",
    "VERIFIED",
    "PrivateAPI",
    "installed",
    "missing",
    "reach",
    "verified",
]

#: Oldest and newest version of each package hyperstep's private-API uses were verified on.
VERIFIED: dict[str, tuple[str, str]] = {
    "keras": ("3.10.0", "3.15.1"),
    "tensorflow": ("2.19.1", "2.21.0"),
    "jax": ("0.10.2", "0.10.2"),
    "torch": ("2.13.0", "2.13.0"),
}


@dataclass(frozen=True)
class PrivateAPI:
    """One private API: ``probe()`` returns it (raising if it moved); ``use``: what for."""

    name: str
    package: str
    use: str
    probe: Callable[[], Any]


#: Keras optimizers' private slot lists and helpers the fused kernels read.
OPTIMIZER_SLOTS = (
    "keras.Optimizer._momentums/_velocities/_average_gradients/_get_variable_index/"
    "_use_weight_decay"
)


def _import(module: str, *attributes: str) -> Any:
    # an imported module from sys.modules: dynamo traces that, not `import_module` (a graph
    # break when a private API is first reached inside a compiled step)
    found = sys.modules.get(module) or importlib.import_module(module)
    for attribute in attributes:
        found = getattr(found, attribute)
    return found


def _keras_optimizer_slots() -> Any:
    import keras

    variable = keras.Variable([1.0])
    adam = keras.optimizers.Adam(weight_decay=0.1)
    adam.build([variable])
    rmsprop = keras.optimizers.RMSprop(centered=True, momentum=0.9)
    rmsprop.build([variable])
    index = adam._get_variable_index(variable)
    return (
        adam._momentums[index],
        adam._velocities[index],
        rmsprop._average_gradients[index],
        adam._use_weight_decay(variable),
    )


def _apis() -> dict[str, PrivateAPI]:
    common = "keras.src.backend.common"
    apis = [
        PrivateAPI(
            "keras.Optimizer._unpickle_model",
            "keras",
            "pickling hs.scheduled optimizers",
            lambda: _import("keras", "optimizers", "Optimizer", "_unpickle_model"),
        ),
        PrivateAPI(
            f"{common}.stateless_scope.in_stateless_scope",
            "keras",
            "knowing whether assignments are recorded (keras.StatelessScope)",
            lambda: _import(f"{common}.stateless_scope", "in_stateless_scope"),
        ),
        PrivateAPI(
            f"{common}.stateless_scope.get_stateless_scope",
            "keras",
            "the JAX freeze check (variables read as constants in jax.jit)",
            lambda: _import(f"{common}.stateless_scope", "get_stateless_scope"),
        ),
        PrivateAPI(
            f"{common}.symbolic_scope.in_symbolic_scope",
            "keras",
            "the JAX freeze check; epoch 0 while a model is built symbolically",
            lambda: _import(f"{common}.symbolic_scope", "in_symbolic_scope"),
        ),
        PrivateAPI(
            f"{common}.global_state.get_global_attribute",
            "keras",
            "the doctor puts Keras's global seed generator back after a probe",
            lambda: _import(f"{common}.global_state", "get_global_attribute"),
        ),
        PrivateAPI(
            f"{common}.global_state.set_global_attribute",
            "keras",
            "find_lr puts Keras's global seed generator back (also when it made one)",
            lambda: _import(f"{common}.global_state", "set_global_attribute"),
        ),
        PrivateAPI(
            "keras.Model._symbolic_build",
            "keras",
            "find_lr builds an unbuilt model (and its optimizer) as fit does",
            lambda: _import("keras", "Model", "_symbolic_build"),
        ),
        PrivateAPI(
            "keras.Model._compile_loss/_compile_metrics",
            "keras",
            "find_lr and the doctor leave the compiled loss and metrics for fit to build "
            "(and draw from the data) as it would have",
            lambda: (
                _import("keras.src.trainers.compile_utils", "CompileLoss", "build"),
                _import("keras.src.trainers.compile_utils", "CompileMetrics", "build"),
            ),
        ),
        PrivateAPI(
            "tensorflow.python.eager.context.context()._rng",
            "tensorflow",
            "find_lr puts back the generator of TensorFlow's operation seeds",
            lambda: _import("tensorflow.python.eager.context", "context")(),
        ),
        PrivateAPI(
            "tensorflow.python.ops.stateful_random_ops.global_generator",
            "tensorflow",
            "find_lr puts back the state of TensorFlow's global tf.random.Generator",
            lambda: _import("tensorflow.python.ops", "stateful_random_ops"),
        ),
        PrivateAPI(
            "keras.src.saving.saving_lib.load_model",
            "keras",
            "a damaged number in a .keras file's config is refused naming the file",
            lambda: _import("keras.src.saving.saving_lib", "load_model"),
        ),
        PrivateAPI(
            "keras.callbacks.TensorBoard._collect_learning_rate",
            "keras",
            "TensorBoard's epoch_learning_rate is the value the epoch trained with",
            lambda: _import("keras", "callbacks", "TensorBoard", "_collect_learning_rate"),
        ),
        PrivateAPI(
            "tensorflow.Operation._set_attr",
            "tensorflow",
            "a dormant cooldown's cond kept one functional If op (_lower_using_switch_merge)",
            lambda: _import("tensorflow", "Operation", "_set_attr"),
        ),
        PrivateAPI(
            "keras.src.backend.jax.trainer.JAXTrainer._get_jax_state",
            "keras",
            "a clock's step in the model's and the optimizer's state in JAX fit",
            lambda: _import("keras.src.backend.jax.trainer", "JAXTrainer", "_get_jax_state"),
        ),
        PrivateAPI(
            "keras.src.backend.jax.trainer.JAXTrainer._jax_state",
            "keras",
            "a hyperparameter written or read during JAX fit (the trainer holds the state)",
            lambda: _import("keras.src.backend.jax.trainer", "JAXTrainer", "jax_state_sync"),
        ),
        PrivateAPI(
            "keras.src.backend.common.variables.Variable._initializer",
            "keras",
            "a clock's step read in a JAX fit's batch callback (its value purged by fit)",
            lambda: _import("keras.src.backend.common.variables", "Variable", "value"),
        ),
        PrivateAPI(
            "keras.src.backend.torch.core.Variable._value",
            "keras",
            "reading a torch clock's step without Keras's ~5 us `value`",
            lambda: _import("keras.src.backend.torch.core", "Variable", "_initialize"),
        ),
        PrivateAPI(
            OPTIMIZER_SLOTS,
            "keras",
            "TensorFlow's and torch's fused kernels read Adam's, SGD's and RMSprop's slots",
            _keras_optimizer_slots,
        ),
        PrivateAPI(
            "keras.src.backend.torch.optimizers.torch_adam.Adam._parallel_update_step/"
            "TorchOptimizer._apply_weight_decay",
            "keras",
            "hs.scheduled(fused=True) on torch recognises Keras's torch Adam",
            lambda: (
                _import(
                    "keras.src.backend.torch.optimizers.torch_adam", "Adam", "_parallel_update_step"
                ),
                _import(
                    "keras.src.backend.torch.optimizers.torch_optimizer",
                    "TorchOptimizer",
                    "_apply_weight_decay",
                ),
            ),
        ),
        PrivateAPI(
            "tensorflow.python.framework.ops.get_gradient_function",
            "tensorflow",
            "the doctor's graph analysis",
            lambda: _import("tensorflow.python.framework.ops", "get_gradient_function"),
        ),
        PrivateAPI(
            "tensorflow.python.framework.config.is_op_determinism_enabled",
            "tensorflow",
            "the demo restores TensorFlow's op determinism setting",
            lambda: (
                _import("tensorflow.python.framework.config", "is_op_determinism_enabled"),
                _import("tensorflow.python.framework.config", "disable_op_determinism"),
            ),
        ),
        PrivateAPI(
            "tensorflow.__internal__.get_enclosing_xla_context",
            "tensorflow",
            "StepOptimizer's TensorFlow kernels stay off under XLA, which fuses the rule's "
            "operations into fewer passes",
            lambda: _import("tensorflow", "__internal__", "get_enclosing_xla_context"),
        ),
        PrivateAPI(
            "jax._src.lax.lax._convert_element_type",
            "jax",
            "hs.scheduled's JAX values promote as Keras's Python floats (weakly typed)",
            lambda: _import("jax._src.lax.lax", "_convert_element_type"),
        ),
        PrivateAPI(
            "jax._src.dtypes.register_weak_scalar_type",
            "jax",
            "hs.scheduled's JAX values convert as Keras's Python floats (weakly typed)",
            lambda: _import("jax._src.dtypes", "register_weak_scalar_type"),
        ),
        PrivateAPI(
            "jax._src.core.trace_state_clean/unsafe_am_i_under_a_jit",
            "jax",
            "the JAX freeze check (variables read as constants in jax.jit)",
            lambda: (
                _import("jax._src.core", "trace_state_clean"),
                _import("jax._src.core", "unsafe_am_i_under_a_jit"),
            ),
        ),
        PrivateAPI(
            "torch._fused_adam_/_fused_adamw_",
            "torch",
            "hs.scheduled(fused=True) on torch",
            lambda: (_import("torch", "_fused_adam_"), _import("torch", "_fused_adamw_")),
        ),
        PrivateAPI(
            "torch._C._dynamo.eval_frame.get_eval_frame_callback",
            "torch",
            "no Python step in a frame torch.compile runs eagerly (backends.compiling)",
            lambda: _import("torch._C._dynamo.eval_frame", "get_eval_frame_callback"),
        ),
        PrivateAPI(
            "torch.utils._foreach_utils._get_fused_kernels_supported_devices",
            "torch",
            "the devices where hs.scheduled(fused=True) takes torch's fused Adam",
            lambda: _import("torch.utils._foreach_utils", "_get_fused_kernels_supported_devices"),
        ),
    ]
    return {api.name: api for api in apis}


#: Every private API hyperstep uses, by name.
PRIVATE_APIS: dict[str, PrivateAPI] = _apis()

_NO_FALLBACK: Any = object()


def installed(package: str) -> str | None:
    """The installed version of ``package`` (``"keras"``, ...), ``None`` if not installed."""
    module = sys.modules.get(package)
    if module is None:
        try:
            module = importlib.import_module(package)
        except ImportError:
            return None
    return str(getattr(module, "__version__", "unknown"))


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def verified(package: str, version: str | None = None) -> bool:
    """Whether ``version`` (default: the installed one) is in :data:`VERIFIED`'s range.

    Example:
        >>> verified("keras", "3.12.0"), verified("keras", "3.9.0"), verified("keras", "4.0")
        (True, False, False)
    """
    version = installed(package) if version is None else version
    if version is None:
        return False
    low, high = VERIFIED[package]
    return _release(low) <= _release(version) <= _release(high)


def missing(name: str, error: BaseException) -> BackendError:
    """The error for private API ``name`` not being there (raise it ``from error``)."""
    api = PRIVATE_APIS[name]
    version = installed(api.package)
    low, high = VERIFIED[api.package]
    found = f"{type(error).__name__}: {error}"
    if verified(api.package, version):
        advice = (
            "That version is in the verified range, so this is a hyperstep bug: please "
            "report it with this message."
        )
    else:
        advice = (
            f'Install a verified version (`pip install "{api.package}=={high}"`) or a '
            f"hyperstep release that supports {api.package} {version}."
        )
    return BackendError(
        f"hyperstep uses {api.package}'s private `{name}` ({api.use}), which the installed "
        f"{api.package} {version} does not provide ({found}). hyperstep was verified with "
        f"{api.package} {low} to {high}. {advice}"
    )


def reach(name: str, get: Callable[[], Any] | None = None, fallback: Any = _NO_FALLBACK) -> Any:
    """Private API ``name`` if it is there, else ``fallback`` or :func:`missing`'s error.

    ``get()`` reaches it (default: the API's probe).

    Example:
        >>> reach("keras.Optimizer._unpickle_model").__name__
        '_unpickle_model'
    """
    api = PRIVATE_APIS[name]
    try:
        return (get or api.probe)()
    except (ImportError, AttributeError) as error:
        if isinstance(error, BackendError):
            raise
        if fallback is not _NO_FALLBACK:
            return fallback
        raise missing(name, error) from error
