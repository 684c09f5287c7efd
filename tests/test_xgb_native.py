"""cost_model.xgb_native: xgboost's C API through ctypes gives what the xgboost package
gives -- the same predictions, raw models, slices and attributes -- pickles as the
package's boosters do, and reports a failing call with xgboost's own message."""
import pickle

import numpy as np
import pytest
import xgboost

from autosched.cost_model import xgb_native as NATIVE
from autosched.cost_model.xgb_model import PRIOR_BUILTIN, _prior_bytes
from autosched.cost_model.xgb_native import XGBoostCallError, library_path
from autosched.features.extract import FEATURE_NAMES


def _rows(n=500, seed=0):
    X = np.random.default_rng(seed).standard_normal((n, len(FEATURE_NAMES)))
    X = (X * 10).astype(np.float32)
    X[::7, 3] = np.nan                       # missing values follow default_left
    return X


def _pair():
    raw = _prior_bytes(PRIOR_BUILTIN)
    theirs = xgboost.Booster()
    theirs.load_model(bytearray(raw))
    ours = NATIVE.Booster(model_file=raw)
    return ours, theirs


def test_the_library_is_the_installed_packages_own():
    assert library_path() == xgboost.core._LIB.path


def test_predictions_raw_models_and_rounds_equal_the_packages():
    ours, theirs = _pair()
    X = _rows()
    np.testing.assert_array_equal(ours.inplace_predict(X), theirs.inplace_predict(X))
    d_ours, d_theirs = NATIVE.DMatrix(X), xgboost.DMatrix(X)
    assert d_ours.num_row() == len(X)
    for margin in (False, True):
        np.testing.assert_array_equal(
            ours.predict(d_ours, output_margin=margin, training=True),
            theirs.predict(d_theirs, output_margin=margin, training=True))
    assert bytes(ours.save_raw("json")) == bytes(theirs.save_raw("json"))
    assert ours.num_boosted_rounds() == theirs.num_boosted_rounds() > 4


def test_slices_and_attributes_behave_as_the_packages():
    ours, theirs = _pair()
    X = _rows(50)
    np.testing.assert_array_equal(ours[:3].inplace_predict(X), theirs[:3].inplace_predict(X))
    assert ours[:3].num_boosted_rounds() == 3
    ours.set_attr(best_iteration="2", best_score="0.5")
    assert ours.attr("best_iteration") == "2" and ours.attr("missing") is None
    theirs.set_attr(best_iteration="2", best_score="0.5")
    assert bytes(ours.save_raw("json")) == bytes(theirs.save_raw("json"))


def test_a_booster_pickles_and_converts_to_an_xgboost_booster():
    ours, _ = _pair()
    X = _rows(80)
    again = pickle.loads(pickle.dumps(ours))
    assert type(again) is NATIVE.Booster
    np.testing.assert_array_equal(again.inplace_predict(X), ours.inplace_predict(X))
    real = ours.to_xgboost()
    assert isinstance(real, xgboost.Booster)
    np.testing.assert_array_equal(real.inplace_predict(X), ours.inplace_predict(X))


def test_a_failing_call_raises_with_xgboosts_message():
    ours, _ = _pair()
    with pytest.raises(XGBoostCallError, match=r"XGBoosterPredictFromDense: .*feature"):
        ours.inplace_predict(np.zeros((4, 3), dtype=np.float32))
    with pytest.raises(XGBoostCallError, match="XGBoosterLoadModelFromBuffer"):
        NATIVE.Booster(model_file=b"not a model")
    with pytest.raises(XGBoostCallError, match=r"DMatrix: expected a 2-D array, got "
                                               r"shape \(3,\)"):
        NATIVE.DMatrix(np.zeros(3, dtype=np.float32))
    with pytest.raises(XGBoostCallError, match="only slices of layers"):
        ours[2]
