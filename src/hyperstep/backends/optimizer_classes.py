"""Keras's optimizer classes as each backend instantiates them.

:func:`optimizer_class` is the class Keras makes for an optimizer class on this backend
(torch maps the built-in ones to its own subclasses); :func:`keras_base_name` names a
class's nearest ``keras.optimizers.<Name>`` base, the key of
:data:`hyperstep.backends.keras_forms.ROWS`.
"""

from __future__ import annotations

from hyperstep.backends.scopes import current_backend

__all__ = ["keras_base_name", "optimizer_class"]


def keras_base_name(cls: type) -> str | None:
    """The name of ``cls``'s nearest base class that is ``keras.optimizers.<name>`` (the key
    of :data:`hyperstep.backends.keras_forms.ROWS`), ``None`` if it has none."""
    import keras

    for klass in cls.__mro__:
        if getattr(keras.optimizers, klass.__name__, None) is klass:
            return klass.__name__
    return None


def optimizer_class(cls: type) -> type:
    """The class Keras instantiates for optimizer class ``cls`` on this backend.

    On torch, ``keras.optimizers.Adam()`` is an instance of Keras's torch class
    (``TorchOptimizer.__new__`` maps the nine classes of its ``OPTIMIZERS`` table: Adadelta,
    Adagrad, Adam, Adamax, AdamW, Lion, Nadam, RMSprop, SGD, to their ``torch_*`` classes,
    which add ``_parallel_update_step``); elsewhere, and for every other class, ``cls``.
    Asked of Keras itself (``cls.__new__(cls)``, no ``__init__``), not a copy of its table.

    Example:
        >>> import keras
        >>> optimizer_class(keras.optimizers.Adam) is type(keras.optimizers.Adam())
        True
    """
    if current_backend() != "torch":
        return cls
    return type(cls.__new__(cls))  # type: ignore[call-overload]
