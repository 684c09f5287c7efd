"""The cost-model interface and the random baseline.

A model scores States for the search (higher = predicted faster): ``update(inputs,
results)`` after measurements, ``predict(task, states) -> list[float]``.
"""
from __future__ import annotations

import random

from ..errors import AutoSchedError

__all__ = ["CostModel", "CostModelError", "FeatureVersionError", "RandomModel"]


class CostModelError(AutoSchedError):
    """A cost model cannot do what was asked (e.g. save before training)."""


class FeatureVersionError(CostModelError):
    """A saved model was trained on features this build does not compute."""


class CostModel:
    def update(self, inputs, results) -> None:
        """Learn from measured (MeasureInput, MeasureResult) pairs."""

    def predict(self, task, states) -> list:
        raise NotImplementedError

    def snapshot(self):
        """A picklable, predict-only copy that scores as this model does now, for the
        search's helper processes; None (the default) keeps the search in-process."""
        return None

    def snapshot_modules(self) -> tuple:
        """Modules that unpickling the next ``snapshot()`` imports: the search imports
        them in its helpers ahead of time, while this process prepares the snapshot."""
        return ()

    def upcoming_modules(self) -> tuple:
        """Modules a later ``snapshot()`` may need (e.g. once the model has trained):
        the search imports them in its helpers when they are idle, after a round's
        islands, so the round that first needs them does not wait for the import."""
        return self.snapshot_modules()


class RandomModel(CostModel):
    def __init__(self, seed: int = 0):
        self.rng = random.Random(seed)

    def predict(self, task, states) -> list:
        return [self.rng.random() for _ in states]

    def snapshot(self) -> RandomModel:
        return RandomModel(self.rng.randrange(2 ** 31))
