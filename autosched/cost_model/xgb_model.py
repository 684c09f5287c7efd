"""Cost models that score States for the search (higher score = predicted faster).

Every model has the same interface: ``update(inputs, results)`` after measurements and
``predict(task, states) -> list[float]``.

- ``RandomModel``: uniform random scores from its own seeded generator (the baseline).
- ``XGBModel``: gradient-boosted trees over the per-store rows of ``autosched.features``
  with a pack-sum objective, as TVM's auto-scheduler XGBModel: a program's score is the
  sum of its rows' outputs, trained by squared error of that sum against the program's
  normalized throughput ``best cost of its workload / its cost`` (0 for failed
  measurements).  Gradient and hessian of a program's error go to each of its rows,
  scaled by the program's weight ``max(label, min_weight)``: like TVM the loss focuses on
  fast programs (the ones the search must rank right), and unlike TVM slow or failed
  programs keep a small weight, so the trees cannot score them arbitrarily high.

The prior (not in Ansor): before a task has records of its own, Ansor's model returns
random scores, so the whole first round of every task is a random sample.  Here the
model starts from a prior -- by default the booster shipped in ``pretrained.json``,
trained by ``scripts/pretrain_cost_model.py`` on tuning logs of other shapes of the same
operator families -- and each training continues boosting from it (the prior's trees stay,
new trees fit what the task's own records say differently).  ``prior=None`` gives
Ansor's behaviour.  A prior made with other features is not used (a warning says so).

xgboost is called through its C API (``xgb_native.py``): the tuner never imports the
xgboost package, whose import (scikit-learn and scipy with it) took 1.2 s.

Invariants: before ``num_warmup_sample`` records (and with no loaded booster) XGBModel
scores with the prior, or returns seeded random scores without one; ``update`` only
stores records, and the next use of the model (prediction, ``booster``, ``save``) trains
on all of them when there are at least ``retrain_ratio`` new ones since the last
training (from the prior when there is one, else from scratch), with Ansor's early
stopping; all randomness is seeded; ``save``/``load`` use one JSON document (xgboost's
JSON model plus a header with ``FEATURE_VERSION`` and the feature count) and ``load``
refuses a file made with other features.  No pickle anywhere.
"""
from __future__ import annotations

import json
import logging
import warnings
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from compiler.errors import CompilerError
from records import load_records

from ..checks import check_fields
from ..compute_dag import ComputeDAG
from ..errors import InvalidStepError, WorkloadError
from ..features.extract import (
    FEATURE_NAMES,
    FEATURE_VERSION,
    FeatureConfig,
    FeatureError,
    FeatureExtractor,
)
from ..record_target import record_target
from ..steps import serialize
from ..workload import workload_key_to_tensors
from . import xgb_native
from .base import CostModel, CostModelError, FeatureVersionError
from .boosting import boost_pack_sum, pack_ids, pack_sum
from .pretrained import PRETRAINED_PATH

MODEL_FORMAT = "autosched.XGBModel"
PRIOR_BUILTIN = "builtin"
_PRIORS: dict = {}     # path -> raw booster JSON (bytes), or None when unusable
_PRIOR_BOOSTERS: dict = {}  # (raw booster JSON, nthread) -> its Booster (read-only use)

_LOG = logging.getLogger("autosched.cost_model")


@dataclass(frozen=True)
class XGBParams:
    """Training configuration of ``XGBModel``: Ansor's tree parameters (depth 10, eta 0.2,
    gamma 0.001) and its stopping rule (at most ``num_boost_round`` rounds, stopped when
    the pack-sum RMSE on the training records has not improved for
    ``early_stopping_rounds``; ``None`` trains exactly ``num_boost_round`` rounds).
    ``retrain_ratio``: after the first training, retrain only once the new records are
    at least this share of the records of the last training (Ansor's adaptive training;
    0 retrains at every update)."""
    max_depth: int = 10
    eta: float = 0.2
    gamma: float = 0.001
    min_child_weight: float = 0.0
    max_bin: int = 64
    num_boost_round: int = 10000
    early_stopping_rounds: int | None = 50
    nthread: int = 1
    num_warmup_sample: int = 100
    prior_warmup_sample: int = 64     # with a prior: fine-tune from this many records
    retrain_ratio: float = 0.2
    min_weight: float = 0.05

    def __post_init__(self):
        check_fields(self, ("max_depth", "num_boost_round", "nthread"), 1, integer=True)
        check_fields(self, ("max_bin",), 2, integer=True)
        check_fields(self, ("num_warmup_sample", "prior_warmup_sample"), 0, integer=True)
        if self.early_stopping_rounds is not None:
            check_fields(self, ("early_stopping_rounds",), 1, integer=True)
        check_fields(self, ("eta",), 0, strict=True)
        check_fields(self, ("gamma", "min_child_weight", "min_weight", "retrain_ratio"), 0)


