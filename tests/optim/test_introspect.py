"""The units of hyperstep.optim._introspect: which constructor arguments of Keras's
optimizers are numeric hyperparameters (against their documented signatures), and the refusal
wording of ``check_names``."""

import keras
import pytest

from hyperstep.errors import InvalidArgumentError
from hyperstep.optim import _introspect

K = keras.optimizers
BASE = ["weight_decay", "clipnorm", "clipvalue", "global_clipnorm", "ema_momentum",
        "loss_scale_factor"]  # fmt: skip


@pytest.mark.parametrize(
    ("cls", "own"),
    [
        (K.SGD, ["momentum"]),  # nesterov is a bool
        (K.Adam, ["beta_1", "beta_2", "epsilon"]),  # amsgrad is a bool
        (K.AdamW, ["beta_1", "beta_2", "epsilon"]),  # its weight_decay is a base one
        (K.RMSprop, ["rho", "momentum", "epsilon"]),  # centered is a bool
        (K.Adagrad, ["epsilon"]),  # initial_accumulator_value is structural
    ],
)
def test_numeric_names_are_the_learning_rate_the_own_numbers_then_the_base_ones(cls, own):
    assert _introspect.numeric_names(cls) == ["learning_rate", *own, *BASE]


def test_constructor_arguments_collect_the_bases_defaults() -> None:
    found = _introspect.constructor_arguments(K.SGD)
    assert found["momentum"] == 0.0 and found["nesterov"] is False
    assert found["gradient_accumulation_steps"] is None  # BaseOptimizer's
    assert "self" not in found and "kwargs" not in found


def test_check_names_words_each_kind_of_refusal() -> None:
    _introspect.check_names(K.Adam, {"beta_1": 0.8, "clipnorm": 1.0})  # accepted
    with pytest.raises(InvalidArgumentError) as caught:
        _introspect.check_names(K.Adam, {"amsgrad": True}, where="hs.StepOptimizer")
    text = str(caught.value)
    assert text.startswith("`hs.StepOptimizer(Adam(), amsgrad=...)`: `amsgrad` is not a numeric")
    assert "(it is a bool" in text and text.endswith("Received: amsgrad=True")
    assert f"Valid: {', '.join(_introspect.numeric_names(K.Adam))}." in text
    with pytest.raises(InvalidArgumentError, match=r"SGD has no hyperparameter 'zzz'\. Valid"):
        _introspect.check_names(K.SGD, {"zzz": 1})  # no close name: no suggestion
    with pytest.raises(InvalidArgumentError, match=r"'momentun'\. Did you mean 'momentum'\?"):
        _introspect.check_names(K.SGD, {"momentun": 1})
    with pytest.raises(InvalidArgumentError, match=r"cannot be scheduled: it only initializes"):
        _introspect.check_names(K.Adagrad, {"initial_accumulator_value": 0.2})
