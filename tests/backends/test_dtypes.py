"""Every Keras optimizer x {float16, bfloat16, float32, float64} variables x backend:
``hs.scheduled`` trains bitwise the plain optimizer (its learning rate set to the same value
before each step) wherever Keras itself trains that dtype (``dtypes_worker.py``; were: Ftrl
and centered RMSprop crashed on float64; Lamb, Muon and Nadam on TensorFlow with float16 and
bfloat16; most optimizers differed in the last bits on float16, bfloat16 and float64, the
values promoted as float32 tensors where Keras's Python floats take the variable's dtype),
and a user's optimizer that tests a hyperparameter in a Python ``if``
(``on = self.extra_decay > 0``) trains under it, bitwise the plain one."""

from __future__ import annotations

from pathlib import Path

import keras
import pytest

WORKER = Path(__file__).with_name("dtypes_worker.py")
BACKENDS = ("tensorflow", "jax", "torch")


#: the cases plain Keras itself does not train (measured; its own error, so not compared):
#: Muon on float64 variables on TensorFlow, Nadam on bfloat16 variables on torch
UNSUPPORTED = {"tensorflow": {"Muon/float64"}, "jax": set(), "torch": {"Nadam/bfloat16"}}


def _check(result: dict) -> None:
    backend, cases = result["backend"], result["cases"]
    others = {k: v for k, v in cases.items() if v not in ("equal", "unsupported")}
    assert others == {}, (backend, others)  # bitwise, no crash
    unsupported = {k for k, v in cases.items() if v == "unsupported"}
    assert unsupported == {k for k in UNSUPPORTED[backend] if k in cases}, (backend, unsupported)
    assert cases["ExtraDecay/float32"] == cases["ExtraDecay/scheduled"] == "equal"
    assert result["warnings"] == []


@pytest.mark.slow
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_optimizer_and_dtype_on_every_backend(workers, backend: str) -> None:
    _check(workers(WORKER, [backend])[backend])


#: the fast test's cells: Adam on every dtype, and the cells that crashed (see below)
FAST_CELLS = ["Adam", "Ftrl/float64", "RMSprop/float64", "Muon/float16", "Muon/bfloat16"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_float64_ftrl_and_centered_rmsprop_and_a_python_if_on_this_backend(
    workers, backend: str
) -> None:
    # were: "x and y must have the same dtype" (Ftrl, RMSprop(centered=True) on float64);
    # OperatorNotAllowedInGraphError / TracerBoolConversionError (`on = extra_decay > 0`);
    # Muon: `lr * update` with a float16 or bfloat16 update raised TypeError on TensorFlow;
    # Adam on each dtype bitwise the plain optimizer (`_check`; every optimizer on every
    # dtype: the slow test above)
    result = workers(WORKER, [backend], args=[",".join(FAST_CELLS)])[backend]
    assert result["backend"] == keras.backend.backend() == backend
    adam = {f"Adam/{dtype}" for dtype in ("float16", "bfloat16", "float32", "float64")}
    extra = {"ExtraDecay/float32", "ExtraDecay/scheduled"}
    assert set(result["cases"]) == adam | set(FAST_CELLS[1:]) | extra
    _check(result)
    if result["backend"] == "tensorflow":  # (Keras trains both; they crashed under hs.scheduled)
        assert "unsupported" not in (
            result["cases"]["Ftrl/float64"],
            result["cases"]["RMSprop/float64"],
        )
