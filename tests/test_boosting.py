"""cost_model.boosting: the hand-written training loop makes exactly the boosters that
``xgboost.train`` makes with the pack-sum objective, the pack-sum RMSE metric and
``EarlyStopping(save_best=True)``, continuing the prior or from scratch -- the loop run
through xgboost's C API (``xgb_native``), ``xgboost.train`` through the package."""
import json

import numpy as np
import pytest
import xgboost

from autosched.cost_model import XGBModel, XGBParams, pack_ids, pack_sum, xgb_native
from autosched.cost_model.boosting import boost_pack_sum, pack_rmse, pack_sum_square_error
from autosched.features.extract import FEATURE_NAMES


def _data(seed=0, programs=60):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 4, programs)
    X = rng.random((int(counts.sum()), len(FEATURE_NAMES))).astype(np.float32)
    ids = pack_ids(counts)
    labels = np.where(rng.random(programs) < 0.1, 0.0, rng.random(programs))
    return X, ids, labels, np.maximum(labels, 0.05)


def _by_xgboost_train(params, X, ids, labels, weights, rounds, stop, prior):
    xgb = xgboost
    dtrain = xgb.DMatrix(X)

    def objective(preds, _d):
        return pack_sum_square_error(preds, ids, labels, weights)

    def metric(preds, _d):
        return "p-rmse", pack_rmse(preds, ids, labels, weights)

    cbs = [] if stop is None else [xgb.callback.EarlyStopping(
        rounds=stop, metric_name="p-rmse", data_name="tr", save_best=True)]
    return xgb.train(params, dtrain, rounds, evals=[(dtrain, "tr")] if cbs else None,
                     obj=objective, custom_metric=metric if cbs else None, callbacks=cbs,
                     verbose_eval=False, xgb_model=prior)


@pytest.mark.parametrize("with_prior", [True, False])
@pytest.mark.parametrize("rounds,stop", [(10000, 10), (12, None)])
def test_boost_pack_sum_makes_xgboost_trains_booster(with_prior, rounds, stop):
    X, ids, labels, weights = _data()
    model = XGBModel(XGBParams(), seed=0)
    params = model._xgb_params()
    prior = model._prior_booster() if with_prior else None
    ours = boost_pack_sum(xgb_native, params, X, ids, labels, weights, rounds, stop, prior)
    theirs = _by_xgboost_train(params, X, ids, labels, weights, rounds, stop,
                               None if prior is None else prior.to_xgboost())
    assert isinstance(theirs, xgboost.Booster) and not isinstance(ours, xgboost.Booster)
    assert json.loads(ours.save_raw("json")) == json.loads(theirs.save_raw("json"))
    assert ours.num_boosted_rounds() == theirs.num_boosted_rounds()
    n_prior = prior.num_boosted_rounds() if prior is not None else 0
    if stop is None:
        assert ours.num_boosted_rounds() == n_prior + rounds
    else:   # stopped early, and cut back to the best round
        assert n_prior < ours.num_boosted_rounds() < n_prior + rounds
        assert int(ours.attr("best_iteration")) == ours.num_boosted_rounds() - 1


def test_pack_rmse_weights_programs_not_rows():
    ids = pack_ids([2, 1])
    preds = np.array([0.25, 0.25, 1.0])        # program sums 0.5 and 1.0
    labels, weights = np.array([1.0, 1.0]), np.array([3.0, 1.0])
    assert pack_sum(preds, ids, 2).tolist() == [0.5, 1.0]
    assert pack_rmse(preds, ids, labels, weights) == pytest.approx(np.sqrt(3 * 0.25 / 4))
