"""One problem at one seed: the range test, and a short training at any learning rate from
the same initial weights and in the same order (``benchmarks/lr_find_quality.py``)."""

from __future__ import annotations

from typing import Any

import keras
import numpy as np
from _lr_problems import Problem, loss_function

import hyperstep as hs

BATCH = 32


class Trainer:
    """A compiled model whose weights and optimizer slots are put back before each run."""

    def __init__(self, problem: Problem, seed: int, epochs: int) -> None:
        keras.utils.set_random_seed(seed)
        self.problem, self.seed = problem, seed
        self.model = problem.make()
        self.model.compile(optimizer=problem.optimizer(), loss=loss_function(problem.loss))
        self.model.optimizer.build(self.model.trainable_variables)
        self.variables = [*self.model.variables, *self.model.optimizer.variables]
        self.initial = [np.array(v.numpy(), copy=True) for v in self.variables]
        size = len(problem.x)
        rng = np.random.default_rng(seed)
        order = np.concatenate([rng.permutation(size) for _ in range(epochs)])
        order = order[: len(order) - len(order) % BATCH]
        self.x, self.y = problem.x[order], problem.y[order]
        self.loss = loss_function(problem.loss)

    def find_lr(self, **options: Any) -> hs.LRFinding:
        """The range test from the initial weights (NumPy's generator seeded by the seed)."""
        np.random.seed(self.seed)
        return hs.find_lr(self.model, self.problem.x, self.problem.y, verbose=0, **options)

    def train(self, learning_rate: float) -> float:
        """The training loss (the whole data, no dropout) after the short training."""
        for variable, value in zip(self.variables, self.initial, strict=True):
            variable.assign(value)
        self.model.optimizer.learning_rate.assign(learning_rate)
        self.model.fit(self.x, self.y, batch_size=BATCH, shuffle=False, verbose=0)
        predictions = self.model.predict(self.problem.x, batch_size=1024, verbose=0)
        loss = float(self.loss(self.problem.y, predictions))
        return loss if np.isfinite(loss) else np.inf
