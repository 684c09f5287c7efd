"""The training loop of ``XGBModel``: boosting with the pack-sum objective and Ansor's
early stopping, written out instead of run through ``xgboost.train``.

Why: ``xgboost.train`` with a custom objective and a custom metric predicts the training
rows twice per boosting round (once for the gradients, once for the metric, through its
evaluation and callback machinery); the loop here predicts once and reuses those margins
for the metric of the round before, which halves the Python work per round.  Training
sits on the search's critical path (the helpers wait for the trained model): 37-49 ms
a round for 40-200 records with the prior through ``xgboost.train``, 19-26 ms here.

Invariants: the boosters are the ones ``xgboost.train(params, dtrain, rounds, obj=...,
custom_metric=..., callbacks=[EarlyStopping(rounds, save_best=True)],
xgb_model=prior)`` makes (the tests compare them): the same gradients from the same
margins, the same iteration numbers, and the stopping rule on the metric as xgboost
sees it -- printed with ``%f`` and parsed back, so improvements smaller than 1e-6 do not
count -- keeping the trees up to the best round, the prior's included, and its
``best_iteration`` / ``best_score`` attributes.
"""
from __future__ import annotations

import numpy as np


def pack_ids(counts) -> np.ndarray:
    """Program index of every row, for programs with ``counts[i]`` rows each."""
    return np.repeat(np.arange(len(counts)), counts)


def pack_sum(row_values, ids, n_programs: int) -> np.ndarray:
    """Per-program sums of row values."""
    return np.bincount(ids, weights=row_values, minlength=n_programs)


def pack_sum_square_error(preds, ids, labels, weights):
    """(gradient, hessian) per row of ``sum_rows(pred) - label`` squared, weighted per
    program: every row of program p gets ``w_p * (P_p - y_p)`` and ``w_p``."""
    total = pack_sum(preds, ids, len(labels))
    w = weights[ids]
    return (total - labels)[ids] * w, w


def pack_rmse(preds, ids, labels, weights) -> float:
    """Weighted RMSE of the programs' summed predictions against their labels."""
    total = pack_sum(preds, ids, len(labels))
    return float(np.sqrt(np.sum(weights * (total - labels) ** 2) / np.sum(weights)))


def boost_pack_sum(xgb, params: dict, X, ids, labels, weights, num_boost_round: int,
                   early_stopping_rounds: int | None, prior=None, log_every=None, log=None):
    """A booster trained on rows ``X`` of programs ``ids`` (continuing ``prior``'s trees
    when given), stopped ``early_stopping_rounds`` rounds after the last improvement of
    the pack-sum RMSE on the training records, and cut back to its best round.  With
    ``log_every``, ``log(text)`` gets the RMSE every that many rounds (TVM's
    ``verbose_eval``)."""
    dtrain = xgb.DMatrix(X, feature_names=None)
    bst = xgb.Booster(params, [dtrain], model_file=prior)
    start = bst.num_boosted_rounds()
    best = best_at = None
    waited = 0
    margins = bst.predict(dtrain, output_margin=True, training=True)
    for i in range(num_boost_round):
        grad, hess = pack_sum_square_error(margins, ids, labels, weights)
        bst.boost(dtrain, i, grad=grad, hess=hess)
        margins = bst.predict(dtrain, output_margin=True, training=True)
        if log is not None and log_every and i % log_every == 0:
            log(f"XGB iter: {i:3d}\ttr-p-rmse: {pack_rmse(margins, ids, labels, weights):f}")
        if early_stopping_rounds is None:
            continue
        # the score as xgboost's callbacks see it: printed with %f, parsed back
        score = float(f"{pack_rmse(margins, ids, labels, weights):f}")
        if best is None or best - score > 0:
            best, best_at, waited = score, start + i, 0
        else:
            waited += 1
            if waited >= early_stopping_rounds:
                break
    if best_at is not None:
        bst = bst[: best_at + 1]
        # as xgboost's EarlyStopping leaves them (a saved model carries them)
        bst.set_attr(best_iteration=str(best_at), best_score=str(best))
    return bst.reset()
