"""Private APIs of Keras and TensorFlow that the optimizers and the doctor use.

Each is reached through :func:`hyperstep.backends.versions.reach` (one version check for
every private API); ``tests/backends/test_internals.py`` pins each behaviour, so an upgrade
that moves one fails one named test.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Iterator
from typing import Any

from hyperstep.backends.versions import reach
from hyperstep.errors import HyperstepError, InvalidArgumentError, NotRegisteredError


def unpickle_optimizer(cls: type, args: tuple[Any, ...]) -> Any:
    """Load an optimizer pickled by Keras's ``KerasSaveable.__reduce__`` (``args``).

    ``args`` holds its in-memory ``.keras`` file; loaded through ``cls._unpickle_model``
    (Keras 3: a classmethod)."""
    unpickle = reach("keras.Optimizer._unpickle_model", lambda: cls._unpickle_model)  # type: ignore[attr-defined]
    return unpickle(*args)


def gradient_function(op: Any) -> Any:
    """TensorFlow's registered gradient function of graph ``op``, ``None`` if it has none.

    From ``tensorflow.python.framework.ops`` (private; the doctor's graph analysis)."""
    return reach("tensorflow.python.framework.ops.get_gradient_function")(op)


def global_seed_generator() -> Any:
    """Keras's global seed generator, or ``None``.

    From ``keras.src.backend.common.global_state`` (private;
    :mod:`hyperstep.backends.random_state` copies and puts back its state)."""
    get = reach("keras.src.backend.common.global_state.get_global_attribute", fallback=None)
    return None if get is None else get("global_seed_generator")


def symbolic_build(model: Any, data_batch: Any) -> None:
    """Build ``model``, its compiled loss and metrics and its optimizer from one batch, as
    ``fit`` does before training (``keras.Model._symbolic_build``, private; on TensorFlow
    ``fit`` defers it to the first trace, where an optimizer built too late is missed)."""
    build = reach("keras.Model._symbolic_build", lambda: model._symbolic_build)
    build(data_batch=data_batch)


def first_fit_builds(model: Any) -> list[tuple[Any, bool]]:
    """The compiled loss and metrics of ``model`` with whether they are built
    (``keras.Model._compile_loss``/``_compile_metrics``, private), for
    :func:`build_again_in_fit`."""
    found = reach(
        "keras.Model._compile_loss/_compile_metrics",
        lambda: [getattr(model, "_compile_loss"), getattr(model, "_compile_metrics")],  # noqa: B009
    )
    return [(part, bool(part.built)) for part in found if part is not None]


def build_again_in_fit(builds: list[tuple[Any, bool]]) -> None:
    """Mark unbuilt again what :func:`first_fit_builds` found unbuilt, on JAX and torch.

    There ``fit`` builds them from a first batch it draws from the data before training
    (Keras's ``_symbolic_build``): a shuffled array draws one more permutation from NumPy's
    (JAX) or torch's (torch) generator. A ``fit`` after ``hs.find_lr`` then draws what it
    would have drawn without it. TensorFlow's ``fit`` builds them in its first trace and
    draws nothing more: left built."""
    import keras

    if keras.backend.backend() not in ("jax", "torch"):
        return
    for part, built in builds:
        if not built:
            part.built = False


def loading_file() -> str | None:
    """The file Keras's ``load_model`` is loading in this thread, or None: the ``filepath``
    of the running ``keras.src.saving.saving_lib.load_model`` (private), read from its frame
    (a ``from_config`` is not told the file)."""
    load = reach("keras.src.saving.saving_lib.load_model", fallback=None)
    frame = inspect.currentframe()
    try:
        while frame is not None and load is not None:
            if frame.f_code is load.__code__:
                return os.fspath(frame.f_locals["filepath"])
            frame = frame.f_back
    finally:
        del frame
    return None


@contextlib.contextmanager
def naming_loaded_file() -> Iterator[None]:
    """Around a ``from_config``: a hyperstep error raised while Keras loads a file (a damaged
    number in its config) becomes one line naming the file and the error's first line. Keras
    wraps the error of a nested object in a TypeError of many lines; ours is in its chain."""
    try:
        yield
    except Exception as error:
        found: BaseException | None = error
        while found is not None and not isinstance(found, HyperstepError):
            found = found.__cause__ or found.__context__
        path = loading_file() if found is not None else None
        if found is None or path is None:
            raise
        if getattr(found, "path", None) == path or isinstance(found, NotRegisteredError):
            raise found from None  # named already by a nested object, or not damage
        named = InvalidArgumentError(f"{path} is damaged: {str(found).splitlines()[0]}")
        named.path = path  # type: ignore[attr-defined]
        raise named from None


def wrap_methods(cls: Any, *wrappers: Any) -> None:
    """Put each of ``wrappers`` on ``cls`` in place of the method of its name, which it
    keeps as ``__wrapped__`` (Keras's own, for tests and debugging) with its docstring; a
    method wrapped already stays (Keras's classes are wrapped once)."""
    for wrapper in wrappers:
        wrapped = getattr(cls, wrapper.__name__)
        if not getattr(wrapped, "_hyperstep", False):
            wrapper.__doc__ = wrapped.__doc__
            wrapper.__wrapped__ = wrapped
            wrapper._hyperstep = True
            setattr(cls, wrapper.__name__, wrapper)
