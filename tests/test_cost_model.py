"""Cost models: the pack-sum objective, warm-up, learning a sensible ordering from a
synthetic log, training/prediction speed, save/load and the feature-version check."""
import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

import autosched as auto
from autosched import catalog  # noqa: F401  (registers built-in workloads)
from autosched import state as S
from autosched.cost_model import (
    PRETRAINED_PATH,
    CostModelError,
    FeatureVersionError,
    RandomModel,
    XGBModel,
    XGBParams,
    pack_ids,
    pack_sum,
    pack_sum_square_error,
    xgb_model,
)
from autosched.features import FEATURE_NAMES, FEATURE_VERSION
from autosched.measure import MeasureInput, MeasureResult
from autosched.steps import AnnotationStep, ReorderStep, SplitStep, apply_step, serialize
from records import MeasureInputRecord, MeasureResultRecord, Record, save_records

N = 64
TILES = [(fi, fj) for fi in (1, 2, 4, 8, 16) for fj in (4, 8, 16, 32)]


def _task():
    return auto.SearchTask(func="matmul", args=(N, N, N))


def _state(task, fi, fj, vec):
    """i.0, j.0, k, i.1, j.1 (parallel i.0, j.1 optionally vectorized)."""
    st = task.compute_dag.init_state()
    apply_step(st, SplitStep(2, 0, N, (fi,), True))
    apply_step(st, SplitStep(2, 2, N, (fj,), True))
    apply_step(st, ReorderStep(2, (0, 2, 4, 1, 3)))
    apply_step(st, AnnotationStep(2, 0, S.ANN_PARALLEL))
    if vec:
        apply_step(st, AnnotationStep(2, 4, S.ANN_VECTORIZE))
    return st


def _cost(fi, fj, vec):
    """Synthetic seconds: vectorized inner loops are 4x faster, tiles matter a little."""
    return 1e-3 * (1.0 + 0.05 * abs(np.log2(fi) - 2) + 0.03 * abs(np.log2(fj) - 3)) / \
        (4.0 if vec else 1.0)


def _result(cost, error_no=0):
    return MeasureResult([cost], error_no, "", 0.1, 1.0)


def _write_log(path, task, tiles):
    recs = []
    for fi, fj in tiles:
        for vec in (True, False):
            inp = MeasureInput(task, _state(task, fi, fj, vec))
            recs.append(serialize.encode_record(inp, _result(_cost(fi, fj, vec))))
    save_records(str(path), recs)
    return len(recs)


# ---------------------------------------------------------------------- objective
def test_pack_sum_square_error_is_the_gradient_of_the_program_loss():
    rng = np.random.default_rng(0)
    counts = [2, 1, 3]
    ids = pack_ids(counts)
    preds = rng.normal(size=len(ids))
    labels, weights = np.array([0.5, 1.0, 0.1]), np.array([0.5, 1.0, 0.2])

    def loss(p):
        return 0.5 * np.sum(weights * (pack_sum(p, ids, 3) - labels) ** 2)

    grad, hess = pack_sum_square_error(preds, ids, labels, weights)
    eps = 1e-6
    for k in range(len(preds)):
        d = np.zeros_like(preds)
        d[k] = eps
        assert grad[k] == pytest.approx((loss(preds + d) - loss(preds - d)) / (2 * eps),
                                        rel=1e-5)
    assert np.array_equal(hess, weights[ids])


# ---------------------------------------------------------------------- behaviour
def test_random_scores_until_warmup_then_trained():
    task = _task()
    states = [_state(task, fi, fj, v) for fi, fj in TILES for v in (True, False)]
    model = XGBModel(XGBParams(num_warmup_sample=30), seed=3, prior=None)
    before = model.predict(task, states[:5])
    assert before == XGBModel(XGBParams(num_warmup_sample=30), seed=3,
                              prior=None).predict(task, states[:5])
    assert before != XGBModel(XGBParams(num_warmup_sample=30), seed=4,
                              prior=None).predict(task, states[:5])
    inputs = [MeasureInput(task, s) for s in states[:20]]
    model.update(inputs, [_result(1e-3)] * 20)
    assert model.booster is None and model.num_records == 20
    inputs = [MeasureInput(task, s) for s in states[20:]]
    model.update(inputs, [_result(2e-3)] * 19 + [MeasureResult.failed(4, "crash")])
    assert model.booster is not None and model.num_records == 40
    _, _, labels, weights = model.dataset()
    assert labels.max() == 1.0 and labels[-1] == 0.0 and weights[-1] == 0.05
    assert np.allclose(labels[20:39], 0.5)


