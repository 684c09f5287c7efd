"""The next round's random sample, prepared ahead while a core idles.

Role: ``PreparedSample`` draws an island's initial population -- ``n`` random states
of the sketches, from its own seed -- and featurizes it into a feature extractor's
memo, one small piece per ``step()``; ``population()`` finishes what is left and
returns the sample.  The tuner runs the steps in LocalBuilder's tail (``idle.offer``),
a helper process after it has replied to its island job (``workers.after_reply``, on
an idle-priority thread); the next round takes the sample from there.

Why: neither the sample nor its features depend on the cost model, and together they
were ~0.1 s of each island's ~0.5 s round (matmul 256, measured), while the builds'
tail left a core idle for ~0.5 s a round.

Invariants: the sample is a function of (sketches, n, seed, num_cores, tries factor)
alone -- prepared ahead piece by piece or drawn at once by ``population()``, it is the
same list, so a search stays reproducible from its seed whatever the timing;
featurizing only fills the extractor's memo (a pure function of the state);
``matches`` tells whether a prepared sample is the one a round asks for.
"""
from __future__ import annotations

import random

from ..features.extract import FeatureError
from .evolution import sample_steps

__all__ = ["PreparedSample"]

FEATURIZE_CHUNK = 64        # states per featurizing step (~3 ms)


class PreparedSample:
    """An island's initial population, drawn and featurized a piece at a time."""

    def __init__(self, key, sketches, n: int, seed: int, num_cores: int,
                 tries_factor: int, extractor=None):
        self.key, self.n, self.seed = key, n, seed
        self.extractor = extractor
        self._states: list = []
        self._steps = self._run(sketches, num_cores, tries_factor)

    def matches(self, key, n: int, seed: int) -> bool:
        return (self.key, self.n, self.seed) == (key, n, seed)

    def _run(self, sketches, num_cores, tries_factor):
        yield from sample_steps(sketches, self.n, random.Random(self.seed), num_cores,
                                tries_factor, self._states)
        if self.extractor is not None:
            for lo in range(0, len(self._states), FEATURIZE_CHUNK):
                yield
                try:
                    self.extractor.featurize_many(self._states[lo:lo + FEATURIZE_CHUNK])
                except FeatureError:      # ahead of time only: the round will say why
                    pass

    def step(self) -> bool:
        """Do one piece of the work; whether any is left."""
        if self._steps is None:
            return False
        try:
            next(self._steps)
            return True
        except StopIteration:
            self._steps = None
            return False

    def population(self) -> list:
        """The sample, finishing (drawing, featurizing) whatever is left first."""
        while self.step():
            pass
        return list(self._states)