class _Record:
    __slots__ = ("key", "rows", "cost")

    def __init__(self, key, rows, cost):
        self.key, self.rows, self.cost = key, rows, cost   # cost None = failed


def _tvm_params(p: XGBParams, num_warmup_sample, adaptive_training,
                disable_early_stopping) -> XGBParams:
    """``p`` with TVM's XGBModel keyword arguments applied (None: left as they are)."""
    changes: dict = {}
    if num_warmup_sample is not None:
        changes["num_warmup_sample"] = num_warmup_sample
    if adaptive_training is not None and not adaptive_training:
        changes["retrain_ratio"] = 0.0
    if disable_early_stopping:
        changes["early_stopping_rounds"] = None
    return replace(p, **changes) if changes else p


class XGBModel(CostModel):
    """Learned cost model (see the module docstring)."""

    def __init__(self, params: XGBParams | None = None, seed: int | None = 0,
                 feature_config: FeatureConfig | None = None,
                 prior: str | None = PRIOR_BUILTIN, *, verbose_eval: int | None = None,
                 num_warmup_sample: int | None = None, model_file: str | None = None,
                 adaptive_training: bool | None = None,
                 disable_early_stopping: bool | None = None):
        """TVM's keyword arguments work as there: ``num_warmup_sample`` records before
        the first training; ``adaptive_training`` False retrains at every update (True,
        and the default here, only once enough new records arrived); with
        ``disable_early_stopping`` training runs every boosting round; ``model_file``
        is saved after every training; ``verbose_eval`` logs the pack-sum RMSE every
        that many rounds (logger ``autosched.cost_model``)."""
        self.params = _tvm_params(params or XGBParams(), num_warmup_sample,
                                  adaptive_training, disable_early_stopping)
        self.verbose_eval = None if verbose_eval is None else int(verbose_eval)
        self.model_file = model_file
        self.seed = 0 if seed is None else seed
        self.extractor = FeatureExtractor(feature_config)
        self._booster: Any = None     # an xgb_native.Booster once trained (or loaded)
        self._records: list = []
        self._rng = np.random.default_rng(seed)
        self._prior_raw = _prior_bytes(prior)   # an explicit prior path fails here
        self._prior: Any = None
        self.trained_on = 0            # records of the last training

    @property
    def has_prior(self) -> bool:
        return self._prior_raw is not None

    @property
    def booster(self):
        """The trained booster (an ``xgb_native.Booster``: ``to_xgboost()`` makes it an
        ``xgboost.Booster``; None before the warm-up).  Training is lazy: an
        ``update`` only stores records, and the model trains when it is next used, so
        the measurements of a run's last round are never trained on for nothing."""
        if self._records and self.num_records >= self.warmup and self._enough_new():
            self.train()
        return self._booster

    @booster.setter
    def booster(self, value) -> None:
        self._booster = value

    def _prior_booster(self):
        """The prior as a Booster, loaded once per process (a helper gets a fresh
        snapshot every round; loading the JSON takes milliseconds).  It is only read:
        predictions, and training copies it before boosting on."""
        if self._prior is None and self._prior_raw is not None:
            key = (self._prior_raw, self.params.nthread)
            prior = _PRIOR_BOOSTERS.get(key)
            if prior is None:
                prior = _PRIOR_BOOSTERS[key] = _booster_from_json(*key)
            self._prior = prior
        return self._prior

    @property
    def warmup(self) -> int:
        """Records needed before the model trains on them."""
        p = self.params
        return min(p.num_warmup_sample, p.prior_warmup_sample) if self.has_prior else \
            p.num_warmup_sample

    @property
    def num_records(self) -> int:
        return len(self._records)

    # ------------------------------------------------------------------ data
    def _featurize(self, states) -> list:
        """Feature matrices of ``states`` in one batch; None for a state that cannot be
        featurized (e.g. a sketch)."""
        try:
            return self.extractor.featurize_many(states)
        except FeatureError:
            out: list = []
            for st in states:
                try:
                    out.append(self.extractor.featurize(st))
                except FeatureError:
                    out.append(None)
            return out

    def _add(self, key, states, costs) -> None:
        """Featurize and store measured states (cost None for failures)."""
        for rows, cost in zip(self._featurize(states), costs):
            if rows is not None:
                self._records.append(_Record(key, rows, cost))

    def update(self, inputs, results) -> None:
        by_task: dict = {}
        for inp, res in zip(inputs, results):
            ok = res.error_no == 0 and res.costs
            key = (inp.task.workload_key, str(inp.task.target))
            by_task.setdefault(key, ([], []))
            by_task[key][0].append(inp.state)
            by_task[key][1].append(sum(res.costs) / len(res.costs) if ok else None)
        for key, (states, costs) in by_task.items():
            self._add(key, states, costs)
        # training waits for the next use of the model (the ``booster`` property)

    def _enough_new(self) -> bool:
        """Ansor's adaptive training: skip a retraining that would add few records."""
        new = self.num_records - self.trained_on
        return self._booster is None or new >= self.params.retrain_ratio * self.trained_on

    def update_from_file(self, log: str) -> int:
        """Pre-train from a tuning log; returns the number of records used.  Records of
        unknown workloads or whose steps no longer apply are skipped."""
        used = self.add_from_file(log)
        if used:
            self.train()   # an explicit pre-training request: no warm-up
        return used

    def add_from_file(self, log: str) -> int:
        """Add a log's records without training; returns how many were used."""
        dags: dict = {}
        by_task: dict = {}
        for rec in load_records(log):
            key = (rec.input.workload_key, rec.input.target)
            try:
                dag = dags.get(key[0])
                if dag is None:
                    dag = dags[key[0]] = ComputeDAG(workload_key_to_tensors(key[0]))
                state = dag.state_from_steps(serialize.decode_steps(rec))
                task_key = (key[0], str(record_target(key[1])))
            except (WorkloadError, InvalidStepError, CompilerError):
                continue
            r = rec.result
            ok = r.error_no == 0 and r.costs
            states, costs = by_task.setdefault(task_key, ([], []))
            states.append(state)
            costs.append(sum(r.costs) / len(r.costs) if ok else None)
        before = self.num_records
        for key, (states, costs) in by_task.items():
            self._add(key, states, costs)
        return self.num_records - before

    def dataset(self):
        """(rows X, program ids, labels, weights) of all records."""
        best: dict = {}
        for r in self._records:
            if r.cost is not None and r.cost > 0:
                best[r.key] = min(best.get(r.key, r.cost), r.cost)
        labels = np.array([best[r.key] / r.cost if r.cost is not None and r.cost > 0
                           else 0.0 for r in self._records])
        weights = np.maximum(labels, self.params.min_weight)
        X = np.concatenate([r.rows for r in self._records])
        ids = pack_ids([len(r.rows) for r in self._records])
        return X, ids, labels, weights

    # ------------------------------------------------------------------ training
    def _xgb_params(self) -> dict:
        p = self.params
        return {"max_depth": p.max_depth, "eta": p.eta, "gamma": p.gamma,
                "min_child_weight": p.min_child_weight, "max_bin": p.max_bin,
                "nthread": p.nthread,
                "seed": self.seed, "verbosity": 0, "tree_method": "hist",
                "base_score": 0.0, "disable_default_eval_metric": 1}

    def train(self) -> None:
        """Retrain on every record: from the prior when there is one, else from scratch."""
        if not self._records:
            raise CostModelError("XGBModel.train: no records to learn from")
        X, ids, labels, weights = self.dataset()
        p = self.params
        log = _LOG.info if self.verbose_eval else None
        self._booster = boost_pack_sum(xgb_native, self._xgb_params(), X, ids, labels, weights,
                                       p.num_boost_round, p.early_stopping_rounds,
                                       self._prior_booster(), self.verbose_eval, log)
        self.trained_on = self.num_records
        if self.model_file:
            self._write(self.model_file)

    # ------------------------------------------------------------------ prediction
    def predict(self, task, states) -> list:
        states = list(states)
        if not states:
            return []
        if self.booster is None and self._prior_raw is None:
            return self._rng.random(len(states)).tolist()
        feats = self._featurize(states)
        rows = [r for r in feats if r is not None]
        bad = [i for i, r in enumerate(feats) if r is None]
        scores = self.predict_rows(rows).tolist() if rows else []
        if bad:
            low = min(scores, default=0.0) - 1.0
            for i in bad:
                scores.insert(i, low)
        return scores

    def snapshot(self) -> XGBModel:
        """A predict-only copy (no records, so it never trains) holding the booster as
        trained now, or the prior while there is none; xgboost pickles a booster as
        its raw model."""
        booster = self.booster
        snap = XGBModel(self.params, self.seed, self.extractor.config, prior=None)
        snap._booster = booster
        snap._prior_raw = self._prior_raw if booster is None else None
        return snap

    def snapshot_modules(self) -> tuple:
        """Nothing: a snapshot's booster unpickles through xgboost's C API, which needs
        no module import (``xgb_native``)."""
        return ()

    def upcoming_modules(self) -> tuple:
        """Nothing, as ``snapshot_modules``."""
        return ()

    def predict_rows(self, rows) -> np.ndarray:
        """Program scores for a list of feature matrices (one per program)."""
        X = np.concatenate(rows)
        booster = self.booster
        preds = (booster if booster is not None else self._prior_booster()).inplace_predict(X)
        return pack_sum(preds, pack_ids([len(r) for r in rows]), len(rows))

    # ------------------------------------------------------------------ persistence
    def save(self, path: str) -> None:
        if self.booster is None:
            raise CostModelError("XGBModel.save: the model has not been trained yet")
        self._write(path)

    def _write(self, path: str) -> None:
        """Write the current booster (``save``'s format) without training first."""
        doc = {"format": MODEL_FORMAT, "feature_version": FEATURE_VERSION,
               "n_features": len(FEATURE_NAMES), "params": asdict(self.params),
               "seed": self.seed, "n_records": self.num_records,
               "booster": json.loads(bytes(self._booster.save_raw("json")))}
        with open(path, "w") as f:
            json.dump(doc, f)

    def load(self, path: str) -> None:
        """Use a saved model (``save``'s file) for predictions until the next training."""
        doc = read_model_file(path, "XGBModel.load")
        self.booster = _booster_from_json(json.dumps(doc["booster"]).encode(),
                                          self.params.nthread)


