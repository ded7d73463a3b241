"""Every behaviour of Keras, TensorFlow, JAX and PyTorch outside their public APIs that
hyperstep relies on, one test each: an upgrade that changes one fails here by name
(hyperstep.backends holds the code that uses them; ``PINNED`` maps every entry of
``hyperstep.backends.versions.PRIVATE_APIS`` to its test), and the version check that turns
a moved one into one clear error."""

from __future__ import annotations

import inspect
import io
import pickle

import keras
import numpy as np
import pytest

import hyperstep as hs
from hyperstep.backends import versions
from hyperstep.backends.internals import unpickle_optimizer
from hyperstep.errors import BackendError

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
    # the variables being trained, the optimizer's own (SkipNonFinite), and the check that
    # skips slots for variables Keras overwrites with their gradient (StepOptimizer)
    assert len(opt._trainable_variables) == 1 and opt._trainable_variables[0] is v
    assert opt._variables == opt.variables
    assert opt._overwrite_variable_with_gradient(v) is False
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


def test_jax_convert_element_type_makes_a_weakly_typed_array() -> None:
    import jax.numpy as jnp
    from jax._src.lax.lax import _convert_element_type

    strong = jnp.float32(0.5) * jnp.ones((), "float32")
    weak = _convert_element_type(strong, strong.dtype, weak_type=True)
    assert weak.weak_type and not strong.weak_type
    assert (weak * jnp.ones((2,), "float16")).dtype == jnp.float16
    assert (strong * jnp.ones((2,), "float16")).dtype == jnp.float32


def test_jax_registered_weak_scalar_type_converts_weakly() -> None:
    import jax.numpy as jnp
    from jax._src import dtypes

    class Scalar:
        def __jax_array__(self) -> object:
            return jnp.ones((), "float32")

    assert not jnp.asarray(Scalar()).weak_type
    dtypes.register_weak_scalar_type(Scalar)
    assert jnp.asarray(Scalar()).weak_type
    assert (jnp.asarray(Scalar()) * jnp.ones((2,), "float16")).dtype == jnp.float16


def test_keras_jax_trainer_methods_the_clock_hook_wraps() -> None:
    from keras.src.backend.jax.trainer import JAXTrainer

    assert list(inspect.signature(JAXTrainer.train_step).parameters) == ["self", "state", "data"]
    assert "_get_jax_state" in vars(JAXTrainer)


def test_keras_jax_fit_keeps_the_state_in_the_trainer_between_steps() -> None:
    # hyperstep.backends.jax.write/held_scope: fit holds the state in `_jax_state` (the
    # variables purged) until `jax_state_sync`, and re-reads the variables once synced
    from keras.src.backend.jax.trainer import JAXTrainer

    fit = inspect.getsource(JAXTrainer.fit)
    assert "self._jax_state = {" in fit and "if self._jax_state_synced:" in fit
    assert "purge_model_variables=True" in fit
    sync = inspect.getsource(JAXTrainer.jax_state_sync)
    assert "self._jax_state_synced = True" in sync


def test_keras_reads_a_purged_variable_through_its_initializer() -> None:
    # hyperstep.backends.jax.read_held: a variable whose value fit purged (`_value = None`)
    # is read by calling `_initializer(shape, dtype=...)`, None once it is initialized
    from keras.src.backend.common.variables import Variable

    variable = keras.Variable(3.0)
    assert variable._initializer is None
    source = inspect.getsource(Variable.value.fget)
    assert "if self._value is None:" in source
    assert "self._initializer(self._shape, dtype=self._dtype)" in source


def test_keras_torch_variable_keeps_its_tensor_in_value() -> None:
    from keras.src.backend.torch.core import Variable

    assert "_value" in inspect.getsource(Variable._initialize)


def test_keras_rmsprop_centered_keeps_average_gradients_by_variable_index() -> None:
    # TensorFlow's fused ResourceApplyCenteredRMSProp reads the centered average (mg)
    v = keras.Variable(np.ones(2, "float32"))
    opt = K.RMSprop(centered=True, momentum=0.9)
    opt.build([v])
    index = opt._get_variable_index(v)
    assert opt._average_gradients[index].shape == v.shape
    assert opt._velocities[index].shape == opt._momentums[index].shape == v.shape


