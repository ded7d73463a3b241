"""hyperstep.control: hyperparameters, their controllers and the callbacks around them.

Importing the room makes every ``model.fit`` tell hyperstep's clocks its epochs, once
(:mod:`hyperstep.control.epochs`); constructing an object never patches Keras.
"""

from hyperstep.control import epochs  # noqa: F401  (installs the fit hook at import)