def read_model_file(path: str, what: str = "XGBModel.load") -> dict:
    """The validated document of a file written by ``XGBModel.save``; ``what`` names
    the caller in errors (a prior file is not loaded by ``load``)."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as err:
        raise CostModelError(f"{what}: cannot read {path}: {err}") from None
    if not isinstance(doc, dict) or doc.get("format") != MODEL_FORMAT:
        raise CostModelError(f"{what}: {path} is not an {MODEL_FORMAT} file")
    version, n = doc.get("feature_version"), doc.get("n_features")
    if version != FEATURE_VERSION or n != len(FEATURE_NAMES):
        raise FeatureVersionError(
            f"{what}: {path} was trained on feature version {version!r} "
            f"({n} features) but this build computes version {FEATURE_VERSION!r} "
            f"({len(FEATURE_NAMES)} features); retrain it, e.g. with "
            "XGBModel().update_from_file(<tuning log>)")
    return doc


def _booster_from_json(raw: bytes, nthread: int):
    booster = xgb_native.Booster()
    booster.load_model(bytearray(raw))
    booster.set_param({"nthread": nthread})
    return booster


def prior_from_text(text: str) -> str | None:
    """A command line's ``--prior`` (``builtin``, ``none`` or a path) as ``prior``."""
    return None if text == "none" else PRIOR_BUILTIN if text == "builtin" else text


def _prior_bytes(prior: str | None) -> bytes | None:
    """The prior's booster JSON, read once per process.  An explicit path must be a
    usable model file; the built-in one only warns (once) when it is missing or stale,
    and the model then starts without a prior."""
    if prior is None:
        return None
    path = PRETRAINED_PATH if prior == PRIOR_BUILTIN else str(prior)
    if path not in _PRIORS:
        try:
            doc = read_model_file(path, "XGBModel prior")
            _PRIORS[path] = json.dumps(doc["booster"]).encode()
        except CostModelError as err:
            if prior != PRIOR_BUILTIN:
                raise
            warnings.warn(f"XGBModel: the built-in prior is not used ({err}); the first "
                          "round of each task is a random sample", stacklevel=3)
            _PRIORS[path] = None
    return _PRIORS[path]
