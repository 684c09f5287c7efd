"""Prediction with an xgboost tree ensemble from its JSON model, in numpy alone.

Why: the shipped prior scores the first round of every task, and importing xgboost (with
scikit-learn behind it) costs about 3 s of search time.  A 64-trial run measures one
round and never trains, so with this reader it never imports xgboost at all.

``TreeEnsemble.from_json(raw)`` reads the ``learner.gradient_booster.model.trees`` of an
xgboost JSON model (gbtree, numerical splits); ``predict(X)`` returns, per row, the base
score plus the leaf value of every tree, exactly as ``Booster.inplace_predict`` does for
a squared-error objective (a test compares the two).

Invariants: a row goes left when ``x < split_condition`` (float32 comparison, as
xgboost's), and a missing value (NaN) follows ``default_left``; a leaf holds its value in
``split_conditions``; a model this reader cannot express (categorical splits, several
targets or parallel trees, other boosters or objectives) raises CostModelError.
"""
from __future__ import annotations

import json

import numpy as np

from .base import CostModelError

__all__ = ["TreeEnsemble"]


def _base_score(text) -> float:
    # xgboost 2/3 writes "[0E0]", older versions "5E-1"
    s = str(text).strip().strip("[]")
    return float(s.split(",")[0]) if s else 0.0


class TreeEnsemble:
    """All trees padded into ``(n_trees, max_nodes)`` arrays, walked level by level."""

    def __init__(self, left, right, feature, threshold, default_left, depth: int,
                 base_score: float):
        self.left, self.right = left, right
        self.feature, self.threshold, self.default_left = feature, threshold, default_left
        self.depth, self.base_score = depth, base_score

    @classmethod
    def from_json(cls, raw) -> TreeEnsemble:
        try:
            learner = json.loads(raw)["learner"]
            booster = learner["gradient_booster"]
            objective = learner["objective"]["name"]
            trees = booster["model"]["trees"]
            param = learner["learner_model_param"]
        except (KeyError, TypeError, ValueError) as err:
            raise CostModelError(f"TreeEnsemble: not an xgboost JSON model ({err})") from None
        if booster.get("name") != "gbtree" or objective != "reg:squarederror" or \
                int(param.get("num_target", 1)) > 1 or int(param.get("num_class", 0)) > 0:
            raise CostModelError(f"TreeEnsemble: only a single-target gbtree with squared "
                                 f"error is read, got {booster.get('name')}/{objective}")
        if not trees:
            raise CostModelError("TreeEnsemble: the model has no trees")
        if any(any(t.get("split_type", ())) for t in trees):
            raise CostModelError("TreeEnsemble: categorical splits are not supported")
        n = max(len(t["left_children"]) for t in trees)
        shape = (len(trees), n)
        left = np.full(shape, -1, np.int64)
        right = np.full(shape, -1, np.int64)
        feature = np.zeros(shape, np.int64)
        threshold = np.zeros(shape, np.float32)
        dleft = np.zeros(shape, bool)
        for k, t in enumerate(trees):
            m = len(t["left_children"])
            left[k, :m], right[k, :m] = t["left_children"], t["right_children"]
            feature[k, :m], threshold[k, :m] = t["split_indices"], t["split_conditions"]
            dleft[k, :m] = np.asarray(t["default_left"], bool)
        return cls(left, right, feature, threshold, dleft, _depth(left, right),
                   _base_score(param.get("base_score", 0)))

    def predict(self, X) -> np.ndarray:
        """Per-row output: base score + sum over trees of the row's leaf value."""
        X = np.ascontiguousarray(X, np.float32)
        n_rows, n_feat = X.shape
        n_trees, width = self.left.shape
        # flat indices: node k of tree t is t * width + k; a child index gets the offset
        off = (np.arange(n_trees, dtype=np.int64) * width)[:, None]
        left = np.where(self.left >= 0, self.left + off, -1).ravel()
        right = np.where(self.right >= 0, self.right + off, -1).ravel()
        feat, thr, dleft = self.feature.ravel(), self.threshold.ravel(), self.default_left.ravel()
        xs = X.ravel()
        row_base = np.arange(n_rows, dtype=np.int64) * n_feat
        node = np.broadcast_to(off, (n_trees, n_rows)).ravel().copy()
        row = np.tile(row_base, n_trees)
        for _ in range(self.depth):
            lft = left[node]
            x = xs[row + feat[node]]
            go_left = x < thr[node]
            nan = np.isnan(x)
            if nan.any():
                go_left = np.where(nan, dleft[node], go_left)
            node = np.where(lft < 0, node, np.where(go_left, lft, right[node]))
        leaf = thr[node].reshape(n_trees, n_rows)
        return leaf.astype(np.float64).sum(axis=0) + self.base_score


def _depth(left, right) -> int:
    """Edges on the longest root-to-leaf path of any tree."""
    depth = 0
    for lt, rt in zip(left, right):
        level, frontier = 0, [0]
        while frontier:
            nxt = [c for n in frontier for c in (lt[n], rt[n]) if c >= 0]
            if nxt:
                level += 1
            frontier = nxt
        depth = max(depth, level)
    return depth