def test_vectorized_inner_loop_scores_better_after_training(tmp_path):
    task = _task()
    train, held_out = TILES[::2] + TILES[1::4], TILES[3::4]
    log = tmp_path / "synthetic.json"
    n = _write_log(log, task, train)
    model = XGBModel(XGBParams(num_warmup_sample=1000), seed=0)
    assert model.update_from_file(str(log)) == n
    assert model.booster is not None
    for fi, fj in held_out:
        vec, scalar = model.predict(task, [_state(task, fi, fj, True),
                                           _state(task, fi, fj, False)])
        assert vec > scalar, (fi, fj, vec, scalar)
    # and a random model does not know that
    assert isinstance(RandomModel(0).predict(task, [_state(task, 1, 4, True)])[0], float)


def test_update_from_file_skips_stale_and_unknown_records(tmp_path):
    task = _task()
    log = tmp_path / "mixed.json"
    n = _write_log(log, task, TILES[:3])
    good = Record.from_json(open(log).readline())
    stale = Record(MeasureInputRecord(good.input.workload_key, good.input.target,
                                      list(good.input.hardware_params),
                                      steps=[["SP", 2, 9, 64, [4], 1]]),
                   good.result)
    unknown = Record(MeasureInputRecord(json.dumps(["no_such_workload", 3]), good.input.target,
                                        list(good.input.hardware_params), steps=[]),
                     MeasureResultRecord([1e-3], 0, 0.1, 1.0))
    save_records(str(log), [stale, unknown])
    model = XGBModel(seed=0)
    assert model.update_from_file(str(log)) == n


# ---------------------------------------------------------------------- persistence
def _trained(tmp_path):
    task = _task()
    log = tmp_path / "train.json"
    _write_log(log, task, TILES)
    model = XGBModel(seed=0)
    model.update_from_file(str(log))
    return task, model


def test_save_load_round_trip(tmp_path):
    task, model = _trained(tmp_path)
    path = tmp_path / "model.json"
    model.save(str(path))
    doc = json.loads(path.read_text())
    assert doc["feature_version"] == FEATURE_VERSION
    assert doc["n_features"] == len(FEATURE_NAMES)
    loaded = XGBModel(XGBParams(num_warmup_sample=10 ** 6), seed=7)
    loaded.load(str(path))
    states = [_state(task, fi, fj, v) for fi, fj in TILES[:6] for v in (True, False)]
    assert np.allclose(loaded.predict(task, states), model.predict(task, states))


def _stale_model_file(tmp_path):
    """(path, document) of a saved model whose feature version is not this build's."""
    _, model = _trained(tmp_path)
    path = tmp_path / "stale.json"
    model.save(str(path))
    doc = json.loads(path.read_text())
    doc["feature_version"] = "0-0000000000"
    path.write_text(json.dumps(doc))
    return path, doc


def test_load_refuses_other_feature_versions(tmp_path):
    path, doc = _stale_model_file(tmp_path)
    with pytest.raises(FeatureVersionError, match="0-0000000000.*retrain"):
        XGBModel().load(str(path))
    doc["feature_version"], doc["n_features"] = FEATURE_VERSION, len(FEATURE_NAMES) - 1
    path.write_text(json.dumps(doc))
    with pytest.raises(FeatureVersionError, match=f"{len(FEATURE_NAMES) - 1} features"):
        XGBModel().load(str(path))
    path.write_text("{\"format\": \"something else\"}")
    with pytest.raises(CostModelError, match="not an autosched.XGBModel file"):
        XGBModel().load(str(path))


def test_save_before_training_is_an_error(tmp_path):
    with pytest.raises(CostModelError, match="not been trained"):
        XGBModel().save(str(tmp_path / "m.json"))


