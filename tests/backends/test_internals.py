"""Every behaviour of Keras, TensorFlow and JAX outside their public APIs that hyperstep
relies on, one test each: a Keras, TensorFlow or JAX upgrade that changes one fails here by
name (hyperstep.backends holds the code that uses them)."""

from __future__ import annotations

import inspect
import io
import pickle

import keras
import numpy as np

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


def test_keras_flatten_layers_and_symbolic_scope_hyperstep_reads() -> None:
    from hyperstep import backends
    from hyperstep.backends.fit import layers_of

    inner = keras.layers.Dense(1)
    outer = keras.Sequential([keras.Input((2,)), inner])
    assert layers_of(outer)[0] is outer and inner in layers_of(outer)
    seen = []

    class Probe(keras.layers.Layer):
        def call(self, x):  # type: ignore[no-untyped-def]
            seen.append(backends.building_model())
            return x

    inputs = keras.Input((2,))
    Probe()(inputs)  # a functional call: Keras infers the shape symbolically
    Probe()(np.zeros((1, 2), "float32"))  # an eager call
    assert seen == [True, False]
