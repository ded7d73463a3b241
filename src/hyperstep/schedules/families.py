"""Schedule families (PLACEHOLDER: being written; see issue 2)."""

from hyperstep.schedules.base import Schedule


class _Todo(Schedule):
    def __init__(self, *args: object, **kwargs: object) -> None:
        raise NotImplementedError("being written")


Linear = Exponential = InverseTime = Polynomial = Cosine = CosineRestarts = _Todo
Piecewise = Cyclic = OneCycle = _Todo
linear = exponential = inverse_time = polynomial = cosine = cosine_restarts = _Todo
piecewise = cyclic = one_cycle = _Todo