# ---------------------------------------------------------------------- prior
def test_prior_scores_before_warmup_and_training_continues_from_it(tmp_path):
    task, trained = _trained(tmp_path)
    path = tmp_path / "prior.json"
    trained.save(str(path))
    model = XGBModel(XGBParams(num_warmup_sample=1000, prior_warmup_sample=8,
                               num_boost_round=5, early_stopping_rounds=None), seed=0,
                     prior=str(path))
    assert model.has_prior and model.warmup == 8 and model.booster is None
    states = [_state(task, fi, fj, v) for fi, fj in TILES[3::4] for v in (True, False)]
    scores = model.predict(task, states)
    assert np.allclose(scores, trained.predict(task, states))
    assert all(v > s for v, s in zip(scores[::2], scores[1::2]))
    # fine-tuning keeps the prior's trees and adds the new rounds on top
    inputs = [MeasureInput(task, s) for s in states]
    model.update(inputs, [_result(_cost(1, 4, i % 2 == 0)) for i in range(len(inputs))])
    assert model.booster.num_boosted_rounds() == \
        trained.booster.num_boosted_rounds() + 5
    assert model.params.num_warmup_sample == 1000   # without a prior it would still wait


def test_an_explicit_prior_must_be_usable(tmp_path):
    path, _ = _stale_model_file(tmp_path)
    with pytest.raises(FeatureVersionError, match="0-0000000000"):
        XGBModel(prior=str(path))
    with pytest.raises(CostModelError, match="cannot read"):
        XGBModel(prior=str(tmp_path / "missing.json"))


def test_a_missing_builtin_prior_warns_once_and_scores_randomly(tmp_path, monkeypatch):
    monkeypatch.setattr(xgb_model, "PRETRAINED_PATH", str(tmp_path / "gone.json"))
    monkeypatch.setattr(xgb_model, "_PRIORS", {})
    task = _task()
    with pytest.warns(UserWarning, match="built-in prior is not used.*cannot read"):
        model = XGBModel(seed=1)
    assert not model.has_prior and model.warmup == model.params.num_warmup_sample
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        XGBModel(seed=1)                         # read once per process: no second warning
    st = [_state(task, 4, 8, True)]
    assert model.predict(task, st) == XGBModel(seed=1, prior=None).predict(task, st)


def test_the_shipped_prior_matches_the_features_of_this_build():
    """Changing the features makes the shipped prior stale: regenerate it with
    scripts/pretrain_cost_model.py fit (this test fails until then)."""
    doc = xgb_model.read_model_file(PRETRAINED_PATH)
    assert doc["feature_version"] == FEATURE_VERSION
    assert XGBModel().has_prior
    task = _task()
    vec, scalar = XGBModel().predict(task, [_state(task, 4, 16, True),
                                            _state(task, 4, 16, False)])
    assert vec > scalar


def test_the_first_round_follows_the_prior(tmp_path):
    """Before any record, the policy's picks are the prior's best, not a random sample."""
    task, trained = _trained(tmp_path)
    path = tmp_path / "prior.json"
    trained.save(str(path))
    params = auto.SearchParams(evolutionary_search_population=64, sample_init_min_population=64,
                               evolutionary_search_num_iters=1, eps_greedy=0.0)

    def picks(model):
        return auto.SketchPolicy(task, model, params, seed=0, verbose=0).pick_states(16)

    guided = trained.predict(task, picks(XGBModel(seed=0, prior=str(path))))
    unguided = trained.predict(task, picks(XGBModel(seed=0, prior=None)))
    population = trained.predict(task, auto.SketchPolicy(task, seed=0, verbose=0)
                                 .sample_initial_population(64))
    # the guided picks are the prior's top quarter of the same 64 random samples
    assert min(guided) >= sorted(population)[-len(guided)] - 1e-6
    assert np.mean(guided) > np.mean(unguided)


def test_prior_from_text_reads_the_command_line_spelling():
    assert xgb_model.prior_from_text("builtin") == xgb_model.PRIOR_BUILTIN
    assert xgb_model.prior_from_text("none") is None
    assert xgb_model.prior_from_text("my_model.json") == "my_model.json"


