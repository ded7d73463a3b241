"""The backend room's interface under its former name (see :mod:`hyperstep.backends`)."""

from hyperstep.backends import (
    after,
    backend_name,
    check_backend,
    in_stateless_scope,
    integer_dtype,
    native_variable,
    require_tensorflow,
    unmapped_in_jit,
)

__all__ = [
    "after",
    "backend_name",
    "check_backend",
    "in_stateless_scope",
    "integer_dtype",
    "native_variable",
    "require_tensorflow",
    "unmapped_in_jit",
]