def test_tensorflow_gradient_function_and_op_determinism_config() -> None:
    import tensorflow as tf

    from hyperstep.backends import deterministic_ops
    from hyperstep.backends.internals import gradient_function

    graph = tf.Graph()
    with graph.as_default():
        y = tf.square(tf.constant(2.0))
    assert callable(gradient_function(y.op))  # the doctor asks which ops have gradients
    enabled = versions.reach("tensorflow.python.framework.config.is_op_determinism_enabled")[0]
    assert enabled() is False
    with deterministic_ops():
        assert enabled() is True
    assert enabled() is False  # put back


def test_tensorflow_enclosing_xla_context_marks_jit_compiled_traces() -> None:
    # StepOptimizer's TensorFlow kernels stay off where XLA compiles the step: a
    # tf.function(jit_compile=True) and Keras's fit with jit_compile=True
    import tensorflow as tf

    from hyperstep.backends.tensorflow import under_xla

    context = tf.__internal__.get_enclosing_xla_context
    seen = []

    class Probe(keras.layers.Layer):
        def call(self, x):  # type: ignore[no-untyped-def]
            seen.append((context() is not None, under_xla()))
            return x

    def probe() -> object:
        return Probe()(tf.ones(1))

    assert context() is None and not under_xla()
    tf.function(probe, jit_compile=True)()
    tf.function(probe)()
    assert seen == [(True, True), (False, False)]
    for jit_compile in (True, False):
        model = keras.Sequential([keras.Input((1,)), Probe(), keras.layers.Dense(1)])
        model.compile("sgd", "mse", jit_compile=jit_compile)
        seen.clear()  # (the symbolic build is traced without XLA)
        model.fit(np.ones((2, 1)), np.ones((2, 1)), verbose=0)
        assert set(seen) == {(jit_compile, jit_compile)}


def test_keras_load_model_loads_a_keras_file_in_saving_lib_load_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # backends.internals.loading_file: a from_config that load_model runs finds the file in
    # the frame of keras.src.saving.saving_lib.load_model, its `filepath`
    from hyperstep.backends.internals import loading_file

    seen = []

    class Probe(keras.layers.Layer):
        @classmethod
        def from_config(cls, config):  # type: ignore[no-untyped-def]
            seen.append(loading_file())
            return super().from_config(config)

    path = tmp_path / "m.keras"
    keras.Sequential([keras.Input((1,)), Probe(name="probe")]).save(path)
    keras.models.load_model(path, custom_objects={"Probe": Probe})
    keras.saving.load_model(str(path), custom_objects={"Probe": Probe})
    assert seen == [str(path), str(path)] and loading_file() is None