def test_training_stops_early_and_retrains_only_on_enough_new_records():
    task = _task()
    states = [_state(task, fi, fj, v) for fi, fj in TILES for v in (True, False)]
    results = [_result(_cost(fi, fj, v)) for fi, fj in TILES for v in (True, False)]
    model = XGBModel(XGBParams(num_warmup_sample=10, early_stopping_rounds=5,
                               retrain_ratio=0.5), seed=0, prior=None)
    inputs = [MeasureInput(task, s) for s in states]
    model.update(inputs[:20], results[:20])
    first = model.booster
    assert model.trained_on == 20
    # a perfect fit of 20 programs stops long before Ansor's 10000-round ceiling
    assert first.num_boosted_rounds() < 200
    model.update(inputs[20:29], results[20:29])        # 9 new < 0.5 x 20: no retraining
    assert model.booster is first and model.trained_on == 20
    model.update(inputs[29:30], results[29:30])        # 10 new: retrain on all 30
    assert model.booster is not first and model.trained_on == 30


# ---------------------------------------------------------------- lazy training
def test_scoring_and_training_never_import_the_xgboost_package():
    """The model calls xgboost through its C API (xgb_native): importing the package
    (with scikit-learn and scipy) took 1.2 s of a resumed run's first round."""
    code = ("import sys\nimport autosched as auto\nfrom autosched import catalog\n"
            "from autosched.cost_model import XGBModel, XGBParams\n"
            "from autosched.measure import MeasureInput, MeasureResult\n"
            "task = auto.SearchTask(func='matmul', args=(32, 32, 32))\n"
            "pol = auto.SketchPolicy(task, seed=0, verbose=0)\n"
            "states = pol.sample_initial_population(16)\n"
            "scores = pol.model.predict(task, states)\n"
            "assert len(set(scores)) > 1, scores\n"
            "m = XGBModel(XGBParams(prior_warmup_sample=8, num_boost_round=5), seed=0)\n"
            "m.update([MeasureInput(task, s) for s in states],\n"
            "         [MeasureResult([1e-3 * (1 + k)], 0, '', 0.1, 0.0)\n"
            "          for k in range(len(states))])\n"
            "trained = m.predict(task, states)\n"
            "assert m.booster is not None and len(set(trained)) > 1, trained\n"
            "print('xgboost' in sys.modules, 'sklearn' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False False"


def test_training_waits_for_the_next_use_of_the_model():
    task = _task()
    tiles = TILES[:12]
    states = [_state(task, fi, fj, k % 2 == 0) for k, (fi, fj) in enumerate(tiles)]
    model = XGBModel(XGBParams(prior_warmup_sample=8, num_boost_round=3,
                               early_stopping_rounds=None), seed=0)
    model.update([MeasureInput(task, s) for s in states],
                 [_result(_cost(fi, fj, k % 2 == 0)) for k, (fi, fj) in enumerate(tiles)])
    assert model._booster is None                # stored, not trained
    model.predict(task, states[:2])
    assert model._booster is not None and model.trained_on == 12


def test_tvms_keyword_arguments_do_what_they_say(tmp_path, caplog):
    task = _task()
    path = str(tmp_path / "model.json")
    m = XGBModel(prior=None, num_warmup_sample=4, adaptive_training=False,
                 disable_early_stopping=True, model_file=path, verbose_eval=5)
    assert m.params.num_warmup_sample == 4 and m.params.retrain_ratio == 0.0
    assert m.params.early_stopping_rounds is None
    m.params = XGBParams(num_boost_round=12, early_stopping_rounds=None,
                         num_warmup_sample=4, retrain_ratio=0.0)
    inputs = [MeasureInput(task, _state(task, fi, fj, True)) for fi, fj in TILES[:6]]
    with caplog.at_level("INFO", logger="autosched.cost_model"):
        m.update(inputs, [_result(_cost(fi, fj, True)) for fi, fj in TILES[:6]])
        assert m.booster is not None
    assert [r.message.split("\t")[0] for r in caplog.records] == \
        ["XGB iter:   0", "XGB iter:   5", "XGB iter:  10"]
    loaded = XGBModel(prior=None)
    loaded.load(path)                      # saved after the training
    np.testing.assert_allclose(loaded.predict(task, [inp.state for inp in inputs]),
                               m.predict(task, [inp.state for inp in inputs]), rtol=1e-6)
    assert XGBModel(adaptive_training=True).params.retrain_ratio == XGBParams().retrain_ratio
