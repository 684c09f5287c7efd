"""Cost models that score States for the search (higher score = predicted faster).

``RandomModel`` gives uniform random scores from its own seeded generator; it is the
baseline the learned model is compared against.  Every model has the same interface:
``update(inputs, results)`` after measurements and ``predict(task, states)``.
"""
from __future__ import annotations

import random


class CostModel:
    def update(self, inputs, results) -> None:
        """Learn from measured (MeasureInput, MeasureResult) pairs."""

    def predict(self, task, states) -> list:
        raise NotImplementedError


class RandomModel(CostModel):
    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)

    def predict(self, task, states) -> list:
        return [self.rng.random() for _ in states]
