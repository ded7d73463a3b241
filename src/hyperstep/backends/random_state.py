"""The global random state a training run draws from, copied and put back.

``capture()`` copies every global generator a Keras ``fit`` may draw from, and
``restore(state)`` puts each back, so code run in between (``hs.find_lr``) leaves a seeded
script's random numbers as they were:

- Python's ``random`` (``random.getstate``) and NumPy's global generator
  (``numpy.random.get_state``: Keras shuffles arrays with it on JAX and torch);
- Keras's global ``SeedGenerator`` (unseeded ``keras.random`` calls), removed again when
  it did not exist before;
- torch's CPU generator (``torch.get_rng_state``: dropout and the data loader draw from it)
  and, when CUDA is initialized, every CUDA device's;
- TensorFlow's: the generator of operation seeds a ``tf.random.set_seed`` seed starts (the
  seed of each new ``tf.data`` shuffle and random op comes from it) and the global
  ``tf.random.Generator`` when one exists.

A backend that was never imported has no state to copy. The private parts (Keras's global
state, TensorFlow's context) are reached through :mod:`hyperstep.backends.versions` and
skipped when they moved.
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from hyperstep.backends.internals import global_seed_generator
from hyperstep.backends.versions import reach

_KERAS_STATE = "keras.src.backend.common.global_state"
_TF_GENERATOR = "tensorflow.python.ops.stateful_random_ops.global_generator"
_ABSENT: Any = object()


@dataclass
class RandomState:
    """A copy of the global random state (see :func:`capture`)."""

    python: Any
    numpy: Any
    keras: Any = _ABSENT  # the seed generator and its state, or _ABSENT when there was none
    torch: Any = None
    torch_cuda: Any = None
    tf_seeds: Any = _ABSENT  # a random.Random's state, None (no global seed), or _ABSENT
    tf_generator: Any = None


def capture() -> RandomState:
    """Copy the global random state (see the module's docstring)."""
    state = RandomState(python=random.getstate(), numpy=np.random.get_state())
    generator = global_seed_generator()
    if generator is not None:
        state.keras = (generator, np.array(generator.state.numpy(), copy=True))
    elif reach(f"{_KERAS_STATE}.get_global_attribute", fallback=None) is not None:
        state.keras = None
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        state.torch = torch.get_rng_state()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state.torch_cuda = torch.cuda.get_rng_state_all()
    if "tensorflow" in sys.modules:
        context = _tf_context()
        if context is not None:
            seeds = getattr(context, "_rng", _ABSENT)
            state.tf_seeds = seeds.getstate() if isinstance(seeds, random.Random) else seeds
        module = reach(_TF_GENERATOR, fallback=None)
        found = None if module is None else getattr(module, "global_generator", None)
        if found is not None:
            state.tf_generator = (found, found.state.numpy().copy())
    return state


def restore(state: RandomState) -> None:
    """Put back the global random state :func:`capture` copied."""
    random.setstate(state.python)
    np.random.set_state(state.numpy)
    if state.keras is not _ABSENT:
        generator = None
        if state.keras is not None:
            generator, value = state.keras
            generator.state.assign(value)
        setter = reach(f"{_KERAS_STATE}.set_global_attribute", fallback=None)
        if setter is not None:
            setter("global_seed_generator", generator)
    if state.torch is not None:
        torch = sys.modules["torch"]
        torch.set_rng_state(state.torch)
        if state.torch_cuda is not None:
            torch.cuda.set_rng_state_all(state.torch_cuda)
    if state.tf_seeds is not _ABSENT:
        context = _tf_context()
        if context is not None:
            if isinstance(state.tf_seeds, tuple):
                seeds = getattr(context, "_rng", None)
                if isinstance(seeds, random.Random):
                    seeds.setstate(state.tf_seeds)
                else:
                    fresh = random.Random()
                    fresh.setstate(state.tf_seeds)
                    context._rng = fresh
            else:
                context._rng = state.tf_seeds
    if state.tf_generator is not None:
        generator, value = state.tf_generator
        generator.state.assign(value)


def _tf_context() -> Any:
    return reach("tensorflow.python.eager.context.context()._rng", fallback=None)
