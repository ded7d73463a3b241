"""Every behaviour of Keras, TensorFlow, JAX and PyTorch outside their public APIs that
hyperstep relies on, one test each: an upgrade that changes one fails here by name
(hyperstep.backends holds the code that uses them)."""

from __future__ import annotations

import inspect
import io
import pickle

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.backends.internals import unpickle_optimizer

K = keras.optimizers


def test_keras_pickles_an_optimizer_as_a_class_method_and_its_keras_bytes() -> None:
    # hs.scheduled's __reduce__ keeps Keras's arguments and names the wrapped class instead
    function, args = K.Adam().__reduce__()
    assert function.__name__ == "_unpickle_model" and isinstance(args[0], io.BytesIO)
    restored = unpickle_optimizer(K.Adam, args)
    assert isinstance(restored, K.Adam)
    assert pickle.loads(pickle.dumps(hs.scheduled(K.Adam()))).__class__.__name__ == "ScheduledAdam"


def test_keras_optimizer_private_members_hyperstep_reads() -> None:
    opt = K.Adam(weight_decay=0.1)
    v = keras.Variable(np.ones(2, "float32"))
    opt.build([v])
    # the learning rate variable (or schedule) and the update counter
    assert isinstance(opt._learning_rate, keras.Variable) and isinstance(
        opt._iterations, keras.Variable
    )
    # variable tracking for state read inside jitted JAX steps
    assert opt._tracker.is_in_store("variables", opt._iterations)
    assert callable(opt._track_variable)
    # Adam's slots, for TensorFlow's fused kernel (fused=True)
    index = opt._get_variable_index(v)
    assert opt._momentums[index].shape == v.shape and opt._velocities[index].shape == v.shape
    assert opt._use_weight_decay(v) is True
    # AMSGrad's maximum second moments (torch's fused kernel: max_exp_avg_sqs)
    amsgrad = K.AdamW(amsgrad=True)
    amsgrad.build([v])
    assert amsgrad._velocity_hats[amsgrad._get_variable_index(v)].shape == v.shape
    # the methods hs.scheduled and StepOptimizer override, with Keras's signatures
    base = K.Optimizer
    for name, parameters in {
        "_clip_gradients": ["self", "grads"],
        "_apply_weight_decay": ["self", "variables"],
        "_get_current_learning_rate": ["self"],
        "_backend_update_step": ["self", "grads", "trainable_variables", "learning_rate"],
    }.items():
        assert list(inspect.signature(getattr(base, name)).parameters) == parameters, name


def test_keras_scopes_and_jax_trace_state() -> None:
    from jax._src import core
    from keras.src.backend.common.stateless_scope import get_stateless_scope, in_stateless_scope
    from keras.src.backend.common.symbolic_scope import in_symbolic_scope

    assert in_stateless_scope() is False and get_stateless_scope() is None
    assert in_symbolic_scope() is False
    assert callable(core.trace_state_clean) and callable(core.unsafe_am_i_under_a_jit)


def test_keras_jax_trainer_methods_the_clock_hook_wraps() -> None:
    from keras.src.backend.jax.trainer import JAXTrainer

    assert list(inspect.signature(JAXTrainer.train_step).parameters) == ["self", "state", "data"]
    assert "_get_jax_state" in vars(JAXTrainer)


def test_keras_torch_variable_keeps_its_tensor_in_value() -> None:
    from keras.src.backend.torch.core import Variable

    assert "_value" in inspect.getsource(Variable._initialize)


def test_tensorflow_conversion_hook_and_fused_adam_kernel() -> None:
    import tensorflow as tf

    assert callable(tf.register_tensor_conversion_function)
    assert {"var", "m", "v", "beta1_power", "lr", "grad"} <= set(
        inspect.signature(tf.raw_ops.ResourceApplyAdam).parameters
    )


# ---- PyTorch: what `hs.scheduled(..., fused=True)` relies on (hyperstep/backends/torch.py) ----
def test_keras_torch_adam_and_adamw_run_the_update_fused_true_replaces() -> None:
    """``fused=True`` replaces the update only where the optimizer runs Keras's torch Adam
    ``_parallel_update_step`` and ``TorchOptimizer._apply_weight_decay`` (identity checks);
    if Keras renames or overrides them, ``fused=True`` would silently run Keras's code."""
    pytest.importorskip("torch")
    from keras.src.backend.torch.optimizers import torch_adam, torch_adamw
    from keras.src.backend.torch.optimizers.torch_optimizer import TorchOptimizer
    from keras.src.optimizers import optimizer as optimizer_module
    from keras.src.optimizers.base_optimizer import BaseOptimizer

    from hyperstep.backends import torch as fused

    # Keras's torch backend swaps keras.optimizers.Adam/AdamW for these classes on creation
    swap = inspect.getsource(TorchOptimizer.__new__)
    assert "optimizers.Adam: torch_adam.Adam" in swap
    assert "optimizers.AdamW: torch_adamw.AdamW" in swap
    assert issubclass(torch_adam.Adam, K.Adam) and issubclass(torch_adamw.AdamW, K.AdamW)
    update = torch_adam.Adam._parallel_update_step
    assert fused._KERAS_ADAM is update and torch_adamw.AdamW._parallel_update_step is update
    assert list(inspect.signature(update).parameters) == [
        "self",
        "grads",
        "variables",
        "learning_rate",
    ]
    decay = TorchOptimizer._apply_weight_decay
    assert fused._KERAS_DECAY is decay and issubclass(TorchOptimizer, BaseOptimizer)
    # keras.Optimizer's base is the backend's optimizer (TorchOptimizer on torch), and
    # nothing between Keras's torch Adam/AdamW and it overrides the decay
    assert "TorchOptimizer as BackendOptimizer" in inspect.getsource(optimizer_module)
    assert "_apply_weight_decay" in vars(TorchOptimizer)
    for cls in (torch_adam.Adam, torch_adamw.AdamW):
        mro = cls.__mro__[: cls.__mro__.index(optimizer_module.Optimizer) + 1]
        assert [c for c in mro if "_apply_weight_decay" in vars(c)] == [], cls
    # the decay the kernel's `w *= 1 - lr * weight_decay` stands for, and Adam's slots
    assert "1 - self.weight_decay * self._get_current_learning_rate()" in inspect.getsource(decay)
    source = inspect.getsource(update)
    for name in ("_momentums", "_velocities", "_velocity_hats", "self.iterations + 1"):
        assert name in source, name


def test_torch_fused_adam_kernels_and_their_devices() -> None:
    """``torch._fused_adam_``/``_fused_adamw_`` (private ops) with the arguments hyperstep
    passes, and ``torch.optim``'s list of devices that have them (private)."""
    torch = pytest.importorskip("torch")
    from torch.utils._foreach_utils import _get_fused_kernels_supported_devices

    from hyperstep.backends import torch as fused

    assert fused.kernels()
    assert {"cpu", "cuda"} <= set(_get_fused_kernels_supported_devices())
    assert fused._FUSED_DEVICES == tuple(_get_fused_kernels_supported_devices())
    expected = [
        "self",
        "grads",
        "exp_avgs",
        "exp_avg_sqs",
        "max_exp_avg_sqs",
        "state_steps",
        "lr",
        "beta1",
        "beta2",
        "weight_decay",
        "eps",
        "amsgrad",
        "maximize",
    ]
    for op in (torch.ops.aten._fused_adam_, torch.ops.aten._fused_adamw_):
        arguments = [a.name for a in op.default._schema.arguments]
        assert arguments[: len(expected)] == expected, op
        assert str(op.default._schema.arguments[6].type) == "float", op  # lr: a number
