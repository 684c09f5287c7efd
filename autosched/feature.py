"""TVM's ``auto_scheduler.feature`` API over this package's per-store features.

Role: offline analysis and cost-model experiments written against TVM --
``get_per_store_features_from_file(log, max_lines)``,
``get_per_store_features_from_measure_pairs(inputs, results)``,
``get_per_store_features_from_states(states, task)`` and
``get_per_store_feature_names()`` -- run unchanged on this package's features
(``autosched.features``: the same groups as Ansor's, ``DEFAULT_FEATURE_VEC_LEN``
columns with 5 buffers, log-scaled as the cost model sees them).

Invariants, as TVM's:
- features come as a 1-D object array with one float32 matrix (rows = buffer stores)
  per state; a state that cannot be featurized, or one of the first
  ``skip_first_n_feature_extraction``, gets one row of zeros;
- the normalized throughput of a record is ``best mean cost of its task / its mean
  cost``, a task being a (workload key, target) pair numbered in order of appearance
  (``task_ids``); one deviation: a failed measurement gets 0 (TVM divides by its 1e10
  placeholder cost, which gives 1.0 when every record of a task failed);
- measure pairs of a workload not registered in this process are left out (TVM's
  behaviour; a warning counts them); a log's records must all be replayable as TVM's
  file reader requires, so an unregistered workload raises its WorkloadError;
- ``max_n_bufs`` keeps the first buffers of each row (the output, then reads by size);
  more than the 5 extracted raises ValueError.
"""
from __future__ import annotations

import warnings

import numpy as np

from .errors import InvalidStepError, WorkloadError
from .features.extract import (
    BUFFER_FIELDS,
    FEATURE_NAMES,
    N_BUFFERS,
    FeatureConfig,
    FeatureError,
    FeatureExtractor,
)
from .measure_record import LoggedMeasureInput, RecordReader

__all__ = ["DEFAULT_MAX_N_BUFS", "DEFAULT_FEATURE_VEC_LEN", "get_per_store_feature_names",
           "get_per_store_features_from_states", "get_per_store_features_from_measure_pairs",
           "get_per_store_features_from_file"]

DEFAULT_MAX_N_BUFS = N_BUFFERS
DEFAULT_FEATURE_VEC_LEN = len(FEATURE_NAMES)
_BUF0 = FEATURE_NAMES.index("buf0_" + BUFFER_FIELDS[0])
_BUF_END = _BUF0 + N_BUFFERS * len(BUFFER_FIELDS)


def _columns(max_n_bufs) -> np.ndarray | None:
    """Column indices kept for ``max_n_bufs`` buffers (None: all of them)."""
    n = DEFAULT_MAX_N_BUFS if max_n_bufs is None else max_n_bufs
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not \
            0 <= n <= N_BUFFERS:
        raise ValueError(f"max_n_bufs={max_n_bufs!r}: expected an integer from 0 to "
                         f"{N_BUFFERS} (the buffers these features describe per store)")
    if n == N_BUFFERS:
        return None
    cut = _BUF0 + int(n) * len(BUFFER_FIELDS)
    return np.r_[0:cut, _BUF_END:len(FEATURE_NAMES)]


def get_per_store_feature_names(max_n_bufs=None) -> list:
    """The name of every column of a feature row."""
    cols = _columns(max_n_bufs)
    return list(FEATURE_NAMES) if cols is None else [FEATURE_NAMES[c] for c in cols]


def _featurize(states, tasks, skip: int, cols) -> np.ndarray:
    """Object array of float32 matrices: ``states[i]`` of ``tasks[i]``."""
    n_cols = DEFAULT_FEATURE_VEC_LEN if cols is None else len(cols)
    out = np.empty(len(states), dtype=object)
    extractors: dict = {}
    for i, (st, task) in enumerate(zip(states, tasks)):
        rows = None
        if i >= skip:
            line = task.hardware_params.cache_line_bytes
            ex = extractors.get(line)
            if ex is None:
                ex = extractors[line] = FeatureExtractor(FeatureConfig(cache_line_bytes=line))
            try:
                rows = ex.featurize(st() if callable(st) else st)
            except (FeatureError, InvalidStepError, RecursionError):
                rows = None
        if rows is None:
            rows = np.zeros((1, n_cols), dtype=np.float32)
        else:       # the extractor's memoized rows are read-only: the caller gets a copy
            rows = rows[:, cols] if cols is not None else rows.copy()
        out[i] = rows
    return out