def test_keras_tensorboard_collects_the_optimizers_learning_rate_into_its_logs(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # backends.fit wraps TensorBoard._collect_learning_rate: Keras's own reads the optimizer
    # (the one a LossScaleOptimizer wraps) at its epoch end into `learning_rate`
    keras_collect = keras.callbacks.TensorBoard._collect_learning_rate.__wrapped__
    model = keras.Sequential([keras.Input((1,)), keras.layers.Dense(1)])
    model.compile(K.LossScaleOptimizer(K.SGD(learning_rate=0.25)), "mse")
    board = keras.callbacks.TensorBoard(str(tmp_path))
    board.set_model(model)
    assert keras_collect(board, {"loss": 1.0}) == {"loss": 1.0, "learning_rate": 0.25}


def test_tensorflow_cond_kept_functional_by_its_lowering_attribute() -> None:
    # a dormant cooldown's cond (backends.fast_paths.functional_cond): one If op that
    # TensorFlow does not lower to Switch/Merge, so the branch not taken never runs
    import tensorflow as tf

    from hyperstep.backends.fast_paths import functional_cond

    ran = tf.Variable(0)

    def on(x: tf.Tensor) -> tf.Tensor:
        ran.assign_add(1)
        return x * 2.0

    for jit_compile in (False, True):
        f = tf.function(
            lambda x: functional_cond(x > 0, lambda: on(x), lambda: x + 0.0),
            jit_compile=jit_compile,
        )
        assert float(f(tf.constant(3.0))) == 6.0 and float(f(tf.constant(-1.0))) == -1.0
        graph = f.get_concrete_function(tf.constant(1.0)).graph
        (found,) = [op for op in graph.get_operations() if op.type in ("If", "StatelessIf")]
        assert found.get_attr("_lower_using_switch_merge") is False
    assert int(ran.numpy()) == 2  # once per function: only the branch taken ran


def test_keras_global_seed_generator_lives_in_global_state() -> None:
    from hyperstep.backends.internals import global_seed_generator

    keras.random.normal((1,))  # unseeded: Keras makes its global generator
    assert isinstance(global_seed_generator(), keras.random.SeedGenerator)


def test_keras_global_state_setter_symbolic_build_and_compile_parts_find_lr_uses() -> None:
    from keras.src.backend.common import global_state

    from hyperstep.backends.internals import (
        build_again_in_fit,
        first_fit_builds,
        global_seed_generator,
        symbolic_build,
    )

    keras.random.normal((1,))
    generator = global_seed_generator()
    global_state.set_global_attribute("global_seed_generator", None)
    assert global_seed_generator() is None
    global_state.set_global_attribute("global_seed_generator", generator)
    assert global_seed_generator() is generator
    # an unbuilt model: _symbolic_build makes its variables, its compiled loss and metrics
    # and its optimizer's from one batch, as fit does
    model = keras.Sequential([keras.layers.Dense(2)])
    model.compile("adam", "mse", metrics=["mae"])
    builds = first_fit_builds(model)
    assert [built for _, built in builds] == [False, False]
    symbolic_build(model, (np.ones((4, 3), "float32"), np.ones((4, 2), "float32")))
    assert model.built and model.optimizer.built and len(model.optimizer.variables) > 2
    assert all(part.built for part, _ in builds)
    build_again_in_fit(builds)  # TensorFlow: left built (fit builds them in its trace)
    assert all(part.built for part, _ in builds) == (keras.backend.backend() == "tensorflow")


def test_tensorflow_operation_seeds_and_global_generator_find_lr_puts_back() -> None:
    import random

    import tensorflow as tf
    from tensorflow.python.eager import context
    from tensorflow.python.ops import stateful_random_ops

    tf.random.set_seed(5)
    seeds = context.context()._rng
    assert isinstance(seeds, random.Random)
    state = seeds.getstate()
    tf.random.uniform(())  # an unseeded op draws its operation seed from it
    assert context.context()._rng.getstate() != state
    assert hasattr(stateful_random_ops, "global_generator")
    tf.random.get_global_generator()
    assert stateful_random_ops.global_generator is tf.random.get_global_generator()


def test_keras_torch_adam_and_torch_fused_kernels() -> None:
    # hs.scheduled(fused=True) on torch recognises Keras's torch Adam by identity and calls
    # torch's fused kernels on the devices torch.optim lists
    import torch
    from keras.src.backend.torch.optimizers import torch_adam, torch_optimizer

    assert "_parallel_update_step" in vars(torch_adam.Adam)
    assert "_apply_weight_decay" in vars(torch_optimizer.TorchOptimizer)
    assert callable(torch._fused_adam_) and callable(torch._fused_adamw_)
    from torch.utils._foreach_utils import _get_fused_kernels_supported_devices

    assert "cpu" in _get_fused_kernels_supported_devices()


def test_torch_runs_a_frame_it_skips_in_a_compiled_function_with_its_frame_callback_set() -> None:
    # backends.compiling: dynamo runs a frame eagerly inside a compiled function (one it gave
    # up on; here by torch.compiler.disable(recursive=False)) and compiles its callees; there
    # `is_compiling()` is False and the frame callback is set, not outside nor in a disabled
    # frame (dynamo cannot trace the callback: it is read only where is_compiling() is False)
    import torch
    from torch._C._dynamo.eval_frame import get_eval_frame_callback

    seen = []

    def probe() -> None:
        seen.append((torch.compiler.is_compiling(), get_eval_frame_callback() not in (None, False)))

    def step(x: torch.Tensor) -> torch.Tensor:
        torch.compiler.disable(probe, recursive=False)()
        torch.compiler.disable(probe)()
        return x + 1

    torch.compile(step, backend="eager")(torch.ones(1))
    probe()
    assert seen == [(False, True), (False, False), (False, False)]


# ---- one version check for every private API (hyperstep.backends.versions) -----------------

#: The test above that pins each private API hyperstep reaches.
_SCOPES = test_keras_scopes_and_jax_trace_state
_TORCH_ADAM = test_keras_torch_adam_and_torch_fused_kernels
_TF = test_tensorflow_gradient_function_and_op_determinism_config
_COMMON = "keras.src.backend.common"
_FIND_LR = test_keras_global_state_setter_symbolic_build_and_compile_parts_find_lr_uses
_TF_SEEDS = test_tensorflow_operation_seeds_and_global_generator_find_lr_puts_back
PINNED = {
    "keras.Optimizer._unpickle_model": (
        test_keras_pickles_an_optimizer_as_a_class_method_and_its_keras_bytes
    ),
    f"{_COMMON}.stateless_scope.in_stateless_scope": _SCOPES,
    f"{_COMMON}.stateless_scope.get_stateless_scope": _SCOPES,
    f"{_COMMON}.symbolic_scope.in_symbolic_scope": _SCOPES,
    f"{_COMMON}.global_state.get_global_attribute": (
        test_keras_global_seed_generator_lives_in_global_state
    ),
    f"{_COMMON}.global_state.set_global_attribute": _FIND_LR,
    "keras.Model._symbolic_build": _FIND_LR,
    "keras.Model._compile_loss/_compile_metrics": _FIND_LR,
    "tensorflow.python.eager.context.context()._rng": _TF_SEEDS,
    "tensorflow.python.ops.stateful_random_ops.global_generator": _TF_SEEDS,
    "keras.src.saving.saving_lib.load_model": (
        test_keras_load_model_loads_a_keras_file_in_saving_lib_load_model
    ),
    "keras.callbacks.TensorBoard._collect_learning_rate": (
        test_keras_tensorboard_collects_the_optimizers_learning_rate_into_its_logs
    ),
    "tensorflow.Operation._set_attr": (
        test_tensorflow_cond_kept_functional_by_its_lowering_attribute
    ),
    "keras.src.backend.jax.trainer.JAXTrainer._get_jax_state": (
        test_keras_jax_trainer_methods_the_clock_hook_wraps
    ),
    "keras.src.backend.jax.trainer.JAXTrainer._jax_state": (
        test_keras_jax_fit_keeps_the_state_in_the_trainer_between_steps
    ),
    "keras.src.backend.torch.core.Variable._value": (
        test_keras_torch_variable_keeps_its_tensor_in_value
    ),
    "keras.src.backend.common.variables.Variable._initializer": (
        test_keras_reads_a_purged_variable_through_its_initializer
    ),
    versions.OPTIMIZER_SLOTS: test_keras_rmsprop_centered_keeps_average_gradients_by_variable_index,
    "keras.src.backend.torch.optimizers.torch_adam.Adam._parallel_update_step/"
    "TorchOptimizer._apply_weight_decay": _TORCH_ADAM,
    "tensorflow.python.framework.ops.get_gradient_function": _TF,
    "tensorflow.python.framework.config.is_op_determinism_enabled": _TF,
    "tensorflow.__internal__.get_enclosing_xla_context": (
        test_tensorflow_enclosing_xla_context_marks_jit_compiled_traces
    ),
    "jax._src.core.trace_state_clean/unsafe_am_i_under_a_jit": _SCOPES,
    "jax._src.lax.lax._convert_element_type": (
        test_jax_convert_element_type_makes_a_weakly_typed_array
    ),
    "jax._src.dtypes.register_weak_scalar_type": (
        test_jax_registered_weak_scalar_type_converts_weakly
    ),
    "torch._fused_adam_/_fused_adamw_": _TORCH_ADAM,
    "torch.utils._foreach_utils._get_fused_kernels_supported_devices": _TORCH_ADAM,
    "torch._C._dynamo.eval_frame.get_eval_frame_callback": (
        test_torch_runs_a_frame_it_skips_in_a_compiled_function_with_its_frame_callback_set
    ),
}


def test_every_private_api_has_a_pinning_test_and_is_reachable_on_the_installed_versions() -> None:
    assert set(PINNED) == set(versions.PRIVATE_APIS)
    for name, api in versions.PRIVATE_APIS.items():
        assert api.package in versions.VERIFIED, name
        assert versions.reach(name) is not None, name


def test_the_dev_pins_are_in_the_verified_ranges() -> None:
    for package in versions.VERIFIED:
        assert versions.verified(package), (package, versions.installed(package))
    assert versions.verified("keras", "3.10.0") and versions.verified("keras", "3.15.1")
    assert not versions.verified("keras", "3.9.2") and not versions.verified("keras", "3.16.0")
    assert versions.verified("torch", "2.13.0+cpu")


def test_a_moved_private_api_outside_the_verified_range_is_one_clear_backend_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from keras.src.saving.keras_saveable import KerasSaveable

    _, args = K.Adam().__reduce__()
    monkeypatch.setattr(keras, "__version__", "3.99.0")
    assert isinstance(unpickle_optimizer(K.Adam, args), K.Adam)  # still there: it works

    _, args = K.Adam().__reduce__()
    monkeypatch.delattr(KerasSaveable, "_unpickle_model")
    with pytest.raises(BackendError) as raised:
        unpickle_optimizer(K.Adam, args)
    message = str(raised.value)
    assert "keras's private `keras.Optimizer._unpickle_model`" in message
    assert "installed keras 3.99.0 does not provide (AttributeError" in message
    assert "verified with keras 3.10.0 to 3.15.1" in message
    assert 'pip install "keras==3.15.1"' in message
    assert isinstance(raised.value.__cause__, AttributeError)

    monkeypatch.setattr(keras, "__version__", "3.12.0")  # in range: a hyperstep bug
    with pytest.raises(BackendError, match="in the verified range, so this is a hyperstep bug"):
        unpickle_optimizer(K.Adam, args)


def test_an_optional_private_api_that_moved_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    from keras.src.backend.common import global_state

    from hyperstep.backends.internals import global_seed_generator

    monkeypatch.delattr(global_state, "get_global_attribute")
    assert global_seed_generator() is None  # the doctor then leaves the generator alone


def test_a_moved_private_attribute_on_a_hot_path_is_the_same_error() -> None:
    error = versions.missing("keras.src.backend.torch.core.Variable._value", AttributeError("x"))
    assert isinstance(
        error, BackendError
    ) and "`keras.src.backend.torch.core.Variable._value`" in str(error)

    class Moved:  # a Keras optimizer whose slot lists moved
        weight_decay, iterations, beta_1, beta_2 = 0.1, 0, 0.9, 0.999

    from hyperstep.backends import tensorflow as tf_backend

    with pytest.raises(BackendError, match="_use_weight_decay"):
        tf_backend.decay(Moved(), keras.Variable([1.0]), 0.1)
    with pytest.raises(BackendError, match="_momentums"):
        tf_backend.adam(Moved(), keras.ops.ones(1), keras.Variable([1.0]), 0.1)


def test_tensorflow_conversion_hook_and_fused_adam_kernel() -> None:
    import tensorflow as tf

    class Half(float):  # a float TensorFlow converts through `__tf_tensor__` in a graph
        def __tf_tensor__(self, dtype: object = None, name: object = None) -> object:
            return tf.constant(0.5, dtype or tf.float32)

    @tf.function
    def scaled(x: object) -> object:
        return x * Half(3.0), tf.cast(Half(3.0), tf.float64)

    product, cast = scaled(tf.ones((), tf.float16))
    assert product.dtype == tf.float16 and float(product) == 0.5 and float(cast) == 0.5
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