def get_per_store_features_from_states(states, task, max_n_bufs=None) -> np.ndarray:
    """The feature matrix of every State of ``task`` (see the module invariants)."""
    states = list(states)
    return _featurize(states, [task] * len(states), 0, _columns(max_n_bufs))


def get_per_store_features_from_measure_pairs(inputs, results,
                                              skip_first_n_feature_extraction: int = 0,
                                              max_n_bufs=None) -> tuple:
    """``(features, normalized_throughputs, task_ids)`` of measured pairs (from a run or
    from ``RecordReader.read_lines``); see the module invariants."""
    cols = _columns(max_n_bufs)
    inputs, results = list(inputs), list(results)
    if len(inputs) != len(results):
        raise ValueError(f"{len(inputs)} inputs but {len(results)} results; expected one "
                         "result per input")
    kept, dropped = _pairs_with_dags(inputs, results)
    if dropped:
        warnings.warn(f"get_per_store_features_from_measure_pairs: {dropped} of "
                      f"{len(inputs)} pairs left out (their workloads are not registered "
                      "in this process)", stacklevel=2)
    features = _featurize([_state_of(inp) for inp, _ in kept], [inp.task for inp, _ in kept],
                          skip_first_n_feature_extraction, cols)
    throughputs, ids = _throughputs(kept)
    return features, throughputs, ids


def get_per_store_features_from_file(filename, max_lines: int, max_n_bufs=None) -> tuple:
    """``(features, normalized_throughputs, task_ids)`` of the first ``max_lines``
    records of a log (all when ``max_lines <= 0``); every workload must be registered."""
    cols = _columns(max_n_bufs)
    inputs, results = RecordReader(filename).read_lines(max_lines if max_lines > 0 else None)
    for inp in inputs:
        inp.task.compute_dag      # noqa: B018 - an unregistered workload raises here
    pairs = list(zip(inputs, results))
    features = _featurize([_state_of(inp) for inp in inputs], [inp.task for inp in inputs], 0,
                          cols)
    throughputs, ids = _throughputs(pairs)
    return features, throughputs, ids


def _state_of(inp):
    """The state of ``inp``, or a callable replaying it (a logged input's steps are
    replayed only when its features are extracted, after the skipped ones)."""
    return (lambda: inp.state) if isinstance(inp, LoggedMeasureInput) else inp.state


def _pairs_with_dags(inputs, results) -> tuple:
    """The pairs whose task has (or can rebuild) its ComputeDAG, and how many have not."""
    kept, dropped = [], 0
    for inp, res in zip(inputs, results):
        try:
            inp.task.compute_dag      # noqa: B018 - a logged task rebuilds it here
        except WorkloadError:
            dropped += 1
            continue
        kept.append((inp, res))
    return kept, dropped


def _throughputs(pairs) -> tuple:
    """(normalized throughputs, task ids) of (input, result) pairs."""
    ids: dict = {}
    task_ids, costs = [], []
    for inp, res in pairs:
        key = (inp.task.workload_key, str(inp.task.target))
        task_ids.append(ids.setdefault(key, len(ids)))
        ok = res.error_no == 0 and len(res.costs) > 0
        costs.append(float(np.mean(res.costs)) if ok else None)
    best: dict = {}
    for t, c in zip(task_ids, costs):
        if c is not None and c > 0:
            best[t] = min(best.get(t, c), c)
    tp = [best[t] / c if c is not None and c > 0 else 0.0 for t, c in zip(task_ids, costs)]
    return np.array(tp, dtype=np.float64), np.array(task_ids, dtype=np.int64)
